"""Body text and metadata of an HTML page.

Order of extractors; the one that wins is recorded on the page:

1. ``css`` / ``xpath``: a per-site selector for the body (``sites/*.yaml``), for sites where
   automatic extraction is wrong; wins with any text;
2. a publishing platform recognised by its markup (``wechat``: WeChat official-account
   articles keep their body in ``#js_content``, hidden until the page's scripts run, and
   automatic extraction returns the account's profile blurb instead); wins with
   ``MIN_TEXT_CHARS`` characters;
3. ``trafilatura`` (Barbaresi, "Trafilatura: A Web Scraping Library and Command-Line Tool for
   Text Discovery and Extraction", ACL 2021); wins with ``MIN_TEXT_CHARS`` characters;
4. short of that, ``fallback``: the block element with the most text of its own, paragraphs
   kept as lines (the ``<br>``-separated chapter pages trafilatura sometimes returns nothing
   for), when its text is longer than trafilatura's; else trafilatura's short text, still
   recorded as ``trafilatura``;
5. ``none``: neither found any text.

What a reader would not see is dropped first: elements hidden by CSS, with the text of
``::before``/``::after`` put in (:mod:`tracker.reading.visibility`). A forum thread gives the
text of all its posts (:mod:`tracker.reading.posts`): a platform's posts (Discuz!, Tieba…)
right after the platform bodies above, repeated post containers when trafilatura kept one of
them. A chapter or thread read over several pages (:class:`PageContext`) is extracted page by
page and joined, and characters a web font draws at Private-Use code points are decoded when
the font was (:mod:`tracker.reading.webfont`).

Site boilerplate is removed on the way: navigation, headers, footers, sidebars and ad blocks
before extraction, then whole lines that are pirate ads or watermarks (the patterns of
:func:`tracker.text.normalize.boilerplate_mask`: "最快更新…", "本站域名…", bare site URLs).

**Article or list.** Whether a page is an article is decided on its extracted main text, not
on the whole page: portal articles sit among navigation, hot lists and recommendations that
often make up most of the page's text (link densities of 51–73% on real portal pages), while
their body is intact. The text's lines are compared with the page's link texts: a line that is
mostly link text (a title in a list, "上一章 目录 下一章") is not prose. A page whose main text
holds ``MIN_PROSE_CHARS`` of prose is an article; one short of it whose text is mostly link
lines is a list (catalogue, chapter list, tag page); see :attr:`Extracted.is_list`.
"""

from __future__ import annotations

import functools
import re
import threading
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import lxml.etree
import lxml.html
import numpy as np
from lxml.html import builder as E
from parsel import Selector

from tracker.fingerprints.simhash import Votes, votes_normalized
from tracker.model import content_hash, site_key
from tracker.reading.locator import BodyLocators
from tracker.reading.posts import platform_posts, posts_text, repeated_posts, with_posts
from tracker.reading.visibility import show_visible
from tracker.text.chapters import CHAPTER_NUMBER
from tracker.text.normalize import NormalizedText, boilerplate_mask, codepoints, normalize

MAX_HTML_CHARS = 3_000_000
MIN_TEXT_CHARS = 50
#: Prose in the main text that makes a page an article whatever surrounds it: a short news
#: item has 200+ characters (the shortest article body of the real-page fixtures has 126).
MIN_PROSE_CHARS = 150
#: A prose line has at least this many characters (titles, dates, bylines and menu entries
#: are shorter) and at most half of it is link text.
MIN_PROSE_LINE = 16
#: Short of prose, a main text with more than this share in link lines is a list page.
MAX_LINK_TEXT_SHARE = 0.5
_LINK_GRAM = 4  # link text is recognised by its character 4-grams
_PLATFORM_BODIES = (("wechat", "//div[@id='js_content']"),)
# Browsers put whatever follows a stray </body> or </html> (pages stitched from included
# fragments) into the body; lxml would leave it outside, unseen by the extractors.
_CLOSING_TAGS = re.compile(r"</(?:body|html)\s*>", re.I)
_BLOCK_TAGS = ("p", "div", "br", "li", "h1", "h2", "h3", "h4", "tr", "section", "article", "dd")
_BOILERPLATE_XPATH = (
    "//script|//style|//noscript|//nav|//header|//footer|//aside|//form|//iframe"
    "|//*[re:test(concat(' ', @class, ' ', @id, ' '),"
    r" '(^|[\s_-])(nav|navbar|menu|topbar|footer|header|sidebar|breadcrumb|share|related"
    r"|comments?|ads?|advert|banner|copyright)([\s_-]|$)', 'i')]"
)
_NS = {"re": "http://exslt.org/regular-expressions"}
#: Private-Use code points: the BMP's area and planes 15-16, where web fonts put glyphs.
PRIVATE_USE = re.compile("[\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd]")


