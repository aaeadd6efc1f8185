"""Sphinx configuration of the course's documentation site: `make docs` builds it into build/docs/html/.

The pages are MyST Markdown, so they read as plain Markdown on GitHub as well; every warning is an error
(`-W -n`), so a link to a missing page or heading fails the build (tests/test_docs.py builds it too).
Nothing here reaches the network: no intersphinx, no theme or extension that downloads.
"""

project = "TensorFlow internals: a graded course"
author = "the course's authors"
language = "en"

extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

# Every heading down to #### gets an anchor, GitHub's way, so `page.md#a-heading` links work here and
# on GitHub alike.
myst_heading_anchors = 4

html_theme = "furo"
html_title = "TensorFlow internals course"
html_show_sourcelink = False
html_use_index = False  # no index entries are written: no empty index page
html_copy_source = False
html_show_copyright = False
html_last_updated_fmt = None

# Accessibility (WCAG 2.1 AA, checked by axe-core in tests/browser/test_accessibility.py): code blocks wrap
# instead of scrolling (a scrolling box needs a mouse or a focusable frame), the search page has a
# top-level heading (docs/_templates/search.html), and the sidebar's captions say their heading level.
templates_path = ["_templates"]
html_static_path = ["_static"]
html_css_files = ["readable.css"]


def setup(app):
    from sphinx import addnodes
    from sphinx.writers.html5 import HTML5Translator

    class Translator(HTML5Translator):
        """Sphinx's HTML writer, whose toctree captions (`<p class="caption" role="heading">`) also say
        their level, which a role="heading" needs (ARIA 1.2; axe's aria-required-attr)."""

        def visit_title(self, node):
            if isinstance(node.parent, addnodes.compact_paragraph) and node.parent.get("toctree"):
                self.body.append(self.starttag(node, "p", "", CLASS="caption", ROLE="heading", **{"aria-level": "2"}))
                self.body.append('<span class="caption-text">')
                self.context.append("</span></p>\n")
            else:
                super().visit_title(node)

    app.set_translator("html", Translator, override=True)
    return {"parallel_read_safe": True}
