"""The fast lane, and how `make test` spreads the suite over pytest-xdist's workers (`-n 3 --dist loadfile`).

The fast lane (`make test-fast`, `pytest -m fast`): every test without one of the `SLOW_MARKS`
(it needs no notebook, grading run, browser, kernel, TensorFlow or server) gets the `fast` mark. A
fast test that imports TensorFlow fails (`tensorflow_stays_out`): mark it `tensorflow` instead.

- A file is one unit of work, as with plain `--dist loadfile`: a module's module-scoped servers
  and graded classes are built once, on one worker, and nbval's cells of one notebook run in order
  in one kernel.
- The tests in `SPREAD` are units of their own: each grades one whole assignment and
  shares nothing with its neighbours, so spread over the workers they no longer queue behind each
  other on one worker (together they are a third of the suite's time).
- Heavy units are handed out first (tests marked `grading`, `browser` or `hub`, nbval's notebooks, and the
  spread ones), so what runs last is short and no worker idles while another finishes a long tail.

(pytest-xdist's own `--dist loadgroup` would express the first two with marks, but with pytest 9
its group suffix no longer reaches the node ids, so it silently spreads every test; hence this
scheduler, made through xdist's `pytest_xdist_make_scheduler` hook.) Without xdist, or with
another `--dist`, nothing here changes what runs.
"""

from __future__ import annotations

import pytest

# node id prefixes of the tests that may run on any worker, one by one
SPREAD = ("tests/test_assignment_grading.py::",)
HEAVY_MARKS = ("grading", "browser", "hub")
SLOW_MARKS = ("notebook", "grading", "browser", "kernel", "tensorflow", "cluster", "hub")


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SpreadingLoadFile(LoadFileScheduling):
        """`--dist loadfile`, except that each test of `SPREAD` is a unit of work of its own."""

        def _split_scope(self, nodeid: str) -> str:
            return nodeid if nodeid.startswith(SPREAD) else super()._split_scope(nodeid)

    return SpreadingLoadFile(config, log)


def _heavy(item: pytest.Item) -> bool:
    return (item.path.suffix == ".ipynb" or item.nodeid.startswith(SPREAD)
            or any(item.get_closest_marker(name) for name in HEAVY_MARKS))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test without a slow mark is `fast`; heavy files first, in a stable sort: the tests of
    one file keep their order."""
    for item in items:
        if item.path.suffix != ".ipynb" and not any(item.get_closest_marker(name) for name in SLOW_MARKS):
            item.add_marker(pytest.mark.fast)
    heavy_files = {item.path for item in items if _heavy(item)}
    items.sort(key=lambda item: 0 if item.path in heavy_files else 1)


@pytest.fixture(autouse=True)
def tensorflow_stays_out(request: pytest.FixtureRequest):
    """A fast test must not import TensorFlow (seconds of a core, and the lane's minute): it fails
    if TensorFlow was first imported during it."""
    import sys

    before = "tensorflow" in sys.modules
    yield
    if request.node.get_closest_marker("fast") and not before and "tensorflow" in sys.modules:
        pytest.fail(f"{request.node.nodeid} imports TensorFlow: mark it `tensorflow` (it is not a fast test)",
                    pytrace=False)
