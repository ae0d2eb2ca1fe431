"""The project's one way to HTML: Jinja2 templates, autoescaped, from one environment.

Everything the tracker shows in a browser is drawn here, by templates under ``templates/``:

* ``layout.html``: the page frame the report and the console both extend;
* ``charts.html``: the ``draw`` macro, an inline SVG chart from the geometry of
  :mod:`tracker.reports.charts` (the report's and the console's charts are the same);
* ``macros.html``: what both show alike (a link that is one only for http(s) URLs, what a
  page copies);
* ``report/``: the daily HTML report (:func:`tracker.reports.render.to_html`), one
  self-contained file: its style inline, no script, a Content-Security-Policy that forbids
  scripts and every load;
* ``console/``: the web console's pages (:mod:`tracker.console.views`).

``static/tracker.css`` is the style both share (the CJK font stack, tables, cards, charts): the
report inlines it, the console serves it at ``/static/shared/tracker.css``.

Titles, URLs and passages come from crawled pages and are hostile. Autoescaping is on for every
template and for templates made from strings; no template marks a value safe, and no Python
module writes HTML in strings (``tests/test_html_guard.py`` fails on either). The project's
filters are registered once, here: ``when`` (a time, in the ``display_timezone`` the template
is given, else UTC), ``count`` (thousands separators),
``pct`` (a share as a percentage), ``score`` (three decimals), ``plural`` (``3 chapters``),
``http`` (whether a URL may be a link) and ``pretty`` (indented JSON).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracker.formats import count, is_number, plural, share, when, zone_label

if TYPE_CHECKING:
    from jinja2 import Environment

HERE = Path(__file__).parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"


@cache
def environment() -> Environment:
    """The Jinja2 environment every template is rendered with (made once per process)."""
    from jinja2 import Environment, FileSystemLoader  # only what renders HTML pays for it

    env = Environment(
        loader=FileSystemLoader([TEMPLATES, STATIC]),  # static: the shared CSS, inlined
        autoescape=True,  # every template, whatever its name, and templates from strings
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        when=lambda moment: when(moment, DISPLAY_ZONE.get()),
        count=lambda v: count(v) if is_number(v) else "-",
        pct=share,
        score=lambda v: f"{float(v):.3f}" if is_number(v) else "-",
        plural=plural,
        http=lambda v: isinstance(v, str) and is_http_url(v),
        pretty=lambda v: json.dumps(v, ensure_ascii=False, indent=2, default=str),
    )
    env.globals["display_zone"] = lambda: zone_label(DISPLAY_ZONE.get() or "UTC")
    return env


#: The time zone the ``when`` filter writes times in while a page is drawn (None: UTC), a
#: context variable so that the macros imported without context see it too.
DISPLAY_ZONE: ContextVar[str | None] = ContextVar("display_zone", default=None)


@contextmanager
def display_zone(name: str | None) -> Iterator[None]:
    """Times drawn within are written in the time zone ``name`` (``display_timezone``)."""
    token = DISPLAY_ZONE.set(name or None)
    try:
        yield
    finally:
        DISPLAY_ZONE.reset(token)


def render(template: str, zone: str | None = None, **context: Any) -> str:
    """``template`` (a path under ``templates/``) rendered with ``context``, its times in the
    time zone ``zone`` (None: UTC)."""
    with display_zone(zone):
        return environment().get_template(template).render(**context)


def is_http_url(url: str) -> bool:
    """Whether ``url`` may be a link: http(s) only (never javascript:, data:, …)."""
    return url[:8].lower().startswith(("http://", "https://"))
