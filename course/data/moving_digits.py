"""Moving digits: short videos of handwritten digits bouncing around a frame, made offline.

The digits are scikit-learn's bundled 8x8 handwritten digits (`sklearn.datasets.load_digits`,
1797 images that ship inside the wheel: nothing is downloaded). Each sequence places `digits` of
them in a `size` x `size` frame and moves each one with a constant integer velocity for `steps`
frames; a digit that would leave the frame bounces off the wall like a billiard ball (the velocity
component that hits the wall changes sign, the digit is reflected back inside). This is the
Moving MNIST recipe, small enough to train a ConvLSTM on a laptop CPU.

    data = moving_digits.generate(64, steps=10, size=16, digits=2, colour=True, seed=0)
    data.frames.shape        # (64, 10, 16, 16, 3), float32 in [0, 1]

Everything is a pure function of its arguments: the same seed gives the same data.
"""

from __future__ import annotations

import colorsys
import functools
from dataclasses import dataclass

import numpy as np

DIGIT_PIXELS = 8  # sklearn's digits are 8x8 images with values 0..16


@dataclass(frozen=True)
class MovingDigits:
    """One generated data set; every array's first axis is the sequence.

    - `frames`      (count, steps, size, size, channels) float32 in [0, 1]; channels is 3 in colour, else 1
    - `positions`   (count, steps, digits, 2) int: (row, column) of each digit's top-left pixel per frame
    - `velocities`  (count, steps, digits, 2) int: each digit's velocity at that frame, in pixels per frame;
                    `positions[:, t + 1]` is `positions[:, t] + velocities[:, t]`, reflected at the walls
    - `indices`     (count, digits) int: which of `digit_images()` each one is
    - `labels`      (count, digits) int: which digit (0-9) each one is
    - `colours`     (count, digits, channels) float32: each digit's colour (all ones in grey)
    """

    frames: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    indices: np.ndarray
    labels: np.ndarray
    colours: np.ndarray
    digit_size: int

    @property
    def limit(self) -> int:
        """The largest top-left coordinate a digit can have: frame size minus digit size."""
        return self.frames.shape[2] - self.digit_size


@functools.lru_cache(maxsize=4)
def _digits(scale: int) -> tuple[np.ndarray, np.ndarray]:
    from sklearn import datasets

    bunch = datasets.load_digits()
    images = (bunch.images / 16.0).astype(np.float32)
    if scale > 1:
        images = np.kron(images, np.ones((1, scale, scale), dtype=np.float32))
    images.setflags(write=False)
    labels = bunch.target.astype(np.int64)
    labels.setflags(write=False)
    return images, labels


def digit_images(scale: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """sklearn's digits as float32 images in [0, 1], each pixel repeated `scale` times per axis.

    Returns `(images, labels)` of shapes (1797, 8 * scale, 8 * scale) and (1797,); read-only arrays.
    """
    if not isinstance(scale, (int, np.integer)) or scale < 1:
        raise ValueError(f"scale must be a positive integer, got {scale!r}")
    return _digits(int(scale))


def bounce(positions: np.ndarray, velocities: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """One step of motion in [0, limit] with reflecting walls, elementwise on integer arrays.

    A coordinate that would go below 0 or above `limit` is mirrored back inside and its velocity
    changes sign; a coordinate that stays inside keeps its velocity. Needs |velocity| <= limit, so
    a step crosses at most one wall.
    """
    positions = np.asarray(positions)
    velocities = np.asarray(velocities)
    if np.any(np.abs(velocities) > limit):
        raise ValueError(f"every |velocity| must be at most limit={limit}, got {np.abs(velocities).max()}")
    moved = positions + velocities
    below, above = moved < 0, moved > limit
    moved = np.where(below, -moved, moved)
    moved = np.where(above, 2 * limit - moved, moved)
    velocities = np.where(below | above, -velocities, velocities)
    return moved, velocities


def _colours(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Bright, saturated colours: a uniform hue, saturation in [0.7, 1], full value."""
    hues = rng.uniform(0.0, 1.0, size=shape)
    saturations = rng.uniform(0.7, 1.0, size=shape)
    flat = [colorsys.hsv_to_rgb(hue, saturation, 1.0) for hue, saturation in zip(hues.ravel(), saturations.ravel())]
    return np.asarray(flat, dtype=np.float32).reshape(shape + (3,))


def generate(count: int, *, steps: int = 10, size: int = 16, digits: int = 1, colour: bool = False,
             max_speed: int = 1, scale: int = 1, seed: int = 0) -> MovingDigits:
    """`count` sequences of `steps` frames with `digits` bouncing digits each.

    - `size`: the frame is `size` x `size` pixels; each digit is `8 * scale` pixels square and must fit
    - `max_speed`: each velocity component is a non-zero integer in [-max_speed, max_speed]
      pixels per frame, drawn once per digit (it only changes sign at the walls)
    - `colour`: three channels, each digit drawn in its own colour; otherwise one grey channel
    - where digits overlap, each pixel keeps the brightest value (per channel)

    Deterministic: the same arguments give the same arrays.
    """
    for name, value in (("count", count), ("steps", steps), ("digits", digits), ("max_speed", max_speed)):
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    images, labels = digit_images(scale)
    digit_size = images.shape[1]
    limit = size - digit_size
    if limit < 0:
        raise ValueError(f"a {digit_size}-pixel digit does not fit in a {size}-pixel frame")
    if max_speed > limit:
        raise ValueError(f"max_speed={max_speed} exceeds the room to move ({limit} pixels in a {size}-pixel "
                         f"frame with {digit_size}-pixel digits)")

    rng = np.random.default_rng(seed)
    chosen = rng.integers(0, len(images), size=(count, digits))
    positions = np.empty((count, steps, digits, 2), dtype=np.int64)
    velocities = np.empty((count, steps, digits, 2), dtype=np.int64)
    positions[:, 0] = rng.integers(0, limit + 1, size=(count, digits, 2))
    speeds = rng.integers(1, max_speed + 1, size=(count, digits, 2))
    signs = rng.choice(np.array([-1, 1]), size=(count, digits, 2))
    velocities[:, 0] = speeds * signs
    for step in range(1, steps):
        positions[:, step], velocities[:, step] = bounce(positions[:, step - 1], velocities[:, step - 1], limit)

    channels = 3 if colour else 1
    colours = _colours(rng, (count, digits)) if colour else np.ones((count, digits, 1), dtype=np.float32)
    frames = np.zeros((count, steps, size, size, channels), dtype=np.float32)
    for sequence in range(count):
        for digit in range(digits):
            sprite = images[chosen[sequence, digit]][:, :, None] * colours[sequence, digit]
            for step in range(steps):
                row, column = positions[sequence, step, digit]
                window = frames[sequence, step, row:row + digit_size, column:column + digit_size]
                np.maximum(window, sprite, out=window)
    return MovingDigits(frames=frames, positions=positions, velocities=velocities,
                        indices=chosen, labels=labels[chosen], colours=colours, digit_size=digit_size)
