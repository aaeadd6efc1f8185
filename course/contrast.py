"""Colour contrast as WCAG 2.1 measures it (success criterion 1.4.3: text at least 4.5 times the
luminance contrast of its background), and the least darkening that brings a colour there.

Used for the code on the pages the course and the grader write: the executed notebooks' pages
(course/templates/course_lab) and the feedback pages (autograder.nbgrader_setup.code_style).
"""

from __future__ import annotations

import re

AT_LEAST = 4.5
HEX = re.compile(r"#([0-9a-fA-F]{6}|[0-9a-fA-F]{3})")


def _rgb(colour: str) -> tuple[float, float, float]:
    digits = colour.lstrip("#")
    if len(digits) == 3:
        digits = "".join(digit * 2 for digit in digits)
    return tuple(int(digits[index:index + 2], 16) / 255 for index in (0, 2, 4))  # type: ignore[return-value]


def luminance(colour: str) -> float:
    """Relative luminance, as WCAG 2.1 defines it (sRGB channels linearised, then weighted)."""
    def linear(channel: float) -> float:
        return channel / 12.92 if channel <= 0.04045 else ((channel + 0.055) / 1.055) ** 2.4
    red, green, blue = (linear(channel) for channel in _rgb(colour))
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue


def ratio(foreground: str, background: str) -> float:
    """WCAG's contrast ratio of two colours, from 1 (the same) to 21 (black on white)."""
    lighter, darker = sorted((luminance(foreground), luminance(background)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def readable(colour: str, background: str, at_least: float = AT_LEAST) -> str:
    """`colour` when it reaches the ratio on `background`; otherwise the same hue, darkened by the
    least step of 1/255 that reaches it."""
    red, green, blue = _rgb(colour)
    for step in range(256):
        scale = 1 - step / 255
        candidate = "#" + "".join(f"{round(channel * scale * 255):02x}" for channel in (red, green, blue))
        if ratio(candidate, background) >= at_least:
            return colour if step == 0 else candidate
    return "#000000"
