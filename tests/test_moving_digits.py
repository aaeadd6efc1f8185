"""The physics and the determinism of course.data.moving_digits (the data of 02_convlstm)."""

from __future__ import annotations

import numpy as np
import pytest

from course.data import moving_digits


def single(seed=0, **overrides):
    arguments = dict(steps=12, size=20, digits=1, colour=False, max_speed=2, scale=1, seed=seed)
    arguments.update(overrides)
    return moving_digits.generate(16, **arguments)


# --- the digits ---------------------------------------------------------------------------------

def test_digit_images_are_sklearns_digits_in_the_unit_interval():
    images, labels = moving_digits.digit_images()
    assert images.shape == (1797, 8, 8) and images.dtype == np.float32
    assert labels.shape == (1797,) and set(labels.tolist()) == set(range(10))
    assert images.min() == 0.0 and images.max() == 1.0


def test_digit_images_scale_repeats_each_pixel():
    small, _ = moving_digits.digit_images(1)
    large, _ = moving_digits.digit_images(3)
    assert large.shape == (1797, 24, 24)
    np.testing.assert_array_equal(large[:, ::3, ::3], small)
    np.testing.assert_array_equal(large[:, 2::3, 1::3], small)


def test_digit_images_are_read_only_so_callers_cannot_corrupt_the_cache():
    images, _ = moving_digits.digit_images()
    with pytest.raises(ValueError):
        images[0, 0, 0] = 1.0


# --- shapes and values --------------------------------------------------------------------------

@pytest.mark.parametrize("colour, channels", [(False, 1), (True, 3)])
def test_shapes_dtype_and_range(colour, channels):
    data = moving_digits.generate(5, steps=7, size=18, digits=2, colour=colour, max_speed=3, seed=1)
    assert data.frames.shape == (5, 7, 18, 18, channels) and data.frames.dtype == np.float32
    assert data.positions.shape == data.velocities.shape == (5, 7, 2, 2)
    assert data.labels.shape == (5, 2) and data.colours.shape == (5, 2, channels)
    assert 0.0 <= data.frames.min() and data.frames.max() <= 1.0
    assert data.digit_size == 8 and data.limit == 10


def test_grey_digits_are_drawn_with_their_own_image():
    data = single(seed=3)
    images, labels = moving_digits.digit_images()
    np.testing.assert_array_equal(data.labels, labels[data.indices])
    for sequence in range(len(data.frames)):
        for step in (0, 5, 11):
            row, column = data.positions[sequence, step, 0]
            patch = data.frames[sequence, step, row:row + 8, column:column + 8, 0]
            np.testing.assert_array_equal(patch, images[data.indices[sequence, 0]])


def test_colour_digits_are_their_grey_image_times_their_colour():
    grey, colour = single(seed=4), single(seed=4, colour=True)
    assert colour.colours.min() >= 0.0 and colour.colours.max() <= 1.0
    np.testing.assert_allclose(colour.colours.max(axis=-1), 1.0, atol=1e-6)  # full brightness
    np.testing.assert_array_equal(grey.positions, colour.positions)
    expected = grey.frames * colour.colours[:, None, None, None, 0, :]
    np.testing.assert_allclose(colour.frames, expected, atol=1e-6)


def test_overlapping_digits_keep_the_brightest_pixel():
    data = moving_digits.generate(20, steps=5, size=10, digits=3, colour=True, max_speed=1, seed=5)
    images, _ = moving_digits.digit_images()
    for sequence in range(3):
        for step in range(5):
            canvas = np.zeros((10, 10, 3), dtype=np.float32)
            for digit in range(3):
                row, column = data.positions[sequence, step, digit]
                sprite = images[data.indices[sequence, digit]][:, :, None] * data.colours[sequence, digit]
                window = canvas[row:row + 8, column:column + 8]
                window[...] = np.maximum(window, sprite)
            np.testing.assert_array_equal(data.frames[sequence, step], canvas)


# --- physics ------------------------------------------------------------------------------------

@pytest.mark.parametrize("max_speed", [1, 2, 5])
def test_digits_stay_inside_the_frame(max_speed):
    data = single(seed=7, max_speed=max_speed, steps=40)
    assert data.positions.min() >= 0 and data.positions.max() <= data.limit
    # nothing is clipped: with one digit, every frame holds the same total ink as the first
    ink = data.frames.sum(axis=(2, 3, 4))
    np.testing.assert_allclose(ink, ink[:, :1].repeat(ink.shape[1], axis=1), rtol=1e-5)
    # and no ink lies outside the digit's square
    for sequence in range(len(data.frames)):
        for step in range(data.frames.shape[1]):
            row, column = data.positions[sequence, step, 0]
            outside = data.frames[sequence, step].copy()
            outside[row:row + 8, column:column + 8] = 0
            assert not outside.any(), f"ink outside the digit at sequence {sequence}, frame {step}"


