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

While the block runs, the object itself refuses to work, by whatever name the solution holds it (the
public `keras.layers.ConvLSTM2D`, a private `keras.src...` path, or an alias such as
`from keras.layers import ConvLSTM2D as C` bound before the test): a class gets an `__init__`, and a
`__call__` where its instances are callable, set on the class itself that raise `Hidden`, so building
it, building a subclass that runs its `__init__`, or calling an instance made earlier fails; a
function gets a `__code__` that raises `Hidden` (a function's `__code__` is writable, see "Callable
types" in the Python data model). A solution that only calls the object earns nothing. The class's
attributes and the function's code are restored afterwards, whatever happened. Other names and
objects stay as they are, so `isinstance` checks and the library's other classes keep working.
"""

from __future__ import annotations

import contextlib
import importlib
import types


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
    return getattr(importlib.import_module(module_name), attribute)


def _message(dotted: str) -> str:
    return f"{dotted} is hidden while the test runs your function: compute it yourself"


def _refusing_code(dotted: str) -> types.CodeType:
    """Code that raises Hidden and reads no global: it runs with the hidden function's own globals."""
    source = (f"def refuse(*args, **kwargs):\n"
              f"    raise __import__({__name__!r}, fromlist=['Hidden']).Hidden({_message(dotted)!r})\n")
    namespace: dict = {}
    exec(compile(source, f"<hidden {dotted}>", "exec"), namespace)
    return namespace["refuse"].__code__


def _refusing_method(dotted: str):
    def refuse(self, *args, **kwargs):
        raise Hidden(_message(dotted))
    return refuse


_ABSENT = object()


@contextlib.contextmanager
def hidden(*dotted_names: str):
    """Make each object (named by a dotted path) raise `Hidden` when built or called, for the block."""
    saved: list[tuple[object, str, object]] = []  # (owner, attribute, what to put back; _ABSENT: delete)

    def replace(owner, attribute, value):
        saved.append((owner, attribute, owner.__dict__.get(attribute, _ABSENT) if isinstance(owner, type)
                      else getattr(owner, attribute)))
        setattr(owner, attribute, value)

    try:
        for dotted in dotted_names:
            target = _resolve(dotted)
            if isinstance(target, type):
                replace(target, "__init__", _refusing_method(dotted))
                if any("__call__" in vars(base) for base in target.__mro__[:-1]):  # its instances are callable
                    replace(target, "__call__", _refusing_method(dotted))
            elif isinstance(target, types.FunctionType) and not target.__closure__:
                replace(target, "__code__", _refusing_code(dotted))
            else:
                raise TypeError(f"grading.hidden: {dotted} is a {type(target).__name__}; it hides classes and "
                                f"plain functions")
        yield
    finally:
        for owner, attribute, value in reversed(saved):
            if value is _ABSENT:
                delattr(owner, attribute)
            else:
                setattr(owner, attribute, value)
