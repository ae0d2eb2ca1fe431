"""An EPUB's text in reading order, from its own package files (EPUB 3.3, §3 and §5).

``META-INF/container.xml`` names the package document (the OPF); its ``<spine>`` lists the
content documents in reading order, each an XHTML file of the ``<manifest>``. The navigation
document (``nav``, or EPUB 2's NCX) is only a table of contents: an EPUB without one is read
all the same, by its spine (and noted). A package without a spine, or no package at all, is
read from its XHTML members in name order (noted); one with no text at all is unread.

The XML is parsed without network access or entity expansion (hostile files); hrefs are
member names inside the archive, never paths on disk.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping
from urllib.parse import unquote

import lxml.etree
import lxml.html

_XML = lxml.etree.XMLParser(resolve_entities=False, no_network=True, recover=True)
_BLOCKS = ("p", "div", "br", "li", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "section")
_CONTENT = re.compile(r"\.x?html?$", re.I)


def html_text(data: bytes) -> str:
    """The text of an (X)HTML document, a line per block."""
    try:
        root = lxml.html.document_fromstring(data)
    except (lxml.etree.ParserError, ValueError):
        return ""
    for bad in root.xpath("//script|//style|//head"):
        bad.drop_tree()
    for element in root.iter(*_BLOCKS):
        element.tail = "\n" + (element.tail or "")
    return re.sub(r"\n\s*\n+", "\n", root.text_content()).strip()


def epub_text(members: Mapping[str, object], read: Callable[[str], bytes]) -> tuple[str, list[str]]:
    """The book's text (content documents in reading order, a blank line between them) and
    notes on what was missing; :class:`tracker.files.archives.Unreadable` when none."""
    from tracker.files.archives import Unreadable

    notes: list[str] = []
    order = _spine(members, read, notes)
    if not order:
        order = sorted(m for m in members if _CONTENT.search(m))
        notes.append("no package spine: content documents read in name order")
    texts = [text for member in order if (text := html_text(read(member)))]
    if not texts:
        raise Unreadable("empty", "an EPUB without any text")
    return "\n\n".join(texts), notes


def _spine(
    members: Mapping[str, object], read: Callable[[str], bytes], notes: list[str]
) -> list[str]:
    """The content documents the spine lists, in order ([] when the package cannot say)."""
    if "META-INF/container.xml" not in members:
        notes.append("no META-INF/container.xml")
        return []
    container = _parse(read("META-INF/container.xml"))
    paths = (
        container.xpath("//*[local-name()='rootfile']/@full-path") if container is not None else []
    )
    if not paths or paths[0] not in members:
        notes.append("no package document")
        return []
    opf_path = str(paths[0])
    package = _parse(read(opf_path))
    if package is None:
        notes.append(f"{opf_path}: not XML")
        return []
    base = posixpath.dirname(opf_path)
    manifest = {}
    has_nav = False
    for item in package.xpath("//*[local-name()='manifest']/*[local-name()='item']"):
        href = posixpath.normpath(posixpath.join(base, unquote(item.get("href") or "")))
        manifest[item.get("id")] = href
        properties = (item.get("properties") or "").split()
        has_nav = has_nav or "nav" in properties or "ncx" in (item.get("media-type") or "")
    if not has_nav:
        notes.append("no navigation document: read by its spine")
    order = []
    for ref in package.xpath("//*[local-name()='spine']/*[local-name()='itemref']/@idref"):
        href = manifest.get(ref)
        if href in members and href not in order:
            order.append(href)
    return order


def _parse(data: bytes) -> lxml.etree._Element | None:
    try:
        return lxml.etree.fromstring(data, _XML)
    except lxml.etree.XMLSyntaxError:
        return None