def has_private_use(text: str) -> bool:
    """Whether ``text`` holds a Private-Use character (:data:`PRIVATE_USE`): one vector test
    of its code points, ~10x faster than the regular expression on a chapter page (asked of
    every page the crawl reads)."""
    codes = codepoints(text)
    bmp = (codes - np.uint32(0xE000)) < np.uint32(0xF900 - 0xE000)  # wraps below U+E000
    return bool(bmp.any() or (codes >= np.uint32(0xF0000)).any())


#: The same written as character references (``&#xe3a1;``, ``&#58273;``).
_PRIVATE_USE_ENTITY = re.compile(r"&#(?:[xX][eEfF][0-9a-fA-F]{3}|5[7-9]\d{3}|6[0-3]\d{3});")


@dataclass(frozen=True)
class ExtractionRules:
    """Per-site extraction overrides: a body selector and selectors of blocks to drop first."""

    css: str | None = None
    xpath: str | None = None
    remove: tuple[str, ...] = ()
    articles: bool = False  # the site file names its content pages: never taken for lists

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> ExtractionRules | None:
        if not data:
            return None
        return cls(
            data.get("css"),
            data.get("xpath"),
            tuple(data.get("remove") or ()),
            bool(data.get("articles")),
        )


@dataclass(frozen=True)
class Extracted:
    text: str
    title: str
    extractor: str  # "css", "xpath", "wechat", "trafilatura", "fallback" or "none"
    chapter_title: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    prose_chars: int = 0  # characters of prose in ``text``, counted up to MIN_PROSE_CHARS
    link_chars: int = 0  # characters of ``text`` in lines that are mostly link text
    #: What reading took (counts: hidden elements, pseudo-element texts, posts, parts,
    #: Private-Use characters and those decoded); see :func:`read_document`.
    reading: dict[str, int] = field(default_factory=dict)
    #: The main text was read by the site's learned body locator (:mod:`tracker.reading.locator`)
    located: bool = False

    @property
    def is_list(self) -> bool:
        """A catalogue, chapter list or tag page: short of prose, its text mostly link lines."""
        if self.prose_chars >= MIN_PROSE_CHARS:
            return False
        return self.link_chars > MAX_LINK_TEXT_SHARE * len("".join(self.text.split()))


@dataclass(frozen=True)
class PageContext:
    """What reading a page takes besides its own HTML, gathered by the crawl: the further
    pages of a chapter or thread split over several (``(url, html)`` in order), the text of
    the same-site stylesheets the pages link (by absolute URL), and the characters a web
    font draws at Private-Use code points."""

    parts: tuple[tuple[str, str], ...] = ()
    stylesheets: dict[str, str] = field(default_factory=dict)
    glyphs: dict[int, str] = field(default_factory=dict)


def extract(
    html: str,
    url: str | None = None,
    rules: ExtractionRules | None = None,
    context: PageContext | None = None,
    locators: BodyLocators | None = None,
) -> Extracted:
    """Extract the body text, title, chapter title and page metadata of ``html`` as a reader
    sees it: without what the page's CSS and the same-site sheets of ``context`` hide, and
    with the Private-Use characters its web font draws (``context.glyphs``) decoded.
    ``reading`` counts what that took (``hidden``, ``pseudo``, ``pua``, ``pua_decoded``…).
    With ``locators`` (a crawl's), trafilatura's text may come from the site's learned body
    element instead (:mod:`tracker.reading.locator`)."""
    return _extract(html, url, rules, context, locators)[0]


#: The boilerplate mask of an extracted text (``boilerplate_mask(text)``), when extraction
#: computed it while dropping the ad lines; None when it did not.
AdMask = np.ndarray | None
_NO_AD = np.zeros(1, dtype=bool)


