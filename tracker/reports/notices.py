"""Takedown notice drafts, one per site, from a report of :func:`tracker.reports.build_report`.

Each draft lists the site's infringing URLs seen that day, the master works and chapters (or
articles) each one copies, and the evidence passage found on it (the copied text, the lines
the site inserted into it left out and marked ``[…]``), between placeholders for the rights
holder to fill in. Everything taken from crawled pages (URLs, titles, passages) is hostile: it
is put on one line with control and formatting characters (line breaks, bidi overrides, zero-width
characters, terminal escapes) removed, and passages are quoted, so page text cannot forge or
hide parts of the notice.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from typing import Any

from tracker.formats import plural, when
from tracker.model import ARTICLE, CHAPTER
from tracker.reports.build import INSERTED, UNKNOWN_WORK, chapter_ranges
from tracker.reports.render import FOLDED_CHAPTERS

PLACEHOLDER_SENDER = "[rights holder: name, address, e-mail]"
STATEMENT = (
    "I have a good-faith belief that the use of the material described above is not "
    "authorised by the copyright owner, its agent, or the law. The information in this notice "
    "is accurate, and I am authorised to act on behalf of the owner of the rights infringed."
)


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


def _site_pages(report: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """``site → url → {"copies": [(work, doc_id, title)], "evidence": [...], seen dates}``."""
    sites: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for work in report["works"]:
        titles = {c["doc_id"]: c.get("title") or "" for c in work.get("chapters_found", [])}
        for page in work["pages"]:
            entry = sites[page["site"]].setdefault(
                page["url"],
                {
                    "copies": [],
                    "evidence": [],
                    "first_seen": page["first_seen"],
                    "last_seen": page.get("last_seen") or page["first_seen"],
                },
            )
            entry["first_seen"] = min(entry["first_seen"], page["first_seen"])
            entry["last_seen"] = max(entry["last_seen"], page.get("last_seen") or "")
            for doc_id in page["doc_ids"]:
                entry["copies"].append((work["work"], doc_id, titles.get(doc_id, "")))
            if page.get("evidence"):
                entry["evidence"].append(page["evidence"])
    return sites


def notice(
    site: str,
    pages: dict[str, dict[str, Any]],
    day: str,
    units: dict[str, str] | None = None,
    *,
    sender: str | None = None,
    recipient: str | None = None,
) -> str:
    """The draft notice for one site (``units``: work → ``chapter`` or ``article``); with
    ``sender`` (and ``recipient``) the notice as it is sent (:mod:`tracker.enforcement.notices`):
    no placeholders, each page's evidence capture named (``captured``: its time and payload
    SHA-256)."""
    works = sorted({work for page in pages.values() for work, _, _ in page["copies"]})
    to = f" ({plain(recipient)})" if recipient else ""
    lines = [
        f"{'' if sender else 'DRAFT '}TAKEDOWN NOTICE: copyright infringement on {plain(site)}",
        f"Date: {plain(day)}",
        "",
        f"To: the operator of {plain(site)}, and its hosting provider's abuse contact{to}",
        f"From: {plain(sender) if sender else PLACEHOLDER_SENDER}",
        "",
        "The web pages listed below reproduce, without authorisation, works whose rights we "
        "hold. We ask you to remove them, or to disable access to them, without delay.",
        "",
        f"Infringing pages: {len(pages)}. Works copied: "
        + "; ".join(_work_name(work) for work in works)
        + ".",
    ]
    for number, (url, page) in enumerate(sorted(pages.items()), start=1):
        lines += ["", f"{number}. {plain(url)}"]
        by_work: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for work, doc_id, title in sorted(set(page["copies"])):
            by_work[work].append((doc_id, title))
        for work, chapters in sorted(by_work.items()):
            unit = (units or {}).get(work, CHAPTER)
            if len(chapters) > FOLDED_CHAPTERS:  # a whole book: one line, then the chapters
                numbers = "" if unit == ARTICLE else chapter_ranges(d for d, _ in chapters)
                lines.append(
                    f"   Copies: {plural(len(chapters), unit)} of {_work_name(work)}"
                    + (f" ({plain(numbers)})" if numbers else "")
                    + ":"
                )
                lines += [
                    f"     - {plain(title, 120)} [{plain(doc_id, 120)}]".replace(" []", "")
                    for doc_id, title in chapters
                ]
                continue
            for doc_id, title in chapters:
                shown = f"{_work_name(work)} {plain(title, 120)}".strip()
                lines.append(f"   Copies: {shown} [{plain(doc_id, 120)}]")
        lines.append(f"   Seen: first {plain(page['first_seen'])}, last {plain(page['last_seen'])}")
        if page.get("captured"):
            at, digest = page["captured"]
            lines.append(
                f"   Captured: {plain(at)}, the page as served kept with SHA-256 {plain(digest)}"
            )
        for passage in page["evidence"][:3]:
            lines.append(f"   Evidence, as found on the page: > {plain(passage, 300)}")
    if any(INSERTED in passage for page in pages.values() for passage in page["evidence"]):
        lines += ["", f"{INSERTED} in a passage: a line the site inserted (an ad), left out."]
    lines += ["", STATEMENT, ""]
    if sender:
        lines += [f"Signed: {plain(sender)}", ""]
    else:
        lines += [
            "Signature: [name, title]",
            "",
            "(Drafted by tracker from its daily report; check it before sending.)",
            "",
        ]
    return "\n".join(lines)


def _when(value: str) -> str:
    return plain(when(value))


def _work_name(work: str) -> str:
    return "(unknown work)" if work == UNKNOWN_WORK else f"《{plain(work, 120)}》"


def to_notices(report: dict[str, Any]) -> dict[str, str]:
    """``{site: notice text}`` for every site with infringing pages in ``report``."""
    units = {work["work"]: work.get("unit") or CHAPTER for work in report["works"]}
    return {
        site: notice(site, pages, report["date"], units)
        for site, pages in sorted(_site_pages(report).items())
    }


def notice_file_name(site: str) -> str:
    """A safe file name for a site's notice (host names from pages are hostile too)."""
    safe = re.sub(r"[^a-z0-9.-]+", "_", site.lower()).strip("._-") or "unknown-site"
    return f"notice-{safe[:100]}.txt"
