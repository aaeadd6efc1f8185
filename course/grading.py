"""What the notebooks' test cells use to grade fairly.

Partial credit. A test cell worth 3 points or more runs its cases in groups; each group is all or
nothing, and the cell's last expression is its score, which nbgrader reads as the cell's partial
grade (`nbgrader.utils.determine_grade` takes a code cell's numeric `execute_result`):

    checks = grading.Checks("check_build", points=3)
    with checks.group("the 2021 build"):
        ...asserts...
    ### BEGIN HIDDEN TESTS
    with checks.group("a table you have not seen"):
        ...
    ### END HIDDEN TESTS
    checks.score()

The score is the cell's points times the share of groups (by weight) that passed, so the student's
copy, which has no hidden groups, shows full points for a correct answer, and the graded copy
counts every group. A failed group never raises: it prints its name and the failure (expected vs
got) and costs its share only. When no group passed, `score()` raises instead, naming the first failure: the
cell gets 0 either way (nbgrader scores an error 0), and an unsolved exercise stops "Run All" at
its test cell, as an all-or-nothing test does.

A test that compares a student's function with the library object it re-implements (a
`ConvLSTM2D` step, `MultiSegmentPacker`) computes the expected value with that object first, then
calls the student's function with the object hidden:

    expected = keras_convlstm_step(...)
    with grading.hidden("keras.layers.ConvLSTM2D"):
        got = convlstm_step(...)

While the block runs, every module attribute that holds the object under its name (the public
`keras.layers.ConvLSTM2D`, the private `keras.src...` one, a name the notebook imported itself) is
a stand-in that raises `Hidden`, so a solution that only calls the object earns nothing; the names
are restored afterwards, whatever happened.
"""

from __future__ import annotations

import contextlib
import importlib
import sys


class Checks:
    """Groups of cases of one test cell, each worth a share of the cell's points."""

    def __init__(self, exercise: str, points: float):
        self.exercise = exercise
        self.points = float(points)
        self.results: list[tuple[str, float, str | None]] = []  # (group, weight, failure or None)

    @contextlib.contextmanager
    def group(self, name: str, weight: float = 1.0):
        """Run one group of cases: any exception inside fails this group alone."""
        if weight <= 0:
            raise ValueError(f"group {name!r}: the weight must be positive, got {weight!r}")
        try:
            yield
        except Exception as error:  # noqa: BLE001 - a student's error fails the group, never the cell
            message = str(error).strip() or "(no message)"
            if not isinstance(error, AssertionError):
                message = f"{type(error).__name__}: {message}"
            self.results.append((name, float(weight), message))
        else:
            self.results.append((name, float(weight), None))

    def score(self) -> float:
        """Print one line per failed group, then return the points earned with one line, or raise
        AssertionError when no group passed."""
        if not self.results:
            raise RuntimeError(f"{self.exercise}: no group of checks ran")
        total = sum(weight for _, weight, _ in self.results)
        passed = sum(weight for _, weight, failure in self.results if failure is None)
        earned = min(self.points, round(self.points * passed / total, 4))
        failed = [(name, failure) for name, _, failure in self.results if failure is not None]
        for name, failure in failed:
            print(f"  FAILED {name}: " + failure.replace("\n", "\n      "))
        count = len(self.results)
        if earned == 0:
            name, failure = failed[0]
            raise AssertionError(f"{self.exercise}: no group of checks passed (0 of {self.points:g} points); "
                                 f"first failure, {name}: {failure}")
        if failed:
            print(f"{self.exercise}: {count - len(failed)} of {count} groups of checks passed, "
                  f"{earned:g} of {self.points:g} points")
        else:
            print(f"{self.exercise}: all {count} groups of checks passed, {earned:g} of {self.points:g} points")
        return earned


class Hidden(RuntimeError):
    """The solution called an object the test hides while it runs."""


def _resolve(dotted: str):
    module_name, _, attribute = dotted.rpartition(".")
    return getattr(importlib.import_module(module_name), attribute), attribute


class _Refusing(type):
    """The stand-in's type: calling it (building the layer) or reading any attribute raises Hidden."""

    def _refuse(cls):
        return Hidden(f"{cls.dotted} is hidden while the test runs your function: compute it yourself")

    def __call__(cls, *args, **kwargs):
        raise cls._refuse()

    def __getattr__(cls, name):
        raise cls._refuse()


def _stand_in(dotted: str):
    name = f"Hidden_{dotted.rpartition('.')[2]}"
    return _Refusing(name, (), {"dotted": dotted, "__qualname__": name})


@contextlib.contextmanager
def hidden(*dotted_names: str):
    """Hide each object (named by its public dotted path) in every loaded module for the block."""
    swapped: list[tuple[object, str, object]] = []
    try:
        for dotted in dotted_names:
            target, attribute = _resolve(dotted)
            stand_in = _stand_in(dotted)
            for module in list(sys.modules.values()):
                try:
                    namespace = object.__getattribute__(module, "__dict__")
                except (AttributeError, TypeError):
                    continue
                if isinstance(namespace, dict) and namespace.get(attribute) is target:
                    swapped.append((module, attribute, target))
                    setattr(module, attribute, stand_in)
        yield
    finally:
        for module, attribute, target in reversed(swapped):
            setattr(module, attribute, target)
