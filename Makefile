# The course's commands. Every target sets up .venv from requirements.lock when it is missing or stale.
#   make run    execute every notebook (ci profile), check release/, grade a demo class, build/report.html
#   make test   unit tests, nbval on every source notebook, release drift, grading of the solutions
#   make test-fast  the tests that need no TensorFlow, browser, cluster or kernel (under a minute)

PYTHON ?= python3.11
# GPU=1: the GPU environment, a venv of its own (.venv-gpu) from requirements-gpu.lock (TensorFlow's
# CUDA 12 wheels and onnxruntime-gpu instead of onnxruntime); make test-gpu sets it.
GPU    ?=
VENV   := $(if $(GPU),.venv-gpu,.venv)
LOCK   := $(if $(GPU),requirements-gpu.lock,requirements.lock)
BIN    := $(CURDIR)/$(VENV)/bin
STAMP  := $(VENV)/.installed
PROFILE ?= ci
# nbgrader runs `alembic` from PATH (when it makes a gradebook itself); papermill and nbval find the
# course kernel in the venv.
export PATH := $(BIN):$(PATH)
export PYTHONDONTWRITEBYTECODE := 1

# The class's JupyterHub on this machine (hub/), from hub/class.toml or HUB_SETTINGS; run as root: it
# makes a Unix user per student and starts each student's server as that user.
HUB_SETTINGS ?= hub/class.toml

.PHONY: hub run grading-sandbox test test-fast test-gpu gpu-runner release release-check lab student-bundle doctor lock conda-lock clean venv bench bench-training bench-lessons bench-hub system-packages docs

venv: $(STAMP)

# pip installs uv from the lock's own hash-pinned entry; uv installs the whole lock (hashes checked,
# bytecode compiled) in a third of pip's time. `pip install --require-hashes --no-deps -r requirements.lock`
# gives the same venv.
# The stamp goes first: an install that fails half-way leaves none, so the next make installs again.
$(STAMP): $(LOCK) pyproject.toml
	@rm -f $@
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	awk '/^[^ ]/ { keep = /^uv==/ } keep' $(LOCK) > $(VENV)/uv.lock
	$(BIN)/python -m pip install --quiet --require-hashes --no-deps -r $(VENV)/uv.lock
	$(BIN)/uv pip install --quiet --python $(BIN)/python --require-hashes --no-deps --compile-bytecode -r $(LOCK)
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation --config-settings editable_mode=compat -e .
	$(BIN)/python scripts/pip-check
	$(BIN)/python -c "from course import kernel; kernel.install()"
	$(BIN)/python -c "from autograder.nbgrader_setup import kernelspec; kernelspec.install()"
	@touch $@

# The ngshare service's environment (hub/ngshare/requirements.in says why it is one of its own), for
# a hub with exchange = "ngshare" and the hub tests.
NGSHARE_VENV := .venv-ngshare
NGSHARE_STAMP := $(NGSHARE_VENV)/.installed
$(NGSHARE_STAMP): hub/ngshare/requirements.lock $(STAMP)
	@rm -f $@
	@test -x $(NGSHARE_VENV)/bin/python || $(PYTHON) -m venv --without-pip $(NGSHARE_VENV)
	$(BIN)/uv pip install --quiet --python $(NGSHARE_VENV)/bin/python --require-hashes --no-deps -r hub/ngshare/requirements.lock
	$(BIN)/uv pip check --quiet --python $(NGSHARE_VENV)/bin/python
	@touch $@

hub: $(STAMP) $(NGSHARE_STAMP)
	@test -f $(HUB_SETTINGS) || { echo "no $(HUB_SETTINGS): copy hub/class.example.toml to it and fill it in" >&2; exit 2; }
	COURSE_HUB_SETTINGS=$(abspath $(HUB_SETTINGS)) $(BIN)/jupyterhub -f hub/jupyterhub_config.py

# Grading runs in a bubblewrap sandbox: installed first when missing (where that cannot be done, the
# demo classes, the course's own solutions, are graded without one, and the run says so).
run:
	@$(MAKE) --no-print-directory -j2 venv grading-sandbox
	$(BIN)/autograder course-run --profile $(PROFILE)

grading-sandbox:
	-@scripts/system-packages bubblewrap

# Debian packages the tests use (bubblewrap, chromium, postgresql), installed when missing.
system-packages:
	@scripts/system-packages

# The venv and the Debian packages install side by side (half a minute less on a fresh machine).
test:
	@$(MAKE) --no-print-directory -j2 venv system-packages
	@$(MAKE) --no-print-directory $(NGSHARE_STAMP)
	rm -rf build/prepared/$(PROFILE)
	$(BIN)/course prepare --profile $(PROFILE) --out build/prepared/$(PROFILE)
	$(BIN)/pytest tests build/prepared/$(PROFILE) --nbval-lax -p no:cacheprovider \
	    -n 3 --dist loadfile --no-loadscope-reorder --durations=15

# The fast lane for a contributor changing the packages: every test that needs no TensorFlow, browser,
# cluster or kernel (the `fast` mark, tests/conftest.py), in under a minute on 2 cores. `make test`
# runs them too, with everything else.
test-fast: $(STAMP)
	$(BIN)/pytest tests -m fast -p no:cacheprovider -n 2 --dist load -q

