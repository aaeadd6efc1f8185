"""nbgrader preprocessors the course adds to nbgrader's own pipelines (see `autograder.nbgrader_setup.config`)."""

from .filter_log_noise import FilterLogNoise
from .hide_hidden_tests import HideHiddenTests
from .inject_profile import InjectProfile
from .limit_output_size import LimitOutputSize
from .mark_waiting_answers import MarkWaitingAnswers

__all__ = ["FilterLogNoise", "HideHiddenTests", "InjectProfile", "LimitOutputSize", "MarkWaitingAnswers"]