def _extract(
    html: str,
    url: str | None,
    rules: ExtractionRules | None,
    context: PageContext | None,
    locators: BodyLocators | None,
) -> tuple[Extracted, AdMask]:
    """:func:`extract`, and the boilerplate mask of its text (normalising the text, the
    crawl's next step, takes it rather than scan the text again)."""
    html = _CLOSING_TAGS.sub("", html[:MAX_HTML_CHARS])
    try:
        selector = Selector(text=html, type="html")  # an empty page is an empty document
    except (ValueError, lxml.etree.ParserError):
        return Extracted("", "", "none"), np.zeros(0, dtype=bool)
    context = context or PageContext()
    visibility = show_visible(selector.root, context.stylesheets, url)
    reading = visibility.counts()
    changed = visibility.changed
    if has_private_use(html) or _PRIVATE_USE_ENTITY.search(html):
        private, decoded = decode_private_use(selector.root, context.glyphs)
        reading.update({k: v for k, v in (("pua", private), ("pua_decoded", decoded)) if v})
        changed = changed or decoded > 0
    if changed:
        html = selector.get()
    metadata = page_metadata(selector)
    grams = link_grams(selector)  # before the selector's tree is pruned below
    title = metadata.get("h1") or _first_part(metadata.get("title", ""))
    chapter = next(
        (
            t
            for t in (metadata.get("h1", ""), _first_part(metadata.get("title", "")))
            if CHAPTER_NUMBER.search(t)
        ),
        "",
    )

    located = False

    def done(stripped: tuple[str, AdMask], extractor: str) -> tuple[Extracted, AdMask]:
        text, mask = stripped
        prose, links = prose_and_link_chars(text, grams)
        extracted = Extracted(
            text, title[:200], extractor, chapter[:200], metadata, prose, links, reading, located
        )
        return extracted, mask

    if rules:
        for expr in rules.remove:
            for element in selector.css(expr):
                element.drop()
        for kind, expr in (("css", rules.css), ("xpath", rules.xpath)):
            if expr:
                found = selector.css(expr) if kind == "css" else selector.xpath(expr)
                stripped = _strip_ad_lines(
                    "\n".join(element_text(s.root) for s in found if hasattr(s.root, "iter"))
                )
                if stripped[0]:
                    return done(stripped, kind)
        if rules.remove:
            html = selector.get()
    for platform, expr in _PLATFORM_BODIES:
        found = selector.xpath(expr)
        if found:
            stripped = _strip_ad_lines("\n".join(element_text(s.root) for s in found))
            if len(stripped[0]) >= MIN_TEXT_CHARS:
                return done(stripped, platform)
    forum = platform_posts(selector.root, html)
    if forum is not None:
        stripped = _strip_ad_lines(posts_text(forum[1], element_text))
        if len(stripped[0]) >= MIN_TEXT_CHARS:
            reading["posts"] = len(forum[1])
            return done(stripped, forum[0])
    if locators is not None and url:
        text, located = locators.read(
            site_key(url), selector.root, lambda: trafilatura_text(html, url), element_text
        )
    else:
        text = trafilatura_text(html, url)
    stripped = _strip_ad_lines(text)
    text = stripped[0]
    posts = repeated_posts(selector.root) if text else []
    if posts:  # trafilatura may have kept one post of a thread
        joined = with_posts(text, strip_boilerplate_lines(posts_text(posts, element_text)))
        if joined is not None:
            reading["posts"] = len(posts)
            return done((joined, None), "posts")
    if len(text) >= MIN_TEXT_CHARS:
        return done(stripped, "trafilatura")
    fallback = _strip_ad_lines(_fallback_text(selector))
    if len(fallback[0]) > len(text):
        return done(fallback, "fallback")
    return done(stripped, "trafilatura" if text else "none")


def trafilatura_text(html: str, url: str | None) -> str:
    """trafilatura's main text of ``html`` (its fast path: no external fallbacks), "" when it
    finds none or fails."""
    # Imported here: a crawl process only parses pages (its extraction workers preload it),
    # and importing trafilatura costs a third of a second of its start-up.
    import trafilatura

    try:
        return (
            trafilatura.extract(
                html,
                url=url,
                include_comments=False,
                include_tables=False,
                favor_recall=True,
                deduplicate=False,
                fast=True,
            )
            or ""
        )
    except Exception:  # trafilatura raises assorted errors on hostile markup
        return ""


class ExtractedPage(NamedTuple):
    """What a crawl's extraction worker sends back for a page."""

    extracted: Extracted
    normalized: NormalizedText  # of ``extracted.text``
    votes: Votes  # of ``normalized``'s words
    content_hash: str  # of ``extracted.text`` (:func:`tracker.model.content_hash`)

    @property
    def simhash(self) -> int:
        return self.votes.fingerprint


