"""Takedown notice drafts, one per site of a day's report: the notice ``tracker notices send
--site SITE`` would send now (:func:`tracker.enforcement.notices.draft_notice`: the same URLs,
those not noticed within ``notice_repeat_days``, the same template, the same evidence), marked
as a draft, with placeholders for what is not set yet.

Everything taken from crawled pages (URLs, titles, passages) is hostile: a notice is given it
as one line of plain text (:func:`plain`), with control and formatting characters (line breaks,
bidi overrides, zero-width characters, terminal escapes) removed, so page text cannot forge or
hide parts of the notice.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any


def plain(value: Any, limit: int | None = None) -> str:
    """``value`` as one line of visible text: control and format characters (Unicode Cc, Cf)
    dropped, every run of whitespace one space."""
    text = "".join(
        " " if ch.isspace() else ch
        for ch in str(value)
        if ch.isspace() or unicodedata.category(ch) not in ("Cc", "Cf")
    )
    text = re.sub(r" +", " ", text).strip()
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def report_sites(report: dict[str, Any]) -> dict[str, list[str]]:
    """``site → the URLs of its infringing pages`` in ``report``."""
    sites: dict[str, list[str]] = {}
    for work in report.get("works") or ():
        for page in work.get("pages") or ():
            sites.setdefault(str(page.get("site") or ""), []).append(page["url"])
    return {site: sorted(set(urls)) for site, urls in sorted(sites.items()) if site}


def to_notices(
    report: dict[str, Any], db: Any, settings: Any, *, resend: bool = False
) -> dict[str, str]:
    """``{site: draft}`` for every site of ``report``: the notice ``notices send`` would send
    now of the day's pages that still carry a copy (a site whose pages were all noticed lately
    has none, unless ``resend``)."""
    from tracker.enforcement.notices import draft_notice

    drafts = {}
    for site, urls in report_sites(report).items():
        text = draft_notice(db, settings, site, resend=resend, urls=urls)
        if text is not None:
            drafts[site] = text
    return drafts


def notice_file_name(site: str) -> str:
    """A safe file name for a site's notice (host names from pages are hostile too)."""
    safe = re.sub(r"[^a-z0-9.-]+", "_", site.lower()).strip("._-") or "unknown-site"
    return f"notice-{safe[:100]}.txt"
