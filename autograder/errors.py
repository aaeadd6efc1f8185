"""The one base class of every error that stops an `autograder` command before or instead of its work.

A student's notebook failing is never one of these: it is a row's status. These are problems of the
run itself (an option, a file the instructor wrote, the machine), each with a message that says
where and why; `autograder.cli.main` maps every one of them to exit code 2, in one place.
"""

from __future__ import annotations


class AutograderError(Exception):
    """The command cannot do what was asked: the message says which file, line or option, and why."""