def read_document(
    html: str,
    url: str | None = None,
    rules: ExtractionRules | None = None,
    context: PageContext | None = None,
    locators: BodyLocators | None = None,
) -> Extracted:
    """:func:`extract` of a page and of its further parts (``context.parts``), their texts
    joined in order (title, chapter title and metadata are the first page's); ``reading``
    adds up what each page's extraction counted, and ``parts``: the pages read."""
    return _read_document(html, url, rules, context, locators)[0]


def _read_document(
    html: str,
    url: str | None,
    rules: ExtractionRules | None,
    context: PageContext | None,
    locators: BodyLocators | None,
) -> tuple[Extracted, AdMask]:
    """:func:`read_document`, and the boilerplate mask of its text: the parts' masks joined
    as their texts are (the mask is line by line), when every part's is known."""
    first, mask = _extract(html, url, rules, context, locators)
    if context is None or not context.parts:
        return first, mask
    counts: Counter[str] = Counter(first.reading)
    texts, prose, links = [first.text], first.prose_chars, first.link_chars
    masks = [mask]
    for part_url, part_html in context.parts:
        part, mask = _extract(part_html, part_url, rules, context, locators)
        counts.update(part.reading)
        texts.append(part.text)
        masks.append(mask)
        prose, links = prose + part.prose_chars, links + part.link_chars
    counts["parts"] = 1 + len(context.parts)
    text = "\n".join(t for t in texts if t)
    joined = None
    if all(m is not None for m in masks):  # a False for each line break between parts
        pieces = [x for t, m in zip(texts, masks, strict=True) if t for x in (_NO_AD, m)]
        joined = np.concatenate(pieces[1:]) if pieces else _NO_AD[:0]
    extracted = replace(first, text=text, prose_chars=prose, link_chars=links, reading=dict(counts))
    return extracted, joined


def extract_normalized(
    html: str,
    url: str | None = None,
    rules: ExtractionRules | None = None,
    context: PageContext | None = None,
    locators: BodyLocators | None = None,
) -> ExtractedPage:
    """:func:`read_document`, its text normalised, the SimHash votes of that and the text's
    digest: a crawl's extraction worker does it all, on another core than the crawl process
    (the arrays cost less to send back than to compute there, and the crawl process's threads
    share one GIL). When the site's boilerplate lines are dropped from the text later
    (:mod:`pipelines.boilerplate`), their votes are taken from these."""
    extracted, ad_mask = _read_document(html, url, rules, context, locators)
    normalized = normalize(extracted.text, boilerplate=ad_mask)
    return ExtractedPage(
        extracted, normalized, votes_normalized(normalized), content_hash(extracted.text)
    )


class ExtractionFailed(Exception):
    """A page's extraction raised (its error's type and message: any error pickles as this)."""


#: A page to extract: its HTML, URL, the site's extraction rules and what else reading it
#: takes (its further parts, stylesheets, a web font's glyphs), when anything.
PageSource = tuple[str, str | None, ExtractionRules | None, PageContext | None]


#: The body locators a crawl's extraction process has learned (its lifetime is the crawl's).
CRAWL_LOCATORS = BodyLocators()


def extract_pages(
    pages: list[PageSource], learn: bool = False
) -> list[ExtractedPage | ExtractionFailed]:
    """:func:`extract_normalized` of each page, a crawl's batch of them in one call to its
    extraction worker; a page whose extraction raises gets its own :class:`ExtractionFailed`
    (hostile markup must not fail the rest of the batch). With ``learn``, the process's
    :data:`CRAWL_LOCATORS` read the pages of sites whose body element they learned."""
    results: list[ExtractedPage | ExtractionFailed] = []
    locators = CRAWL_LOCATORS if learn else None
    for html, url, rules, context in pages:
        try:
            results.append(extract_normalized(html, url, rules, context, locators))
        except Exception as exc:
            results.append(ExtractionFailed(f"{type(exc).__name__}: {exc}"))
    return results


#: Text to warm up with: long enough to be extracted, segmented and looked up whole.
WARM_UP_TEXT = "\n".join(
    ["那日天气晴好，他一早便出了城门，沿着河岸慢慢走去，看见远处的山上还有些积雪。"] * 6
)


