"""How the course configures nbgrader, and what grading runs nbgrader with.

`configure(c)` is the course's nbgrader configuration, used by the repository's nbgrader_config.py (so
`nbgrader` run by hand behaves the same). It extends nbgrader's own pipelines through their
configurable preprocessor lists:
- Autograde: `InjectProfile` before `Execute`; `FilterLogNoise` in place of `IgnorePattern`;
  `LimitOutputSize` after `LimitOutput`;
- GenerateFeedback: `HideHiddenTests` after `GetGrades`, `MarkWaitingAnswers` last (a written answer
  that waits for a hand grade is said to, not shown as 0 points), and its page's template: nbgrader's
  feedback page whose list of scores says so too (`templates/feedback/course_feedback.html.j2`);
- HTMLExporter (feedback pages, the formgrader's views): nbconvert's sanitising, with the course's
  allowlist (`autograder.nbgrader_setup.sanitize`), so no markup of a student's runs where they are read;
and runs every kernel nbgrader starts as the grading kernel spec (`kernelspec.GRADING_KERNEL`), whose
provisioner (`autograder.execution.provisioner.SandboxProvisioner`) gives it a sandbox of its own.

`grading_config(course_root, settings)` is what `autograder grade` runs nbgrader with, in three
layers, each on top of the one before: `configure`'s, then the course's own nbgrader configuration
as nbgrader loads it (`load_course_config`: the nbgrader_config.py of Jupyter's configuration folders,
then the course root's), then the grading settings (`autograder.settings.GradingSettings`, which the
profile injection and the sandbox read from the configuration). So an instructor's nbgrader setting
(a code stub, `LimitOutput`, a preprocessor of their own) reaches `autograder grade` as it reaches
`nbgrader autograde`; only the kernel is always the grading kernel (its sandbox is not optional).
"""

from __future__ import annotations

import functools
from pathlib import Path

import nbgrader
from jupyter_core.paths import jupyter_config_path
from nbgrader.converters import Autograde, GenerateFeedback
from nbgrader.preprocessors import Execute, IgnorePattern, IncludeHeaderFooter, InstantiateTests, LimitOutput
from traitlets.config import Config
from traitlets.config.loader import ConfigFileNotFound, PyFileConfigLoader

from autograder.errors import AutograderError
from autograder.nbgrader_setup.kernelspec import GRADING_KERNEL
from autograder.nbgrader_setup import sanitize
from autograder.nbgrader_setup.code_style import ReadableStyle
from autograder.nbgrader_setup.preprocessors import (FilterLogNoise, HideHiddenTests, InjectProfile, LimitOutputSize,
                                                     MarkWaitingAnswers)
from autograder.settings import GradingSettings

TEMPLATES = Path(__file__).resolve().parent / "templates"   # nbconvert templates of the grader's pages
# nbgrader's own, whose feedback page templates/feedback/course_feedback.html.j2 extends
NBGRADER_TEMPLATES = Path(nbgrader.__file__).resolve().parent / "server_extensions" / "formgrader" / "templates"

COURSE_ID = "tf-internals"
CELL_TIMEOUT = 600
CONFIG_FILE = "nbgrader_config.py"


class CourseConfigError(AutograderError):
    """The course's nbgrader_config.py cannot be loaded: the message names the file and the error."""


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
    steps.append(MarkWaitingAnswers)
    return steps


