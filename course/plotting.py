"""Small matplotlib helpers so every plot in the course has a title, labelled axes and units, and a
description for a reader who cannot see it.

Each drawing function takes the data and the words, draws one figure and returns it, with a text
description of what it shows and the numbers it is about (`description`); `show` puts it in the
notebook as an image whose alternative text is that description (the `alt` of the output's image/png
metadata, which nbconvert's pages use), and refuses a figure that has none. `save` writes it to a file.
Nothing here is global state: no style sheets, no rcParams changes.
"""

from __future__ import annotations

import base64
import io
import math
import textwrap
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
from matplotlib import pyplot
from matplotlib.figure import Figure


def _number(value: float) -> str:
    """A value as a reader hears it: three significant digits (a whole number whole), no exponent for
    everyday sizes."""
    value = float(value)
    if math.isnan(value):
        return "no value"
    if math.isinf(value):
        return "infinity" if value > 0 else "minus infinity"
    if value.is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    rounded = float(f"{value:.3g}")
    if 1000 <= abs(rounded) < 1e15:
        return f"{rounded:,.0f}"
    return f"{rounded:.3g}" if 1e-3 <= abs(rounded) < 1e15 else f"{value:.2e}"


def describe_lines(x: Sequence[float], series: Mapping[str, Sequence[float]], *, title: str, xlabel: str,
                   ylabel: str) -> str:
    """What `lines` draws, in words and numbers: each series' first and last value, and its smallest and
    largest where they are elsewhere."""
    xs = list(x)
    parts = []
    for label, values in series.items():
        ys = [float(value) for value in values]
        text = f"{label}: {_number(ys[0])} at {_number(xs[0])}"
        if len(ys) > 1:
            text += f" to {_number(ys[-1])} at {_number(xs[-1])}"
            finite = [index for index, value in enumerate(ys) if math.isfinite(value)]
            if finite:
                low, high = min(finite, key=ys.__getitem__), max(finite, key=ys.__getitem__)
                extremes = [f"{word} {_number(ys[index])} at {_number(xs[index])}"
                            for word, index in (("lowest", low), ("highest", high)) if index not in (0, len(ys) - 1)]
                text += f" ({', '.join(extremes)})" if extremes else ""
        parts.append(text)
    return f"Line plot, {title}: {ylabel} against {xlabel}. " + "; ".join(parts) + "."


def describe_bars(labels: Sequence[str], values: Sequence[float], *, title: str, ylabel: str) -> str:
    """What `bars` draws, in words and numbers: every bar's value."""
    pairs = "; ".join(f"{' '.join(str(label).split())}: {_number(value)}" for label, value in zip(labels, values))
    return f"Bar chart, {title}: {ylabel}. {pairs}."


def describe_grid(rows: Sequence[Sequence], *, title: str, row_labels: Sequence[str] | None,
                  column_labels: Sequence[str] | None, vmin: float | None, vmax: float | None,
                  cmap: str | None = "gray") -> str:
    """What `image_grid` draws: its rows and columns, and the grey scale they share."""
    text = f"Image grid, {title}: {len(rows)} row{'s' if len(rows) != 1 else ''} of {max(len(row) for row in rows)} images"
    if row_labels:
        text += "; rows, top to bottom: " + ", ".join(row_labels)
    if column_labels:
        text += "; columns, left to right: " + ", ".join(column_labels)
    if vmin is not None and vmax is not None:
        text += (f"; one grey scale from {_number(vmin)} (black) to {_number(vmax)} (white)" if cmap in ("gray", "grey")
                 else f"; one {cmap} colour scale from {_number(vmin)} to {_number(vmax)}")
    return text + "."


def description(figure: Figure) -> str:
    """The description a drawing function gave `figure` ("" for a figure drawn otherwise)."""
    return figure.get_label()


def show(figure: Figure | None = None, alt: str = "") -> None:
    """`figure` (default: pyplot's current one) shown in the notebook as a PNG whose alternative text is
    `alt` (what the figure is for, in the notebook's words) followed by its `description`; then closed,
    so it is shown once. Raises ValueError for a figure with neither: every figure has a description."""
    from IPython.display import display

    figure = figure or pyplot.gcf()
    text = " ".join(part for part in (alt.strip(), description(figure)) if part)
    if not text:
        pyplot.close(figure)
        raise ValueError("a figure without a description: draw it with course.plotting, or give show() alt=...")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    pyplot.close(figure)
    display({"image/png": base64.b64encode(buffer.getvalue()).decode("ascii"), "text/plain": text},
            raw=True, metadata={"image/png": {"alt": text}})


def _require(**words: str) -> None:
    empty = [name for name, text in words.items() if not str(text).strip()]
    if empty:
        raise ValueError(f"a course plot needs {', '.join(empty)}")