def _warm_up_page() -> str:
    """A chapter page of :data:`WARM_UP_TEXT`, its lines parted by ``<br>`` (built by lxml)."""
    content = E.DIV(id="content")
    for i, line in enumerate(WARM_UP_TEXT.split("\n")):
        if i:
            content.append(E.BR())
            content[-1].tail = line
        else:
            content.text = line
    head = E.HEAD(E.META(charset="utf-8"), E.TITLE("第一章 初到"))
    page = E.HTML(head, E.BODY(E.H1("第一章 初到"), content))
    return lxml.html.tostring(page, encoding="unicode")


#: A chapter page of :data:`WARM_UP_TEXT` (see :func:`warm_up`).
WARM_UP_PAGE = _warm_up_page()


def warm_up() -> int:
    """Extract, normalise and hash :data:`WARM_UP_PAGE` once, loading what a first page would
    (trafilatura's tables, the segmenter's dictionary: ~0.2 s); its SimHash. A crawl's
    extraction workers run it when they start, before its first page arrives."""
    return extract_normalized(WARM_UP_PAGE).simhash


def decode_private_use(root: Any, glyphs: dict[int, str]) -> tuple[int, int]:
    """Put the characters ``glyphs`` decodes in place of the Private-Use characters in the
    text of ``root`` (changed in place; scripts and styles left alone); how many there were
    and how many were decoded. The undecoded ones stay: they are no text a reader can read
    either, and extraction and normalisation leave them out (trafilatura drops characters
    that are not printable), so the copy around them still matches."""
    private = decoded = 0

    def fix(text: str) -> str:
        nonlocal private, decoded
        found = len(PRIVATE_USE.findall(text))
        if not found:
            return text
        private += found
        if glyphs:
            text = text.translate(glyphs)
            decoded += found - len(PRIVATE_USE.findall(text))
        return text

    for element in root.iter():
        tag = element.tag if isinstance(element.tag, str) else ""
        if element.text and tag not in ("script", "style"):
            element.text = fix(element.text)
        if element.tail:
            element.tail = fix(element.tail)
    return private, decoded


@functools.cache
def _first_text(xpath: str) -> lxml.etree.XPath:
    """The normalised text of the first node ``xpath`` selects, as a compiled XPath."""
    return lxml.etree.XPath(f"normalize-space(({xpath})[1])")


def page_metadata(selector: Selector) -> dict[str, str]:
    """``title``, ``h1``, and when present ``description``, ``keywords``, ``author``,
    ``published``, ``site_name``, ``canonical``, ``language``."""

    root = selector.root  # compiled lxml XPath: parsel's compiles each and wraps its result

    def first(*xpaths: str) -> str:
        for xpath in xpaths:
            value = str(_first_text(xpath)(root))
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


def link_grams(selector: Selector) -> set[str]:
    """Character 4-grams of the page's link texts (whitespace removed); link texts shorter
    than a 4-gram are kept whole."""
    grams: set[str] = set()
    # lxml's elements, not parsel's: a Selector and an XPath call per link cost 1.6 ms a page
    for anchor in selector.root.xpath("//a"):
        flat = "".join("".join(anchor.itertext()).split())
        if len(flat) < _LINK_GRAM:
            if flat:
                grams.add(flat)
            continue
        grams.update(flat[i : i + _LINK_GRAM] for i in range(len(flat) - _LINK_GRAM + 1))
    return grams


def prose_and_link_chars(text: str, grams: set[str]) -> tuple[int, int]:
    """Characters of ``text`` in prose lines (counted until ``MIN_PROSE_CHARS`` is reached)
    and in link lines (lines with more than half their characters covered by 4-grams of the
    page's link texts, or equal to a short link text)."""
    prose = links = 0
    for line in text.splitlines():
        flat = "".join(line.split())
        if not flat:
            continue
        if len(flat) < _LINK_GRAM:
            links += len(flat) if flat in grams else 0
            continue
        covered = bytearray(len(flat))
        for i in range(len(flat) - _LINK_GRAM + 1):
            if flat[i : i + _LINK_GRAM] in grams:
                covered[i : i + _LINK_GRAM] = b"\x01" * _LINK_GRAM
        if 2 * sum(covered) > len(flat):
            links += len(flat)
        elif len(flat) >= MIN_PROSE_LINE:
            prose += len(flat)
            if prose >= MIN_PROSE_CHARS:
                break  # an article: the rest need not be read
    return prose, links


