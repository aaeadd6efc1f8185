"""The HTML pages the grader writes (report.html of a class, the course run's report), rendered from
autoescaped Jinja2 templates in autograder/templates/ that share one base page and one style."""

from __future__ import annotations

import jinja2

_ENVIRONMENT = jinja2.Environment(loader=jinja2.PackageLoader("autograder", "templates"),
                                  autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def render(template: str, **values) -> str:
    """A page from its template; every value is HTML-escaped unless a template says otherwise."""
    return _ENVIRONMENT.get_template(template).render(**values)
