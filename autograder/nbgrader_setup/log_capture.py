"""What nbgrader says when it fails: the ERROR lines it logs, as one reason.

nbgrader's converters catch a failure, log its cause (a preprocessor's own message, then the
traceback) and raise `NbGraderException("Please see the above traceback ...")`, which names no
cause. `errors_logged` collects what they logged at ERROR; `explain` keeps nbgrader's own messages
and each traceback's last line (the exception and its message) and drops the generic lines;
`errors_only` keeps the rest out of a log.
"""

from __future__ import annotations

import contextlib
import logging

LOGGERS = ("traitlets", "nbgrader")   # where nbgrader's converters log when no application is running
GENERIC = ("Please see the error log", "Please see the the above traceback", "Please see the above traceback",
           "There was an error processing")


@contextlib.contextmanager
def errors_logged(records: list[str]):
    """Append the message of every ERROR record nbgrader logs inside the block to `records`."""
    handler = logging.Handler(level=logging.ERROR)
    handler.emit = lambda record: records.append(record.getMessage())  # type: ignore[method-assign]
    loggers = [logging.getLogger(name) for name in LOGGERS]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeHandler(handler)


@contextlib.contextmanager
def errors_only():
    """Inside the block nbgrader's converters log their errors only, not the lines of an ordinary run
    (a folder replaced, a config option a preprocessor does not take) that a driver's log does not want."""
    loggers = [logging.getLogger(name) for name in LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def explain(records: list[str], failure: BaseException | None = None, limit: int = 1000) -> str:
    """nbgrader's own messages among `records`, each traceback as its last line, in order, once each;
    `failure` (the exception that ended the run) when nbgrader logged nothing useful."""
    said: list[str] = []
    for record in records:
        text = record.strip()
        if not text or any(text.startswith(generic) for generic in GENERIC):
            continue
        line = text.splitlines()[-1].strip() if text.startswith("Traceback") else " ".join(text.split())
        if line not in said:
            said.append(line)
    if not said:
        said.append(f"{type(failure).__name__}: {failure}" if failure else "nbgrader failed without a message")
    return "; ".join(said)[:limit]
