"""Colours of the code on the course's pages: WCAG 2.1's contrast ratio as course.contrast computes it, the
feedback page's Pygments style (autograder.nbgrader_setup.code_style) and the executed notebooks' page
(course/templates/course_lab), each colour at least 4.5:1 on the code's grey. The pages themselves go
through axe-core in the browser tests."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pygments.styles.default import DefaultStyle

from autograder.nbgrader_setup.code_style import CODE_BACKGROUND, ReadableStyle
from course.contrast import AT_LEAST, HEX, ratio, readable

LAB_TEMPLATE = Path(__file__).resolve().parent.parent / "course" / "templates" / "course_lab" / "index.html.j2"


def test_the_ratio_is_wcags():
    assert ratio("#000000", "#ffffff") == pytest.approx(21.0)
    assert ratio("#fff", "#ffffff") == pytest.approx(1.0)
    assert ratio("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)  # the grey that famously just fails
    assert ratio("#767676", "#ffffff") == pytest.approx(4.54, abs=0.01)  # and the one that passes
    assert ratio("#aa22ff", "#f5f5f5") == ratio("#f5f5f5", "#aa22ff")


def test_readable_keeps_a_colour_that_passes_and_darkens_one_that_does_not_by_the_least_step():
    assert readable("#005500", "#ffffff") == "#005500"
    darker = readable("#aa22ff", "#f5f5f5")
    assert darker != "#aa22ff" and ratio(darker, "#f5f5f5") >= AT_LEAST
    red, green, blue = (int(darker[index:index + 2], 16) for index in (1, 3, 5))
    assert red <= 0xaa and green <= 0x22 and blue <= 0xff and blue > red > green  # the same hue, darker
    one_step_lighter = "#" + "".join(f"{min(255, channel + 1):02x}" for channel in (red, green, blue))
    assert ratio(one_step_lighter, "#f5f5f5") < AT_LEAST + 0.05


def test_every_colour_of_the_feedback_pages_code_is_readable_and_the_passing_ones_unchanged():
    changed = 0
    for token, rule in ReadableStyle.styles.items():
        for part in rule.split():
            if HEX.fullmatch(part):
                assert ratio(part, CODE_BACKGROUND) >= AT_LEAST, (token, rule)
        if rule != DefaultStyle.styles[token]:
            changed += 1
        else:
            assert all(ratio(part, CODE_BACKGROUND) >= AT_LEAST for part in rule.split() if HEX.fullmatch(part))
    assert changed >= 5  # Pygments' default falls short in operator words, exceptions, comments...


def test_every_colour_the_executed_notebooks_page_sets_is_readable_on_the_codes_grey():
    root = re.search(r":root \{(.*?)\}", LAB_TEMPLATE.read_text(encoding="utf-8"), re.DOTALL)
    assert root, "course_lab sets JupyterLab's colours in a :root block"
    colours = re.findall(r"(--jp-[\w-]+-color): (#[0-9a-fA-F]{3,6});", root.group(1))
    assert len(colours) >= 10
    for name, colour in colours:
        assert ratio(colour, "#f5f5f5") >= AT_LEAST, (name, colour, ratio(colour, "#f5f5f5"))
