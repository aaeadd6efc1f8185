"""nbgrader configuration of the course. The repository root is the nbgrader course directory.

Everything is set by `autograder.nbgrader_setup.config.configure`, the same function the `autograder` command
uses, so `nbgrader generate_assignment` or `nbgrader autograde` run by hand behave the same way.
"""

from autograder.nbgrader_setup.config import configure

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)
configure(c)