# Okabe and Ito's colours, told apart with every common colour-vision deficiency (their yellow left out:
# too pale on white), and a marker per series as well, so no series is known by its colour alone
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000")
MARKERS = ("o", "s", "^", "D", "v", "P", "X")


def lines(x: Sequence[float], series: Mapping[str, Sequence[float]], *, title: str, xlabel: str, ylabel: str,
          logx: bool = False, logy: bool = False, marker: str | None = None,
          bands: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None) -> Figure:
    """One line per series against the same x, with a legend, each in a colour and a marker of its own
    (`marker` gives every series the same one). `bands` maps a series' label to (low, high) values at the
    same x, drawn as a shaded band in the line's colour (e.g. the spread over seeds)."""
    _require(title=title, xlabel=xlabel, ylabel=ylabel)
    unknown = sorted(set(bands or {}) - set(series))
    if unknown:
        raise ValueError(f"bands for series that are not drawn: {unknown}")
    figure, axes = pyplot.subplots(figsize=(6.4, 4))
    for index, (label, values) in enumerate(series.items()):
        line, = axes.plot(list(x), list(values), marker=marker or MARKERS[index % len(MARKERS)],
                          color=PALETTE[index % len(PALETTE)], label=label)
        if bands and label in bands:
            low, high = bands[label]
            axes.fill_between(list(x), list(low), list(high), color=line.get_color(), alpha=0.2, linewidth=0)
    axes.set(title=title, xlabel=xlabel, ylabel=ylabel)
    if logx:
        axes.set_xscale("log")
    if logy:
        axes.set_yscale("log")
    axes.grid(True, alpha=0.3)
    if len(series) > 1:
        axes.legend()
    figure.tight_layout()
    figure.set_label(describe_lines(x, series, title=title, xlabel=xlabel, ylabel=ylabel))
    return figure


def bars(labels: Sequence[str], values: Sequence[float], *, title: str, ylabel: str,
         errors: Sequence[float] | None = None) -> Figure:
    """A bar per label, optionally with error bars (e.g. the IQR of timings). Labels are wrapped to the
    width of a bar, so neighbours never run into each other."""
    _require(title=title, ylabel=ylabel)
    figure, axes = pyplot.subplots(figsize=(6.4, 4))
    width = max(6, 56 // max(1, len(labels)))   # characters that fit under one bar at the default size
    shown = ["\n".join(textwrap.fill(line, width) for line in str(label).splitlines()) for label in labels]
    axes.bar(shown, list(values), yerr=list(errors) if errors is not None else None, capsize=4, color=PALETTE[0])
    axes.set(title=title, ylabel=ylabel)
    axes.grid(True, axis="y", alpha=0.3)
    figure.tight_layout()
    figure.set_label(describe_bars(labels, values, title=title, ylabel=ylabel))
    return figure


def image_grid(rows: Sequence[Sequence], *, title: str, row_labels: Sequence[str] | None = None,
               column_labels: Sequence[str] | None = None, cmap: str | None = "gray",
               vmin: float | None = None, vmax: float | None = None) -> Figure:
    """Images in a grid (rows of equal length): e.g. ground truth over prediction, frame by frame.

    Every 2-D (grey) image is drawn on one shared scale, `vmin` to `vmax`, by default the smallest
    and largest value of all of them: panels autoscaled one by one would show a faint prediction as
    bright as the truth. (RGB images are drawn as they are, values in [0, 1].)"""
    _require(title=title)
    count_rows, count_columns = len(rows), max(len(row) for row in rows)
    grey = [np.asarray(image) for row in rows for image in row if getattr(image, "ndim", 2) == 2]
    if grey and vmin is None:
        vmin = min(float(np.min(image)) for image in grey)
    if grey and vmax is None:
        vmax = max(float(np.max(image)) for image in grey)
    figure, axes = pyplot.subplots(count_rows, count_columns, squeeze=False,
                                   figsize=(1.6 * count_columns, 1.7 * count_rows + 0.4))
    for row_index, row in enumerate(rows):
        for column_index in range(count_columns):
            panel = axes[row_index][column_index]
            panel.set_xticks([])
            panel.set_yticks([])
            if column_index < len(row):
                image = row[column_index]
                if getattr(image, "ndim", 2) == 2:
                    panel.imshow(image, cmap=cmap, vmin=vmin, vmax=vmax)
                else:
                    panel.imshow(image)
            if row_labels and column_index == 0:
                panel.set_ylabel(row_labels[row_index])
            if column_labels and row_index == 0 and column_index < len(column_labels):
                panel.set_title(column_labels[column_index], fontsize=9)
    figure.suptitle(title)
    figure.tight_layout()
    figure.set_label(describe_grid(rows, title=title, row_labels=row_labels, column_labels=column_labels,
                                   vmin=vmin if grey else None, vmax=vmax if grey else None, cmap=cmap))
    return figure


def save(figure: Figure, path: str | Path, dpi: int = 110) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=dpi)
    return path
