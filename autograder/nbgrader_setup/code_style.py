"""Code on a feedback page in colours a reader with low vision can read (WCAG 2.1, success criterion
1.4.3: text at least 4.5 times the luminance contrast of its background).

nbgrader's feedback page highlights code with Pygments' `default` style, whose operator words (`in`,
`not`), exceptions and comments reach 4.39-4.47 on the page's grey code background (#f5f5f5): just short
of the ratio. `ReadableStyle` is that style with every colour that falls short darkened, hue kept,
until it reaches the ratio; the rest is unchanged. The course's configuration makes it the feedback
page's style (`CSSHTMLHeaderPreprocessor.style`, nbgrader_setup.config.configure).
"""

from __future__ import annotations

from pygments.styles.default import DefaultStyle

from course.contrast import HEX, readable

CODE_BACKGROUND = "#f5f5f5"  # the darkest background code sits on in the classic page (.input_area, pre)


def _readable_rule(rule: str) -> str:
    """A Pygments style rule ("bold #AA22FF", "italic #3D7B7B", "bg:#FFF #000") with each foreground colour
    readable; background (`bg:`) and border colours are left as they are."""
    return " ".join(part if not HEX.fullmatch(part) else readable(part, CODE_BACKGROUND) for part in rule.split())


class ReadableStyle(DefaultStyle):
    """Pygments' default style, every foreground colour readable on the page's code background."""

    name = "course-readable"
    styles = {token: _readable_rule(rule) for token, rule in DefaultStyle.styles.items()}
