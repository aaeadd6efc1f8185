"""hub/k8s/values.yaml against the Zero to JupyterHub chart it names (4.4.0): merged over the chart's own
defaults, as Helm merges a user's values, and validated with the chart's values schema. Both files are
the chart's, at its tag 4.4.0 (commit 5c5f5df7 of jupyterhub/zero-to-jupyterhub-k8s, BSD-3-Clause:
tests/fixtures/z2jh-4.4.0/LICENSE), kept here because the tests download nothing.
Also: the hub's extra configuration compiles and names what hub/course_hub.py has, and the single-user
image takes nothing of source/ or tests/."""

from __future__ import annotations

import ast
import copy
import sys
from pathlib import Path

import jsonschema
import yaml

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "tests" / "fixtures" / "z2jh-4.4.0"
VALUES = ROOT / "hub" / "k8s" / "values.yaml"


def merged(defaults: dict, values: dict) -> dict:
    out = copy.deepcopy(defaults)
    for key, value in values.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def errors(values: dict) -> list[str]:
    schema = yaml.safe_load((CHART / "values.schema.yaml").read_text(encoding="utf-8"))
    defaults = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))
    validator = jsonschema.Draft7Validator(schema)
    return [f"{'.'.join(map(str, error.absolute_path))}: {error.message}"
            for error in validator.iter_errors(merged(defaults, values))]


def installed_values() -> dict:
    """The values as the install command in values.yaml gives them to Helm: the file, and hub/course_hub.py
    as the hub's extra file (`--set-file hub.extraFiles.course-hub.stringData=hub/course_hub.py`)."""
    values = yaml.safe_load(VALUES.read_text(encoding="utf-8"))
    values["hub"]["extraFiles"]["course-hub"]["stringData"] = (ROOT / "hub" / "course_hub.py").read_text(encoding="utf-8")
    assert "--set-file hub.extraFiles.course-hub.stringData=hub/course_hub.py" in VALUES.read_text(encoding="utf-8")
    return values


def test_the_values_pass_the_charts_schema():
    assert errors(installed_values()) == []


def test_without_the_set_file_the_extra_file_has_no_content_and_fails():
    assert any("extraFiles" in error for error in errors(yaml.safe_load(VALUES.read_text(encoding="utf-8"))))


def test_a_misspelled_key_fails_the_schema():
    values = installed_values()
    values["singleuser"]["profilelist"] = values["singleuser"].pop("profileList")
    assert any("profilelist" in error for error in errors(values))


def test_the_gpu_profile_asks_for_one_gpu_and_caps_its_memory():
    values = yaml.safe_load(VALUES.read_text(encoding="utf-8"))
    gpu = next(profile for profile in values["singleuser"]["profileList"] if profile["display_name"] == "GPU")
    override = gpu["kubespawner_override"]
    assert override["extra_resource_limits"] == {"nvidia.com/gpu": "1"}
    sys.path.insert(0, str(ROOT))
    from course import gpu as course_gpu

    assert course_gpu.MEMORY_LIMIT_VARIABLE in override["environment"]
    assert values["singleuser"]["extraEnv"]["TF_FORCE_GPU_ALLOW_GROWTH"] == "true"


def test_the_hub_configuration_compiles_and_uses_what_course_hub_has():
    values = yaml.safe_load(VALUES.read_text(encoding="utf-8"))
    snippet = values["hub"]["extraConfig"]["course-hub"]
    tree = ast.parse(snippet)
    used = {node.attr for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "course_hub"}
    sys.path.insert(0, str(ROOT / "hub"))
    import course_hub

    assert used and all(hasattr(course_hub, name) for name in used), used
    assert values["hub"]["extraFiles"]["course-hub"]["mountPath"].endswith("/course_hub.py")


def test_the_single_user_image_takes_no_solution():
    copied = [line.split()[1:-1] for line in (ROOT / "hub" / "k8s" / "Dockerfile").read_text().splitlines()
              if line.startswith("COPY ")]
    sources = {part.rstrip("/") for parts in copied for part in parts}
    assert sources and not sources & {".", "source", "tests"}, sources