def strip_boilerplate_lines(text: str) -> str:
    """``text`` without lines that are mostly pirate ads, watermarks or site URLs."""
    return _strip_ad_lines(text)[0]


def _strip_ad_lines(text: str) -> tuple[str, np.ndarray]:
    """:func:`strip_boilerplate_lines`, and the boilerplate mask of the text it returns: the
    masks of the lines it keeps (the mask is line by line: :func:`boilerplate_mask`)."""
    lines = [line for raw in text.splitlines() if (line := raw.strip())]
    joined = "\n".join(lines)
    mask = boilerplate_mask(joined)  # line by line: no pattern crosses a line break
    if not mask.any():
        return joined, mask
    # Only the lines holding a masked character are looked at, character by character: a
    # line is found from where each masked run begins (a run never crosses a line break).
    # The runs come in order, so their line numbers are counted on from the run before: one
    # pass over ``joined`` (counting from its start for each run was quadratic in its lines).
    starts: dict[int, int] = {}  # line number: where it starts in ``joined``
    line = counted = 0
    for at in np.flatnonzero(mask & ~np.r_[False, mask[:-1]]).tolist():
        line += joined.count("\n", counted, at)
        counted = at
        starts.setdefault(line, joined.rfind("\n", 0, at) + 1)
    dropped = set()
    for k, start in starts.items():
        line = lines[k]
        covered = mask[start : start + len(line)]
        visible = sum(1 for ch in line if not ch.isspace())
        hidden = sum(
            1 for ch, on in zip(line, covered.tolist(), strict=True) if on and not ch.isspace()
        )
        if visible and hidden >= 0.6 * visible:
            dropped.add(k)
    if not dropped:
        return joined, mask
    text = "\n".join(line for k, line in enumerate(lines) if k not in dropped)
    kept = np.ones(len(joined), dtype=bool)  # the characters of ``joined`` left in ``text``
    for k in dropped:  # a line dropped goes with the line break after it
        kept[starts[k] : starts[k] + len(lines[k]) + 1] = False
    if len(lines) - 1 in dropped and len(text):  # and the last line kept loses its own
        kept[np.flatnonzero(kept)[-1]] = False
    return text, mask[kept]


#: :func:`element_text` as an XSLT stylesheet: the walk runs in libxslt's C code, ~2-3x faster
#: than one in Python on a chapter page's hundreds of ``<br>`` (read on every page a learned
#: body locator reads). The context is the element's children (``*[1]``: lxml transforms the
#: element's own document when it is the root, whose later top-level elements are not in it).
_ELEMENT_TEXT_XSLT = f"""<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="text" encoding="utf-8"/>
<xsl:template match="/"><xsl:apply-templates select="*[1]/node()"/></xsl:template>
<xsl:template match="script|style|noscript"/>
<xsl:template match="{"|".join(_BLOCK_TAGS)}"><xsl:text>&#10;</xsl:text>
<xsl:apply-templates/><xsl:text>&#10;</xsl:text></xsl:template>
</xsl:stylesheet>"""
_xslt = threading.local()  # an XSLT object is used by the thread that made it


def element_text(element: Any) -> str:
    """Text of an lxml element with block elements and ``<br>`` as line breaks, lines stripped
    and blank lines dropped: the text of its children (scripts, styles and ``<noscript>``
    left out, their tails kept; comments and processing instructions give none), a line break
    before and after each block element's."""
    if not isinstance(element.tag, str):  # a comment or processing instruction: its own text
        text = element.text or ""
    else:
        transform = getattr(_xslt, "element_text", None)
        if transform is None:
            transform = _xslt.element_text = lxml.etree.XSLT(lxml.etree.XML(_ELEMENT_TEXT_XSLT))
        text = str(transform(element))
    lines = (line.strip() for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def _first_part(title: str) -> str:
    """ "第三回 …_红楼梦_笔趣阁" → "第三回 …": page titles append the book and site names."""
    return re.split(r"\s*[_|｜]\s*|\s+-\s+", title, maxsplit=1)[0].strip()


def _fallback_text(selector: Selector) -> str:
    """The text of the block element (or the body) with the most text of its own: its text,
    its children's tails and its ``<p>`` children's text, once scripts, navigation and other
    boilerplate blocks are dropped from the tree; paragraphs kept as lines."""
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
