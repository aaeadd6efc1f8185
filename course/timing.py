"""Measure a callable the way the course measures everything: warm up, repeat, report medians.

A single timing of a TensorFlow call mostly measures tracing, compilation, allocation or a cold
cache. `measure` runs the callable a few times untimed, then times `repeats` calls one by one and
keeps every sample, so a notebook can print the median and the spread and plot the samples.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass(frozen=True)
class Measurement:
    """Timing samples of one callable, in seconds."""

    samples: tuple[float, ...]
    warmup: int
    label: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def repeats(self) -> int:
        return len(self.samples)

    @property
    def median_s(self) -> float:
        return statistics.median(self.samples)

    @property
    def min_s(self) -> float:
        return min(self.samples)

    @property
    def iqr_s(self) -> float:
        """Inter-quartile range: the spread of the middle half of the samples."""
        if len(self.samples) < 2:
            return 0.0
        quartiles = statistics.quantiles(self.samples, n=4, method="inclusive")
        return quartiles[2] - quartiles[0]

    @property
    def median_ms(self) -> float:
        return self.median_s * 1e3

    def __str__(self) -> str:
        prefix = f"{self.label}: " if self.label else ""
        return (
            f"{prefix}median {format_seconds(self.median_s)} "
            f"(IQR {format_seconds(self.iqr_s)}, min {format_seconds(self.min_s)}, "
            f"n={self.repeats}, warm-up {self.warmup})"
        )


def measure(
    fn: Callable[[], Any],
    *,
    repeats: int = 10,
    warmup: int = 2,
    label: str = "",
    sync: Callable[[Any], Any] | None = None,
) -> Measurement:
    """Call `fn()` `warmup` times untimed, then `repeats` times timed; return the samples.

    `sync` is applied to each result inside the timed region. TensorFlow on a GPU returns before
    the kernel finished; pass e.g. `sync=lambda t: t.numpy()` so the time includes the work.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    if warmup < 0:
        raise ValueError(f"warmup must be 0 or more, got {warmup}")
    for _ in range(warmup):
        result = fn()
        if sync is not None:
            sync(result)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        if sync is not None:
            sync(result)
        samples.append(time.perf_counter() - start)
    return Measurement(samples=tuple(samples), warmup=warmup, label=label)


def ratio(slow: Measurement, fast: Measurement) -> float:
    """How many times faster `fast` is than `slow`, by medians."""
    if fast.median_s <= 0:
        raise ValueError("the faster measurement has a zero median: time more work per call")
    return slow.median_s / fast.median_s


def format_seconds(seconds: float) -> str:
    """A human unit for a duration: 12.3 us, 4.56 ms, 1.23 s."""
    magnitude = abs(seconds)
    if magnitude < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if magnitude < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"