# On the self-hosted GPU runner: .venv-gpu from requirements-gpu.lock, the machine checks of
# scripts/gpu-check, every notebook under the gpu profile through nbval (GPU-only cells are hard
# checks instead of printed skips), then the course run with the demo class graded under the gpu
# profile with cold kernels (a GPU-only cell that skipped fails it). Every kernel grows its GPU memory
# as it needs it (course.gpu.PROFILE_ENVIRONMENT says the same for the grader's kernels).
test-gpu: export TF_FORCE_GPU_ALLOW_GROWTH := true
test-gpu:
	@$(MAKE) --no-print-directory GPU=1 gpu-runner

gpu-runner: $(STAMP)
	$(BIN)/python scripts/gpu-check
	rm -rf build/prepared/gpu
	$(BIN)/course prepare --profile gpu --out build/prepared/gpu
	$(BIN)/pytest build/prepared/gpu --nbval-lax -p no:cacheprovider
	$(BIN)/autograder course-run --profile gpu

release: $(STAMP)
	$(BIN)/autograder release

release-check: $(STAMP)
	$(BIN)/autograder release --check

doctor: $(STAMP)
	$(BIN)/course doctor

# JupyterLab opening release/, with the course kernel and nbgrader's extensions (Validate, the
# formgrader). Its root is the course directory, where nbgrader finds nbgrader_config.py and source/.
# LAB_ARGS passes more options, e.g. make lab LAB_ARGS="--no-browser --port=8899".
LAB_ARGS ?=
lab: $(STAMP)
	$(BIN)/jupyter lab --ServerApp.root_dir=$(CURDIR) --LabApp.default_url=/lab/tree/release \
	    $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

# What students get: build/student-bundle.zip (release/, course/, install files, a README).
student-bundle: $(STAMP)
	$(BIN)/autograder student-bundle --out build/student-bundle.zip

# The documentation site (docs/: Sphinx, MyST Markdown pages, the Furo theme) into build/docs/html/;
# every warning is an error, so a link to a missing page or heading fails it (tests/test_docs.py too).
docs: $(STAMP)
	$(BIN)/sphinx-build -W --keep-going -n -b html docs build/docs/html

# Regenerate the hash-pinned lock from pyproject.toml (needs network access to the package index).
# rfc3987-syntax is left out: jupyter-events asks for jsonschema[format-nongpl], whose rfc3987-syntax
# builds an Earley parser when imported (2 s of a core in every process that imports nbformat, 4 s on
# a busy machine), only to check the `iri` formats that no schema of this course uses; `uv pip check`
# (like pip check) does not count an extra's packages, so the environment stays consistent without it.
# requirements-gpu.lock is compiled with requirements.lock as its constraints, so the two differ only
# in ONNX Runtime's distribution and the CUDA wheels (tests/test_lock.py checks that, one CUDA major, and
# the pins against TensorFlow's own and-cuda requirements).
COMPILE_FLAGS := --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
    --generate-hashes --no-header --no-annotate --quiet --no-emit-package rfc3987-syntax
COMPILE := $(BIN)/uv pip compile pyproject.toml $(COMPILE_FLAGS) --override lock-overrides.txt
lock:
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv
	$(COMPILE) --extra cpu --extra hub --extra docs -o requirements.lock
	awk '/^[^ ]/ { sub(/ \\$$/, ""); print }' requirements.lock > $(VENV)/constraints.txt
	$(COMPILE) --extra gpu --extra hub --extra docs -c $(VENV)/constraints.txt -o requirements-gpu.lock
	grep -v -i -E '^(sqlalchemy|alembic)==' $(VENV)/constraints.txt > $(VENV)/ngshare-constraints.txt
	$(BIN)/uv pip compile hub/ngshare/requirements.in $(COMPILE_FLAGS) -c $(VENV)/ngshare-constraints.txt \
	    -o hub/ngshare/requirements.lock
	$(BIN)/pytest -p no:cacheprovider tests/test_lock.py

# conda-lock.yml for conda users; conda channels must be reachable (they are not on the build machines).
conda-lock:
	@command -v conda-lock >/dev/null 2>&1 || { echo "conda-lock is not installed: 'pip install conda-lock' (or 'conda install -c conda-forge conda-lock'), then run 'make conda-lock' again" >&2; exit 1; }
	conda-lock lock --file environment.yml --platform linux-64 --lockfile conda-lock.yml || { echo "conda-lock failed: are the conda channels in environment.yml reachable from this machine?" >&2; exit 1; }

clean:
	rm -rf build gradebook.db submitted autograded feedback

# Benchmark, not a test: plain serial nbgrader autograde vs autograder grade --workers 2.
bench: $(STAMP)
	$(BIN)/python -m tests.benchmarks.grading --students 6 --workers 2

# Benchmark, not a test: how often each correct route passes the tests that grade a trained model
# (02's colour model, 03's fine-tuned classifier), over 10 seeds under the grade profile, with the
# median notebook time, and from the same runs the numbers the lessons rest on (02's plotted model
# against copying the last frame; 03's pretraining against its baselines and the learning curve of
# pretrained against scratch): per seed, then medians, min-max and smallest margins (tests/benchmarks/).
bench-training: $(STAMP)
	$(BIN)/python -m tests.benchmarks.training --seeds 10

# The same runner for the lessons' numbers at the notebooks' default sizes (the parameters cell as
# written, no profile injected), 5 seeds, reference solutions only.
bench-lessons: $(STAMP)
	$(BIN)/python -m tests.benchmarks.training --profile default --seeds 5 --reference-only

# Benchmark, not a test (as root): LTI launch to a kernel with TensorFlow imported, for 1 and 10 students
# at once, and the memory of an idle server and of a kernel after `import tensorflow`.
bench-hub: $(STAMP)
	$(BIN)/python -m tests.benchmarks.hub --students 1 10