def test_velocity_is_constant_between_walls_and_reflects_at_them():
    data = single(seed=8, max_speed=3, steps=60)
    limit = data.limit
    before, after = data.positions[:, :-1], data.positions[:, 1:]
    velocity, next_velocity = data.velocities[:, :-1], data.velocities[:, 1:]
    free = before + velocity
    inside = (free >= 0) & (free <= limit)
    np.testing.assert_array_equal(after[inside], free[inside])
    np.testing.assert_array_equal(next_velocity[inside], velocity[inside])
    np.testing.assert_array_equal(next_velocity[~inside], -velocity[~inside])
    reflected = np.where(free < 0, -free, 2 * limit - free)
    np.testing.assert_array_equal(after[~inside], reflected[~inside])
    assert (~inside).sum() > 50, "the check needs bounces to mean anything"
    speeds = np.abs(data.velocities)
    np.testing.assert_array_equal(speeds, speeds[:, :1].repeat(speeds.shape[1], axis=1))


def test_velocity_components_are_non_zero_and_bounded():
    data = moving_digits.generate(200, steps=2, size=16, digits=2, max_speed=3, seed=9)
    components = np.abs(data.velocities[:, 0])
    assert components.min() >= 1 and components.max() <= 3
    assert set(np.unique(data.velocities[:, 0]).tolist()) == {-3, -2, -1, 1, 2, 3}


@pytest.mark.parametrize("position, velocity, expected", [
    (2, 1, (3, 1)),     # free flight
    (4, 1, (5, 1)),     # reaching the wall exactly is still inside
    (5, 1, (4, -1)),    # through the far wall: mirrored back, velocity flips
    (4, 3, (3, -3)),    # 4 + 3 = 7 -> 2 * 5 - 7
    (0, -1, (1, 1)),    # through the near wall
    (1, -2, (1, 2)),    # 1 - 2 = -1 -> 1
    (0, 5, (5, 5)),     # the largest allowed speed
])
def test_bounce_examples(position, velocity, expected):
    moved, new_velocity = moving_digits.bounce(np.array([position]), np.array([velocity]), limit=5)
    assert (int(moved[0]), int(new_velocity[0])) == expected


def test_bounce_refuses_speeds_that_would_cross_two_walls():
    with pytest.raises(ValueError, match="limit"):
        moving_digits.bounce(np.array([0]), np.array([6]), limit=5)


# --- determinism ----------------------------------------------------------------------------------

def test_same_seed_same_data():
    first = moving_digits.generate(8, steps=6, size=16, digits=2, colour=True, max_speed=2, seed=11)
    second = moving_digits.generate(8, steps=6, size=16, digits=2, colour=True, max_speed=2, seed=11)
    for name in ("frames", "positions", "velocities", "labels", "colours"):
        np.testing.assert_array_equal(getattr(first, name), getattr(second, name), err_msg=name)


def test_different_seeds_different_data():
    first = moving_digits.generate(8, steps=6, size=16, seed=11)
    second = moving_digits.generate(8, steps=6, size=16, seed=12)
    assert not np.array_equal(first.frames, second.frames)


def test_generation_does_not_touch_numpys_global_random_state():
    np.random.seed(0)
    expected = np.random.random()
    np.random.seed(0)
    moving_digits.generate(4, steps=3, size=12, colour=True, seed=1)
    assert np.random.random() == expected


# --- errors -------------------------------------------------------------------------------------

@pytest.mark.parametrize("arguments, message", [
    (dict(size=7), "does not fit"),
    (dict(size=16, scale=3), "does not fit"),
    (dict(size=10, max_speed=3), "max_speed"),
    (dict(steps=0), "steps"),
    (dict(digits=0), "digits"),
    (dict(max_speed=0), "max_speed"),
    (dict(scale=0), "scale"),
])
def test_bad_arguments_are_refused(arguments, message):
    with pytest.raises(ValueError, match=message):
        moving_digits.generate(2, **arguments)


def test_count_must_be_positive():
    with pytest.raises(ValueError, match="count"):
        moving_digits.generate(0)
