"""The `autograder` package: grading a class on top of nbgrader's own machinery."""

__version__ = "0.1.0"
