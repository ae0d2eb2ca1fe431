"""Body text of an HTML page: trafilatura first, a plain-text fallback when it finds nothing."""

from __future__ import annotations

import re
from dataclasses import dataclass

import lxml.html
import trafilatura

MAX_HTML_CHARS = 5_000_000
_BLOCK_TAGS = ("p", "div", "br", "li", "h1", "h2", "h3", "h4", "tr", "section", "article")


@dataclass(frozen=True)
class Extracted:
    text: str
    title: str
    extractor: str  # "trafilatura", "fallback" or "none"


def extract(html: str, url: str | None = None) -> Extracted:
    html = html[:MAX_HTML_CHARS]
    title = _title(html)
    try:
        text = (
            trafilatura.extract(
                html,
                url=url,
                include_comments=False,
                include_tables=False,
                favor_recall=True,
                deduplicate=False,
            )
            or ""
        )
    except Exception:
        text = ""
    if len(text.strip()) >= 50:
        return Extracted(text.strip(), title, "trafilatura")
    fallback = _fallback_text(html)
    if len(fallback) > len(text.strip()):
        return Extracted(fallback, title, "fallback")
    return Extracted(text.strip(), title, "trafilatura" if text.strip() else "none")


def _title(html: str) -> str:
    match = re.search(r"<h1[^>]*>(.*?)</h1>", html, re.I | re.S) or re.search(
        r"<title[^>]*>(.*?)</title>", html, re.I | re.S
    )
    if not match:
        return ""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", match.group(1))).strip()[:200]


def _fallback_text(html: str) -> str:
    """The text of the element with the most direct text, paragraphs kept as lines."""
    try:
        root = lxml.html.fromstring(html)
    except (lxml.etree.ParserError, ValueError):
        return ""
    for bad in root.xpath("//script|//style|//noscript|//nav|//header|//footer"):
        bad.drop_tree()
    best, best_len = None, 0
    for element in root.iter(*_BLOCK_TAGS, "body"):
        own = sum(len((child.tail or "").strip()) for child in element) + len(
            (element.text or "").strip()
        )
        own += sum(
            len((child.text_content() or "").strip()) for child in element if child.tag == "p"
        )
        if own > best_len:
            best, best_len = element, own
    if best is None:
        return ""
    for br in best.iter("br"):
        br.tail = "\n" + (br.tail or "")
    for p in best.iter("p"):
        p.tail = "\n" + (p.tail or "")
    lines = (line.strip() for line in best.text_content().splitlines())
    return "\n".join(line for line in lines if line)
