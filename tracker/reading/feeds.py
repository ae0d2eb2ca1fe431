"""The items of an RSS 2.0, RSS 1.0 (RDF) or Atom feed, each with its own text.

Full-text feeds carry whole articles: RSS ``content:encoded``, Atom ``content`` (entity-escaped
HTML with ``type="html"``, inline markup with ``type="xhtml"``, plain text otherwise); a
summary sits in RSS ``description`` or Atom ``summary``. Each item gives its HTML unescaped,
ready to be extracted like a page (:meth:`FeedItem.page_html`), and the URL its text is stored
under (:meth:`FeedItem.page_url`): its link, or ``FEED_URL#guid`` when it has no link or the
link is on another site (a feed republishing other sites' articles holds the copy itself).

The body is decoded like any page (:func:`tracker.text.encoding.decode_page`: the HTTP
charset, the XML declaration's ``encoding``, or detected), so legacy GB2312/GBK/Big5 feeds
read right.
Feeds are hostile XML: entities are never expanded (no "billion laughs", no external
entities), nothing is fetched (no DTD, no network), bodies and item counts are bounded.
"""

from __future__ import annotations

import copy
import html
import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote, urljoin, urlsplit

import lxml.etree
import lxml.html
from lxml.html import builder as E

from tracker.model import content_hash, site_of
from tracker.text.encoding import decode_page  # the project's one page decoder

MAX_FEED_BYTES = 10 * 1024 * 1024
MAX_ITEMS = 1000
#: An item with fewer visible characters is a summary: its link is worth fetching.
SUMMARY_CHARS = 400

CONTENT_NS = "http://purl.org/rss/1.0/modules/content/"
RDF_NS = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
_HEAD = re.compile(rb"<(rss|feed|rdf:rdf)[\s>]", re.I)
_TAG = re.compile(r"<[^>]*>")


class FeedError(ValueError):
    """The body is not a feed that can be read."""


@dataclass(frozen=True)
class FeedItem:
    link: str | None  # the item's own page (absolute), if it names one
    guid: str  # guid / id / rdf:about; else a digest of the item
    title: str
    html: str  # the item's text as HTML (content, else summary), unescaped
    full: bool  # html comes from a content element (content:encoded, Atom content)
    published: str = ""

    @property
    def summary(self) -> bool:
        """Only a summary: too short to be the article (many feeds carry the whole text in
        ``description``, some only a lead in ``content``)."""
        return visible_chars(self.html) < SUMMARY_CHARS

    def page_url(self, feed_url: str, on_site: Callable[[str], bool] | None = None) -> str:
        """The URL the item's text is stored under: its link when it is on the feed's site
        (``on_site``, by default the feed's host), else ``feed_url#guid``."""
        on_site = on_site or (lambda url: site_of(url) == site_of(feed_url))
        if self.link and on_site(self.link):
            return self.link
        return f"{feed_url.split('#', 1)[0]}#{quote(self.guid, safe='')}"

    def page_html(self) -> str:
        """The item as an HTML document for the extractor: its title as heading, then its
        content, parsed as the HTML it is. Built as a tree and serialised by lxml (HTML is
        never written in strings here: the title is text, escaped as such)."""
        head = E.HEAD(E.META(charset="utf-8"), E.TITLE(xml_text(self.title)))
        if self.published:
            head.append(E.META(property="article:published_time", content=xml_text(self.published)))
        heading = E.H1(xml_text(self.title))
        heading.tail = "\n"
        article = E.ARTICLE(heading)
        content = lxml.html.fragments_fromstring(self.html) if self.html.strip() else []
        if content and isinstance(content[0], str):  # text before the first element
            heading.tail += content.pop(0)
        article.extend(content)
        return lxml.html.tostring(E.HTML(head, E.BODY(article)), encoding="unicode")


def looks_like_feed(body: bytes) -> bool:
    """Whether a body starts like RSS, RDF or Atom."""
    return bool(_HEAD.search(body[:2048]))


