# ngshare's image for its Helm chart (hub/k8s/values.yaml says how to install it): ngshare 0.6.0 from
# hub/ngshare/requirements.lock, with the SQLAlchemy 1.4 it needs (hub/ngshare/requirements.in says why),
# run as the chart's image runs it. Build from the repository's root:
#   docker build -f hub/k8s/ngshare.Dockerfile -t <registry>/tf-course-ngshare .
# Not built here (no registry, no cluster); its install steps are the Makefile's (.venv-ngshare), which
# make test runs on every change.
FROM python:3.11-slim-bookworm
WORKDIR /opt/ngshare
COPY requirements.lock course.lock
COPY hub/ngshare/requirements.lock hub/ngshare/requirements.lock
RUN python -m venv .venv \
 && awk '/^[^ ]/ { keep = /^uv==/ } keep' course.lock > uv.lock \
 && .venv/bin/python -m pip install --quiet --require-hashes --no-deps -r uv.lock \
 && .venv/bin/uv pip install --quiet --python .venv/bin/python --require-hashes --no-deps -r hub/ngshare/requirements.lock \
 && .venv/bin/uv pip check --quiet --python .venv/bin/python
USER 65535:65535
ENTRYPOINT ["/opt/ngshare/.venv/bin/python", "-m", "ngshare"]
