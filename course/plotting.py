"""Small matplotlib helpers so every plot in the course has a title, labelled axes and units.

Each function takes the data and the words, draws one figure and returns it; the notebook shows
it (or `save` writes it). Nothing here is global state: no style sheets, no rcParams changes.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
from matplotlib import pyplot
from matplotlib.figure import Figure


def _require(**words: str) -> None:
    empty = [name for name, text in words.items() if not str(text).strip()]
    if empty:
        raise ValueError(f"a course plot needs {', '.join(empty)}")


def lines(x: Sequence[float], series: Mapping[str, Sequence[float]], *, title: str, xlabel: str, ylabel: str,
          logx: bool = False, logy: bool = False, marker: str = "o",
          bands: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None) -> Figure:
    """One line per series against the same x, with a legend. `bands` maps a series' label to (low,
    high) values at the same x, drawn as a shaded band in the line's colour (e.g. the spread over seeds)."""
    _require(title=title, xlabel=xlabel, ylabel=ylabel)
    unknown = sorted(set(bands or {}) - set(series))
    if unknown:
        raise ValueError(f"bands for series that are not drawn: {unknown}")
    figure, axes = pyplot.subplots(figsize=(6.4, 4))
    for label, values in series.items():
        line, = axes.plot(list(x), list(values), marker=marker, label=label)
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
    return figure


def bars(labels: Sequence[str], values: Sequence[float], *, title: str, ylabel: str,
         errors: Sequence[float] | None = None) -> Figure:
    """A bar per label, optionally with error bars (e.g. the IQR of timings). Labels are wrapped to the
    width of a bar, so neighbours never run into each other."""
    _require(title=title, ylabel=ylabel)
    figure, axes = pyplot.subplots(figsize=(6.4, 4))
    width = max(6, 56 // max(1, len(labels)))   # characters that fit under one bar at the default size
    shown = ["\n".join(textwrap.fill(line, width) for line in str(label).splitlines()) for label in labels]
    axes.bar(shown, list(values), yerr=list(errors) if errors is not None else None, capsize=4)
    axes.set(title=title, ylabel=ylabel)
    axes.grid(True, axis="y", alpha=0.3)
    figure.tight_layout()
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
    return figure


def save(figure: Figure, path: str | Path, dpi: int = 110) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=dpi)
    return path
