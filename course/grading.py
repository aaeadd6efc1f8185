"""What the notebooks' test cells use to grade fairly.

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
