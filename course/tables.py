"""Reference data that notebook 00_gpu_setup shows and its exercises take as input.

The data lives in `course/data/*.json`, each file with a `source` saying where it comes from. These
functions only load it: every call returns a fresh copy, so a notebook may change what it got.
Nothing here matches, parses or checks versions; that is what the students write.

- `tested_builds()`        TensorFlow's tested build configurations, Linux GPU, one row per minor
                           release 2.6 to 2.21 (Python range, compiler, Bazel, cuDNN, CUDA)
- `cuda_architectures()`   CUDA toolkit version -> compute capabilities nvcc can compile for
- `import_errors()`        the catalogue of classic import and load errors: key, title, an example
                           message, what it means and the fix
- `sources()`              where each table comes from
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

TESTED_BUILDS = "tested_builds.json"
CUDA_ARCHITECTURES = "cuda_architectures.json"
IMPORT_ERRORS = "import_errors.json"


def _load(name: str) -> dict[str, Any]:
    text = resources.files("course").joinpath("data").joinpath(name).read_text(encoding="utf-8")
    return json.loads(text)


def tested_builds() -> list[dict[str, str]]:
    """Rows newest first, each with keys tensorflow, python_min, python_max, compiler, bazel, cudnn, cuda."""
    return _load(TESTED_BUILDS)["builds"]


def cuda_architectures() -> dict[str, list[str]]:
    """{"11.0": ["3.5", ..., "8.0"], "11.1": [..., "8.6"], ...}: capabilities as 'major.minor' strings."""
    return _load(CUDA_ARCHITECTURES)["architectures"]


def import_errors() -> list[dict[str, str]]:
    """Entries with keys key, title, example, description, fix; the last one is 'unknown'."""
    return _load(IMPORT_ERRORS)["errors"]


def sources() -> dict[str, str]:
    """{"tested_builds": "...", "cuda_architectures": "...", "import_errors": "..."}."""
    return {name.removesuffix(".json"): _load(name)["source"]
            for name in (TESTED_BUILDS, CUDA_ARCHITECTURES, IMPORT_ERRORS)}
