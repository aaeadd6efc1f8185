"""Pages made from a student's notebook carry none of the student's active markup.

A feedback page (nbgrader's GenerateFeedback) and the formgrader's view of a submission are rendered
by nbconvert's `HTMLExporter` from the student's own notebook: without this, a student's
`display(HTML('<img src=x onerror=...>'))`, a `<script>` output, or raw HTML with an event handler in a
written answer (a markdown cell) would run in the browser of whoever opens the page, instructors
included. `configure(c)` turns on nbconvert's own sanitising through the exporter's configuration, so
every `HTMLExporter` nbgrader builds under the course's configuration (feedback and formgrader) has it:

- `HTMLExporter.sanitize_html = True`: nbconvert's templates then pass HTML and markdown outputs,
  markdown cells and raw cells through the `clean_html` filter (bleach), and leave JavaScript and
  widget outputs out;
- `HTMLExporter.filters`: `clean_html` is this module's `clean_html`, whose allowlist keeps what a
  student needs to read (paragraphs, headings, lists, tables, images, code, formatted text) where
  nbconvert's own keeps only a few inline tags and would print `<p>` and `<th>` as text; and
  `markdown2html` is `SanitizedMarkdown`, the exporter's own markdown rendering followed by
  `clean_html`, because nbgrader's feedback and formgrade templates render the cells it grades (the
  written answers) and the graders' comments with `markdown2html` alone, not through `clean_html`.

Markup that is not allowed is escaped, so it shows as text (what report.html does with the same
answer): tags outside the allowlist (`<script>`, `<style>`, `<iframe>`, `<svg>`, forms), every
attribute outside it (`onerror`, `onclick`, ...), and URLs that are not http(s), mailto, relative,
or a `data:` image (`javascript:` links lose their target; mistune already renders a markdown
`javascript:` link as `#harmful-link`). Plots stay: PNG and JPEG outputs are `<img>` tags the
template writes itself, an SVG output an `<img>` of a data URL (a script inside an SVG loaded as an
image never runs). Math stays: it is text until MathJax typesets it, and bleach keeps text.
"""

from __future__ import annotations

import re
from typing import Any, cast

import bleach
import jinja2
from bleach.css_sanitizer import ALLOWED_CSS_PROPERTIES, CSSSanitizer
from traitlets.config import Config, LoggingConfigurable

TAGS = frozenset({
    "a", "abbr", "acronym", "b", "blockquote", "br", "caption", "cite", "code", "col", "colgroup", "dd", "del",
    "details", "dfn", "div", "dl", "dt", "em", "figcaption", "figure", "h1", "h2", "h3", "h4", "h5", "h6", "hr",
    "i", "img", "ins", "kbd", "li", "mark", "ol", "p", "pre", "q", "s", "samp", "small", "span", "strike",
    "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "tt", "u", "ul",
    "var",
})
COMMON_ATTRIBUTES = ("class", "id", "title", "style", "align")
ATTRIBUTES = {
    "a": ["href"],
    "img": ["src", "alt", "width", "height"],
    "td": ["colspan", "rowspan"],
    "th": ["colspan", "rowspan", "scope"],
    "col": ["span"],
    "colgroup": ["span"],
    "ol": ["start", "type"],
    "abbr": [], "acronym": [],
}
PROTOCOLS = frozenset({"http", "https", "mailto", "data"})


def _allowed(tag: str, name: str, value: str) -> bool:
    if name not in COMMON_ATTRIBUTES and name not in ATTRIBUTES.get(tag, ()):
        return False
    # A data: URL only as an image (a pasted attachment, an inline plot), never as a link target. The
    # value normalised as bleach does before it checks the protocol (and as browsers read URLs).
    url = re.sub(r"[^\x00-\x7f]", "", re.sub(r"[`\000-\040\177-\240\s]+", "", value)).lower()
    return not url.startswith("data:") or (tag == "img" and name == "src" and url.startswith("data:image/"))


_cleaner = bleach.Cleaner(tags=TAGS, attributes=_allowed, protocols=PROTOCOLS, strip=False, strip_comments=True,
                          css_sanitizer=CSSSanitizer(allowed_css_properties=ALLOWED_CSS_PROPERTIES))


def clean_html(element) -> str:
    """HTML a student wrote or printed, with every active part escaped or dropped (nbconvert's
    `clean_html` filter, with the allowlist above)."""
    text = element.decode() if isinstance(element, bytes) else str(element)
    return _cleaner.clean(text)


class SanitizedMarkdown(LoggingConfigurable):
    """The `markdown2html` filter: the exporter's own (`HTMLExporter.markdown2html`: attachments,
    anchor links, math), then `clean_html`. nbconvert builds it with the exporter as its parent."""

    # A Jinja context filter, as the exporter's own markdown2html is (it reads the cell's attachments). The
    # cast: pass_context's stub returns the function's own type, without the attribute it sets on it.
    jinja_pass_arg = cast(Any, jinja2.pass_context(lambda context: None)).jinja_pass_arg

    def __call__(self, context, source):
        render = getattr(self.parent, "markdown2html", None)
        if render is not None:
            html = render(context, source)
        else:   # an exporter without its own (not an HTMLExporter): nbconvert's plain filter
            from nbconvert.filters import markdown2html
            html = markdown2html(source)
        return clean_html(html)


FILTERS = {"clean_html": f"{__name__}.clean_html", "markdown2html": f"{__name__}.SanitizedMarkdown"}


def configure(c: Config) -> Config:
    """Turn the sanitising on in `c`, keeping any other filter the configuration already adds."""
    c.HTMLExporter.sanitize_html = True
    filters = dict(c.HTMLExporter.filters) if "filters" in c.HTMLExporter else {}
    c.HTMLExporter.filters = {**filters, **FILTERS}
    return c