def test_the_image_installs_as_make_does():
    """The Dockerfile's install steps are the Makefile's (make test runs those on every change), but the
    grading kernel, which a student's image does not need."""
    import re

    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile[makefile.index("$(STAMP): $(LOCK) pyproject.toml"):].split("\n\n")[0].splitlines()[1:]
    make = [line.strip().replace("$(BIN)/", ".venv/bin/").replace("$(VENV)", ".venv").replace("$(LOCK)", "$LOCK")
            for line in recipe if not line.strip().startswith("@")]
    make = [line for line in make if "autograder.nbgrader_setup import kernelspec" not in line]
    dockerfile = (ROOT / "hub" / "k8s" / "Dockerfile").read_text(encoding="utf-8")
    run = next(step for step in re.findall(r"^RUN (.*?)(?=^\S)", dockerfile, re.M | re.S) if "uv pip install" in step)
    image = [step.strip() for step in run.replace("\\\n", " ").split("&&")]
    image = [re.sub(r"\s+", " ", step) for step in image if step != "python -m venv .venv"]
    assert image == make


def test_the_pods_exchange_is_ngshare_configured_as_on_one_machine():
    """The pods' nbgrader_config.py is what the one-machine hub writes for ngshare (tested there, in
    tests/test_hub_ngshare.py), at the ngshare chart's cluster address; no exchange volume is left."""
    values = yaml.safe_load(VALUES.read_text(encoding="utf-8"))
    sys.path.insert(0, str(ROOT / "hub"))
    import course_hub

    url = values["hub"]["services"]["ngshare"]["url"] + "/services/ngshare"
    settings = course_hub.ClassSettings(course_id="tf-internals", state_dir=Path("/srv/jupyterhub"), exchange="ngshare")
    config = values["singleuser"]["extraFiles"]["nbgrader-config"]
    assert config["stringData"] == course_hub.exchange_configuration(settings, url)
    assert config["mountPath"] == values["singleuser"]["extraEnv"]["JUPYTER_CONFIG_PATH"] + "/nbgrader_config.py"
    assert "storage" not in values["singleuser"] or "extraVolumes" not in values["singleuser"]["storage"]
    assert 'services["ngshare"]["url"] + "/services/ngshare"' in values["hub"]["extraConfig"]["course-hub"]


def test_the_ngshare_image_installs_its_lock_as_make_does():
    """ngshare's image (hub/k8s/ngshare.Dockerfile) installs hub/ngshare/requirements.lock with the same
    uv steps as the Makefile's .venv-ngshare, which make test runs, and the chart is told to use it."""
    import re

    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile[makefile.index("$(NGSHARE_STAMP): hub/ngshare/requirements.lock"):].split("\n\n")[0]
    make = [line.strip().replace("$(BIN)/", ".venv/bin/").replace("$(NGSHARE_VENV)", ".venv")
            for line in recipe.splitlines()[1:] if "uv pip" in line]
    dockerfile = (ROOT / "hub" / "k8s" / "ngshare.Dockerfile").read_text(encoding="utf-8")
    run = next(step for step in re.findall(r"^RUN (.*?)(?=^\S)", dockerfile, re.M | re.S) if "uv pip install" in step)
    image = [re.sub(r"\s+", " ", step.strip()) for step in run.replace("\\\n", " ").split("&&") if "uv pip" in step]
    assert image == make
    assert "--set image.repository=<registry>/tf-course-ngshare" in VALUES.read_text(encoding="utf-8")
    values = yaml.safe_load(VALUES.read_text(encoding="utf-8"))
    egress = values["singleuser"]["networkPolicy"]["egress"]
    assert egress == [{"to": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "ngshare"}}}],
                       "ports": [{"port": 8080, "protocol": "TCP"}]}]
    assert "egressAllowRules" not in values["singleuser"]["networkPolicy"], "no private address beyond ngshare's"
