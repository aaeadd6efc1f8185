"""axe-core over the pages the course and the grader write, in the Chromium the browser tests use.

axe-core is the copy that axe-playwright-python bundles (nothing downloads); it runs the rules of
WCAG 2.0, 2.1 and 2.2 at levels A and AA and Deque's best practices. A page passes with no violation
of serious or critical impact (colour contrast, a missing language, an unlabelled control or image,
a table whose headers name nothing), plus two rules that axe rates moderate but a reader of these
pages meets on every one: headings in order and one top-level heading. Keyboard focus is checked
apart, since axe has no rule for it: the first link or button that Tab reaches shows an outline.

    with pages() as check:
        assert not check(path), ...

Colour contrast is checked on everything but the code cells' input: axe weighs each highlighted token
of a notebook (thousands of spans, 10 s a page), while their colours come from two style sheets only,
the feedback page's Pygments style and the executed notebook page's JupyterLab colours, each of which
tests/test_contrast.py checks colour by colour against the code's background. Outputs, tracebacks
included, are checked here.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from axe_playwright_python.sync_playwright import Axe

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS

TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]
SERIOUS = {"serious", "critical"}
CODE_INPUT = [".input_area", ".jp-CodeMirrorEditor"]  # a code cell's input: the feedback page's, the lab page's
RUN = "([context, options]) => axe.run(context === 'document' ? document : context, options)"
ALWAYS = {"heading-order", "page-has-heading-one"}

# Tab's first stop with no visible focus indicator: neither an outline nor a box shadow
FOCUS = """() => {
  const element = document.activeElement;
  if (!element || element === document.body) return null;
  const style = getComputedStyle(element);
  const outlined = style.outlineStyle !== "none" && parseFloat(style.outlineWidth) > 0;
  return outlined || style.boxShadow !== "none" ? "" : element.outerHTML.slice(0, 120);
}"""


def violations(response: dict) -> list[str]:
    """The violations that fail a page, one line each: rule, impact, what it asks, where."""
    found = []
    for violation in response["violations"]:
        if violation["impact"] in SERIOUS or violation["id"] in ALWAYS:
            where = "; ".join(" ".join(map(str, node["target"])) for node in violation["nodes"][:3])
            found.append(f"{violation['id']} ({violation['impact']}, {len(violation['nodes'])} elements): "
                         f"{violation['help']} at {where}")
    return found


@contextlib.contextmanager
def pages() -> Iterator[Callable[[Path], list[str]]]:
    """A Chromium for a series of pages; `check(path)` opens one and returns what fails it."""
    from playwright.sync_api import sync_playwright

    axe = Axe()
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile, sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True,
            viewport={"width": 1280, "height": 900}, offline=True)

        def check(path: Path) -> list[str]:
            page = context.new_page()
            try:
                page.goto(path.resolve().as_uri())
                page.evaluate(axe.axe_script)
                found = violations(page.evaluate(RUN, ["document", {
                    "runOnly": {"type": "tag", "values": TAGS}, "rules": {"color-contrast": {"enabled": False}},
                    "resultTypes": ["violations"]}]))
                found += violations(page.evaluate(RUN, [{"exclude": CODE_INPUT}, {
                    "runOnly": {"type": "rule", "values": ["color-contrast"]}, "resultTypes": ["violations"]}]))
                page.keyboard.press("Tab")
                unfocused = page.evaluate(FOCUS)
                if unfocused:
                    found.append(f"focus: the first element Tab reaches shows no outline: {unfocused}")
                return [f"{path.name}: {line}" for line in found]
            finally:
                page.close()

        try:
            yield check
        finally:
            context.close()