def configure(c: Config) -> Config:
    """Apply the course's nbgrader settings to `c` (a traitlets Config) and return it. The grading
    settings (profile, sandbox, limits) are not set here: they are `GradingSettings`' traits, read
    from the same configuration (`c.GradingSettings.<name>`), with their defaults."""
    c.CourseDirectory.course_id = COURSE_ID
    c.CourseDirectory.source_directory = "source"
    c.CourseDirectory.release_directory = "release"
    c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", ".git"]
    c.Autograde.autograde_preprocessors = autograde_preprocessors()
    c.Execute.timeout = CELL_TIMEOUT
    c.Execute.kernel_name = GRADING_KERNEL
    c.GenerateFeedback.preprocessors = feedback_preprocessors()
    # its page: nbgrader's, whose list of scores names an answer waiting for its hand grade as waiting
    # (templates/feedback/course_feedback.html.j2, which extends nbgrader's feedback/index.html.j2: the
    # template folder `feedback` is found in both, this one first). Set for GenerateFeedback's own exporter
    # (nbgrader makes it with the converter as its parent), so the formgrader's views keep their template.
    c.GenerateFeedback.HTMLExporter.template_name = "feedback"
    c.GenerateFeedback.HTMLExporter.template_file = "course_feedback.html.j2"
    c.GenerateFeedback.HTMLExporter.extra_template_basedirs = [str(TEMPLATES), str(NBGRADER_TEMPLATES)]
    # the code on its pages (and the formgrader's) in colours readable on their grey: Pygments' default
    # style with the colours short of WCAG's 4.5:1 darkened (code_style.ReadableStyle)
    c.CSSHTMLHeaderPreprocessor.style = ReadableStyle
    # the course's late penalty (term.toml) when nbgrader charges one itself (named, not imported: the
    # grading layer sits above this one)
    c.AssignLatePenalties.plugin_class = "autograder.grading.lateness.TermPenalty"
    sanitize.configure(c)
    return c


@functools.lru_cache(maxsize=16)
def _load(folder: str, modified_ns: int) -> Config:
    try:
        return PyFileConfigLoader(CONFIG_FILE, path=folder).load_config()
    except ConfigFileNotFound:
        return Config()
    except Exception as error:  # the instructor's Python: any error it raises
        raise CourseConfigError(f"{Path(folder) / CONFIG_FILE}: {type(error).__name__}: {error}") from None


def load_course_config(course_root: Path) -> Config:
    """The nbgrader configuration nbgrader itself loads for a course at `course_root`: nbgrader_config.py
    of Jupyter's configuration folders (the user's, the environment's, the system's), then the course
    root's on top. Each file is read once while it is unchanged."""
    config = Config()
    for folder in [*reversed(jupyter_config_path()), str(course_root)]:
        path = Path(folder) / CONFIG_FILE
        if path.is_file():
            config.merge(_load(str(path.parent.resolve()), path.stat().st_mtime_ns))
    return config


def grading_config(course_root: Path, settings: GradingSettings) -> Config:
    """What grading runs nbgrader with: the course's configuration (`configure`), the course's own
    nbgrader configuration on top, the grading settings on top of both; the grading kernel and the
    sanitising of pages made from a student's notebook whatever the course's configuration says."""
    c = configure(Config())
    c.merge(load_course_config(course_root))
    c.merge(settings.as_config())
    if settings.cell_timeout is not None:
        c.Execute.timeout = settings.cell_timeout
    c.Execute.kernel_name = GRADING_KERNEL
    if settings.sandbox != "none":
        # grading runs every kernel in a sandbox (or refuses to grade): once the last cell has answered,
        # nothing the kernel does can change a grade, so it is killed, its sandbox's PID namespace and
        # tmpfs with it, instead of waited for while TensorFlow's process winds down, about 1.4 s of every
        # job (nbclient's `shutdown_kernel`). Without a sandbox, and in nbgrader run by hand (`configure`,
        # whose kernel may run without one), it exits by itself, so that its exit handlers remove what
        # it put in the machine's /tmp (TensorFlow's autograph writes a file there per converted function).
        c.Execute.shutdown_kernel = "immediate"
    sanitize.configure(c)   # like the kernel, not optional: the course's configuration may add filters, not drop these
    return c


def course_files(config: Config) -> list[str]:
    """The files nbgrader reads relative to the course root (it works from there), as `config` names
    them: nbgrader_config.py, the autotests' templates (`InstantiateTests.autotest_filename`,
    autotests.yml) and the header and footer notebooks (`IncludeHeaderFooter`)."""
    files = [CONFIG_FILE]
    for owner, trait in ((InstantiateTests, "autotest_filename"), (IncludeHeaderFooter, "header"),
                         (IncludeHeaderFooter, "footer")):
        name = config[owner.__name__].get(trait, owner.class_traits()[trait].default_value)
        if name and not Path(name).is_absolute():
            files.append(name)
    return files
