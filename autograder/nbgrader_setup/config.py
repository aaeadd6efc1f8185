"""How the course configures nbgrader: one function, used by the repository's nbgrader_config.py
(so `nbgrader` run by hand behaves the same) and by the `autograder` driver.

It extends nbgrader's own pipelines through their configurable preprocessor lists:
- Autograde: `InjectProfile` before `Execute`; `FilterLogNoise` in place of `IgnorePattern`;
  `LimitOutputSize` after `LimitOutput`;
- GenerateFeedback: `HideHiddenTests` after `GetGrades`;
and runs every kernel nbgrader starts as the grading kernel spec (`kernelspec.GRADING_KERNEL`), whose
provisioner (`autograder.execution.provisioner.SandboxProvisioner`) gives it a sandbox of its own;
the sandbox's mode and limits are that provisioner's traits.
"""

from __future__ import annotations

from nbgrader.converters import Autograde, GenerateFeedback
from nbgrader.preprocessors import Execute, IgnorePattern, LimitOutput
from traitlets.config import Config

from autograder.execution.sandbox import Limits
from autograder.nbgrader_setup.kernelspec import GRADING_KERNEL
from autograder.nbgrader_setup.preprocessors import FilterLogNoise, HideHiddenTests, InjectProfile, LimitOutputSize

COURSE_ID = "tf-internals"
CELL_TIMEOUT = 600


def _default(converter, trait: str) -> list:
    return list(converter.class_traits()[trait].make_dynamic_default())


def autograde_preprocessors() -> list:
    steps = [FilterLogNoise if step is IgnorePattern else step for step in _default(Autograde, "autograde_preprocessors")]
    if FilterLogNoise not in steps:
        steps.insert(steps.index(Execute) + 1, FilterLogNoise)
    steps.insert(steps.index(Execute), InjectProfile)
    steps.insert(steps.index(LimitOutput) + 1, LimitOutputSize)
    return steps


def feedback_preprocessors() -> list:
    steps = _default(GenerateFeedback, "preprocessors")
    steps.insert(1, HideHiddenTests)
    return steps


def configure(c: Config, *, profile: str = "grade", cell_timeout: int = CELL_TIMEOUT, sandbox: str = "auto",
              limits: Limits = Limits()) -> Config:
    """Apply the course's nbgrader settings to `c` (a traitlets Config) and return it: `sandbox` is
    the kernels' sandbox mode (auto, bwrap or none), `limits` what each kernel's sandbox may use."""
    c.CourseDirectory.course_id = COURSE_ID
    c.CourseDirectory.source_directory = "source"
    c.CourseDirectory.release_directory = "release"
    c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", ".git"]
    c.Autograde.autograde_preprocessors = autograde_preprocessors()
    c.InjectProfile.profile = profile
    c.Execute.timeout = cell_timeout
    c.Execute.kernel_name = GRADING_KERNEL
    c.SandboxProvisioner.mode = sandbox
    c.SandboxProvisioner.disk_bytes = limits.disk_bytes
    c.SandboxProvisioner.tasks = limits.tasks
    c.SandboxProvisioner.cpu_seconds = limits.cpu_seconds
    c.GenerateFeedback.preprocessors = feedback_preprocessors()
    return c
