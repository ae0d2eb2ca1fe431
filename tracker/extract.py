"""Body text and metadata of an HTML page.

Order of extractors, the first that yields text wins and is recorded on the page:

1. ``css`` / ``xpath``: a per-site selector for the body (``sites/*.yaml``), for sites where
   automatic extraction is wrong;
2. ``trafilatura`` (Barbaresi, "Trafilatura: A Web Scraping Library and Command-Line Tool for
   Text Discovery and Extraction", ACL 2021);
3. ``fallback``: the block element with the most direct text, paragraphs kept as lines, for
   the ``<br>``-separated chapter pages trafilatura sometimes returns nothing for;
4. ``none``: no text.

Site boilerplate is removed on the way: navigation, headers, footers, sidebars and ad blocks
before extraction, then whole lines that are pirate ads or watermarks (the patterns of
:func:`tracker.text.normalize.boilerplate_mask`: "最快更新…", "本站域名…", bare site URLs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import lxml.etree
import lxml.html
import trafilatura
from parsel import Selector

from tracker.text.normalize import boilerplate_mask

MAX_HTML_CHARS = 3_000_000
MIN_TEXT_CHARS = 50
_BLOCK_TAGS = ("p", "div", "br", "li", "h1", "h2", "h3", "h4", "tr", "section", "article", "dd")
_BOILERPLATE_XPATH = (
    "//script|//style|//noscript|//nav|//header|//footer|//aside|//form|//iframe"
    "|//*[re:test(concat(' ', @class, ' ', @id, ' '),"
    r" '(^|[\s_-])(nav|navbar|menu|topbar|footer|header|sidebar|breadcrumb|share|related"
    r"|comments?|ads?|advert|banner|copyright)([\s_-]|$)', 'i')]"
)
_NS = {"re": "http://exslt.org/regular-expressions"}
CHAPTER_TITLE = re.compile(
    r"第\s*[0-9０-９零〇一二两三四五六七八九十百千万壹贰叁肆伍陆柒捌玖拾佰仟]+\s*[章回节節卷集部篇]"
)


@dataclass(frozen=True)
class ExtractionRules:
    """Per-site extraction overrides: a body selector and selectors of blocks to drop first."""

    css: str | None = None
    xpath: str | None = None
    remove: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> ExtractionRules | None:
        if not data:
            return None
        return cls(data.get("css"), data.get("xpath"), tuple(data.get("remove") or ()))


@dataclass(frozen=True)
class Extracted:
    text: str
    title: str
    extractor: str  # "css", "xpath", "trafilatura", "fallback" or "none"
    chapter_title: str = ""
    metadata: dict[str, str] = field(default_factory=dict)


def extract(html: str, url: str | None = None, rules: ExtractionRules | None = None) -> Extracted:
    """Extract the body text, title, chapter title and page metadata of ``html``."""
    html = html[:MAX_HTML_CHARS]
    try:
        selector = Selector(text=html or "<html></html>", type="html")
    except (ValueError, lxml.etree.ParserError):
        return Extracted("", "", "none")
    metadata = page_metadata(selector)
    title = metadata.get("h1") or _first_part(metadata.get("title", ""))
    chapter = next(
        (
            t
            for t in (metadata.get("h1", ""), _first_part(metadata.get("title", "")))
            if CHAPTER_TITLE.search(t)
        ),
        "",
    )

    def done(text: str, extractor: str) -> Extracted:
        return Extracted(text, title[:200], extractor, chapter[:200], metadata)

    if rules:
        for expr in rules.remove:
            for element in selector.css(expr):
                element.drop()
        for kind, expr in (("css", rules.css), ("xpath", rules.xpath)):
            if expr:
                found = selector.css(expr) if kind == "css" else selector.xpath(expr)
                text = strip_boilerplate_lines(
                    "\n".join(element_text(s.root) for s in found if hasattr(s.root, "iter"))
                )
                if text:
                    return done(text, kind)
        if rules.remove:
            html = selector.get()
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
    except Exception:  # trafilatura raises assorted errors on hostile markup
        text = ""
    text = strip_boilerplate_lines(text)
    if len(text) >= MIN_TEXT_CHARS:
        return done(text, "trafilatura")
    fallback = strip_boilerplate_lines(_fallback_text(selector))
    if len(fallback) > len(text):
        return done(fallback, "fallback")
    return done(text, "trafilatura" if text else "none")


def page_metadata(selector: Selector) -> dict[str, str]:
    """``title``, ``h1``, and when present ``description``, ``keywords``, ``author``,
    ``published``, ``site_name``, ``canonical``, ``language``."""

    def first(*xpaths: str) -> str:
        for xpath in xpaths:
            value = selector.xpath(f"normalize-space(({xpath})[1])").get() or ""
            if value:
                return value[:500]
        return ""

    found = {
        "title": first("//head/title", "//title"),
        "h1": first("//h1"),
        "description": first("//meta[@name='description']/@content"),
        "keywords": first("//meta[@name='keywords']/@content"),
        "author": first(
            "//meta[@name='author']/@content", "//meta[@property='og:novel:author']/@content"
        ),
        "published": first(
            "//meta[@property='article:published_time']/@content",
            "//meta[@name='pubdate']/@content",
            "//time/@datetime",
        ),
        "site_name": first("//meta[@property='og:site_name']/@content"),
        "canonical": first("//link[@rel='canonical']/@href"),
        "language": first("/html/@lang"),
    }
    return {k: v for k, v in found.items() if v}


def strip_boilerplate_lines(text: str) -> str:
    """``text`` without lines that are mostly pirate ads, watermarks or site URLs."""
    kept = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        mask = boilerplate_mask(line)
        visible = sum(1 for ch in line if not ch.isspace())
        covered = sum(1 for ch, m in zip(line, mask, strict=True) if m and not ch.isspace())
        if visible and covered >= 0.6 * visible:
            continue
        kept.append(line)
    return "\n".join(kept)


def element_text(element: Any) -> str:
    """Text of an lxml element with block elements and ``<br>`` as line breaks."""
    parts: list[str] = []

    def walk(node: Any) -> None:
        tag = node.tag if isinstance(node.tag, str) else ""
        if tag in ("script", "style", "noscript"):
            if node.tail:
                parts.append(node.tail)
            return
        if tag in _BLOCK_TAGS:
            parts.append("\n")
        if node.text and tag:
            parts.append(node.text)
        for child in node:
            walk(child)
        if tag in _BLOCK_TAGS:
            parts.append("\n")
        if node.tail:
            parts.append(node.tail)

    text = element.text or ""
    parts.append(text)
    for child in element:
        walk(child)
    lines = (line.strip() for line in "".join(parts).splitlines())
    return "\n".join(line for line in lines if line)


def _first_part(title: str) -> str:
    """ "第三回 …_红楼梦_笔趣阁" → "第三回 …": page titles append the book and site names."""
    return re.split(r"\s*[_|｜]\s*|\s+-\s+", title, maxsplit=1)[0].strip()


def _fallback_text(selector: Selector) -> str:
    """The text of the element with the most direct text, paragraphs kept as lines."""
    root = selector.root
    if not hasattr(root, "xpath"):
        return ""
    for bad in root.xpath(_BOILERPLATE_XPATH, namespaces=_NS):
        if bad.getparent() is not None:
            bad.drop_tree() if hasattr(bad, "drop_tree") else bad.getparent().remove(bad)
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
    return element_text(best) if best is not None else ""