def parse_feed(body: bytes, url: str, content_type: str | None = None) -> list[FeedItem]:
    """The items of the feed ``body`` fetched from ``url`` (at most ``MAX_ITEMS``); raises
    :class:`FeedError` when it is too large or not XML."""
    if len(body) > MAX_FEED_BYTES:
        raise FeedError(f"feed larger than {MAX_FEED_BYTES} bytes")
    try:
        text = decode_page(body, content_type).html
    except ValueError as exc:  # DecodeError: binary or undecodable
        raise FeedError(str(exc)) from exc
    parser = lxml.etree.XMLParser(
        encoding="utf-8",  # the text is decoded: its XML declaration no longer applies
        resolve_entities=False,
        load_dtd=False,
        no_network=True,
        huge_tree=False,
        recover=True,
    )
    try:
        root = lxml.etree.fromstring(text.encode("utf-8"), parser=parser)
    except lxml.etree.XMLSyntaxError as exc:
        raise FeedError(f"not XML: {exc}") from exc
    if root is None:
        raise FeedError("not XML")
    items = root.xpath("//*[local-name()='item' or local-name()='entry']")[:MAX_ITEMS]
    return [_item(node, url) for node in items]


def visible_chars(markup: str) -> int:
    """Characters of text in an HTML fragment (tags and whitespace aside)."""
    return len("".join(html.unescape(_TAG.sub(" ", markup)).split()))


def _item(node: lxml.etree._Element, feed_url: str) -> FeedItem:
    def children(name: str, ns: str | None = None) -> list[lxml.etree._Element]:
        return [
            c
            for c in node
            if isinstance(c.tag, str)
            and lxml.etree.QName(c).localname == name
            and (ns is None or lxml.etree.QName(c).namespace == ns)
        ]

    def first_text(*names: str) -> str:
        for name in names:
            for child in children(name):
                value = _text(child).strip()
                if value:
                    return value
        return ""

    link = None
    for child in children("link"):
        href = child.get("href")  # Atom: <link rel="alternate" href="…"/>
        if href is not None and child.get("rel", "alternate") != "alternate":
            continue
        value = (href if href is not None else _text(child)).strip()
        if value:
            link = urljoin(feed_url, value)
            break
    if link and urlsplit(link).scheme not in ("http", "https"):
        link = None
    content = next(
        (c for c in children("encoded", CONTENT_NS) + children("content") if _text(c).strip()),
        None,
    )
    summary = next(
        (c for c in children("description") + children("summary") if _text(c).strip()), None
    )
    chosen = content if content is not None else summary
    markup = _markup(chosen) if chosen is not None else ""
    title = html.unescape(_TAG.sub("", first_text("title")))
    guid = (
        first_text("guid", "id")
        or node.get(f"{{{RDF_NS}}}about", "")
        or link
        or content_hash(f"{title}\n{markup}")
    )
    published = first_text("pubDate", "published", "updated", "date")
    return FeedItem(link, guid, title, markup, content is not None, published)


def _text(element: lxml.etree._Element) -> str:
    """The element's text, entity references left out (never expanded)."""
    return "".join(t for t in element.itertext() if isinstance(t, str))


def _markup(element: lxml.etree._Element) -> str:
    """An item's content as HTML: escaped HTML unescaped by the parser, inline XHTML
    serialised without its namespace, plain text made into paragraphs."""
    kind = (element.get("type") or "").lower()
    if kind == "xhtml" or (len(element) and kind not in ("text", "html")):
        inline = E.DIV()  # its elements, copied without their namespace, comments left out
        inline.text = element.text
        for child in element:
            if not isinstance(child.tag, str):
                _add_text(inline, child.tail)
                continue
            plain = copy.deepcopy(child)
            for el in plain.iter():
                if isinstance(el.tag, str):
                    el.tag = lxml.etree.QName(el).localname
            lxml.etree.cleanup_namespaces(plain)
            inline.append(plain)
        return lxml.html.tostring(inline, encoding="unicode")
    value = _text(element)
    is_content = lxml.etree.QName(element).localname == "content"
    if kind == "text" or (kind == "" and is_content and "<" not in value):
        return "".join(
            lxml.html.tostring(E.P(xml_text(line)), encoding="unicode")
            for line in value.splitlines()
            if line
        )
    return value


def _add_text(parent: lxml.etree._Element, text: str | None) -> None:
    """Append ``text`` after the last child of ``parent`` (or to its text)."""
    if not text:
        return
    if len(parent):
        parent[-1].tail = (parent[-1].tail or "") + text
    else:
        parent.text = (parent.text or "") + text


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    """``text`` without the characters an XML or HTML tree cannot hold (control characters,
    lone surrogates): lxml refuses them."""
    return _NOT_XML.sub("", text)
