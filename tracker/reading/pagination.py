"""Chapters and threads split over several pages: which link leads to the next *part* of the
same chapter (or forum thread), as opposed to the next chapter.

Pirate sites cut a chapter into pages ("本章未完，点击下一页继续阅读") chained by a 下一页 link,
``rel="next"``, or a Discuz-style ``class="nxt"``; the URLs of the parts carry a part number
(``123_2.html``, ``?page=2``, ``thread-7-2-1.html``, ``?pn=2``). The same links on the last part
often lead on to the next chapter (a "下一页" to ``124.html``), and 下一章 always does: those are
chapters of their own, never parts.

:func:`next_part_link` finds the candidate link on a page; :func:`part_of` says whether a URL
continues a chapter by its shape alone (the part number of the same chapter address, one
more than the current one); for a candidate whose URL does not say (``4.html`` →
``4-b.html``), :func:`same_chapter_title` decides once the page is fetched: a part repeats its
chapter's title (``第四章 …（2/3）``), the next chapter does not.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

import lxml.etree

#: "next page" link texts (a 下一章, 下一节… is the next chapter, never a part).
NEXT_PART_TEXT = re.compile(
    r"下一页|下页|下一頁|下頁|下一分页|下一部分|继续阅读|繼續閱讀|next\s*page|^\s*(?:next|[>›»]+)\s*$",
    re.I,
)
NEXT_CHAPTER_TEXT = re.compile(r"下一?[章节節回篇卷]|next\s*chapter", re.I)
#: A pager link that is a page number only: ``2``, ``[2]``, ``第2页``.
_PAGER_NUMBER = re.compile(
    r"^\s*[\[［【(（]?\s*(?:第\s*)?(\d{1,3})\s*(?:页|頁)?\s*[\]］】)）]?\s*$"
)
#: Markers that a chapter page continues on the next one.
CONTINUED_TEXT = re.compile(r"本章未完|未完待续|点击下一页继续|點擊下一頁繼續|下一页继续阅读")
#: Query parameters that number the pages of one document (``p`` is weak: it is also a
#: post id on many sites, see :func:`part_of`).
PAGE_PARAMS = frozenset(("page", "pn", "pg", "part", "pageno", "page_no", "pagenum", "pno"))
WEAK_PAGE_PARAMS = frozenset(("p",))
MAX_PART_NUMBER = 999
_PART_SUFFIX = re.compile(r"^(?P<stem>.+?)_(?P<n>\d{1,3})(?P<ext>\.[a-z]{2,5})?$", re.I)
_DASH_SUFFIX = re.compile(r"^(?P<stem>.+?)-(?P<n>\d{1,2})(?P<ext>\.[a-z]{2,5})?$", re.I)
_DISCUZ_THREAD = re.compile(r"^thread-(?P<tid>\d+)-(?P<n>\d+)-(?P<rest>\d+)\.html?$", re.I)
_TITLE_PART = re.compile(
    r"[（(\[【]\s*(?:第\s*)?\d+\s*(?:/\s*\d+|页|頁)?\s*[)）\]】]"
    r"|[（(【]\s*(?:第\s*)?[一二三四五六七八九十]{1,3}\s*(?:页|頁|部分)?\s*[)）】]\s*$"
    r"|第\s*[0-9一二三四五六七八九十]+\s*[页頁]|\d+\s*/\s*\d+\s*$|[-_—]\s*\d+\s*$"
)
_TITLE_NOISE = re.compile(r"[\s\W_]+")


class PartAddress(NamedTuple):
    """A URL read as (chapter address, part number, how sure): ``strong`` for the shapes
    only parts take, ``weak`` for shapes that other pages take too, ``none`` for a URL
    without a part number (part 1 of its own address)."""

    chapter: str
    number: int
    evidence: str  # "strong", "weak" or "none"


def part_address(url: str) -> PartAddress:
    """The chapter address and part number of ``url`` (see :class:`PartAddress`)."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    for names, evidence in ((PAGE_PARAMS, "strong"), (WEAK_PAGE_PARAMS, "weak")):
        numbered = [(k, v) for k, v in query if k.lower() in names and v.isdigit() and len(v) <= 3]
        if numbered:
            key, value = numbered[0]
            rest = urlencode([(k, v) for k, v in query if k != key])
            chapter = urlunsplit((parts.scheme, parts.netloc, parts.path, rest, ""))
            return PartAddress(chapter, int(value), evidence)
    query_text = urlencode(query)
    head, _, last = parts.path.rpartition("/")
    for pattern, evidence in ((_DISCUZ_THREAD, "strong"), (_PART_SUFFIX, "strong")):
        found = pattern.match(last)
        if found:
            if pattern is _DISCUZ_THREAD:
                first = f"thread-{found['tid']}-1-{found['rest']}.html"
            else:
                first = found["stem"] + (found["ext"] or "")
            chapter = urlunsplit((parts.scheme, parts.netloc, f"{head}/{first}", query_text, ""))
            return PartAddress(chapter, int(found["n"]), evidence)
    found = _DASH_SUFFIX.match(last)
    if found:
        first = found["stem"] + (found["ext"] or "")
        chapter = urlunsplit((parts.scheme, parts.netloc, f"{head}/{first}", query_text, ""))
        return PartAddress(chapter, int(found["n"]), "weak")
    return PartAddress(
        urlunsplit((parts.scheme, parts.netloc, parts.path, query_text, "")), 1, "none"
    )


def first_part_aliases(second: str) -> list[str]:
    """The URLs that name part 1 the way ``second`` (the URL of part 2) names its part:
    ``?pn=2`` → ``?pn=1``, ``123_2.html`` → ``123_1.html``, ``123/2.html`` → ``123/1.html``,
    ``thread-7-2-1.html`` → ``thread-7-1-1.html``. A thread's pager links its first page that
    way too; read as a page of its own it would be the first part again, under another URL."""
    parts = urlsplit(second)
    query = parse_qsl(parts.query, keep_blank_values=True)
    names = PAGE_PARAMS | WEAK_PAGE_PARAMS
    if any(k.lower() in names and v == "2" for k, v in query):
        renumbered = [(k, "1" if k.lower() in names and v == "2" else v) for k, v in query]
        return [urlunsplit(parts._replace(query=urlencode(renumbered), fragment=""))]
    head, _, last = parts.path.rpartition("/")
    for pattern, first in (
        (_DISCUZ_THREAD, r"thread-\g<tid>-1-\g<rest>.html"),
        (_PART_SUFFIX, r"\g<stem>_1\g<ext>"),
        (_DASH_SUFFIX, r"\g<stem>-1\g<ext>"),
        (_NUMBERED_NAME, r"1\g<ext>"),
    ):
        found = pattern.match(last)
        if found and int(found["n"]) == 2:
            name = found.expand(first) if pattern is not _NUMBERED_NAME else "1" + last[1:]
            return [urlunsplit(parts._replace(path=f"{head}/{name}", fragment=""))]
    return []


def part_of(url: str, current: str, first: str | None = None) -> str:
    """Whether ``url`` is, by its shape, the part after ``current`` of the chapter that starts
    on ``first`` (``current`` itself by default): ``yes`` (a strong shape: ``_2``,
    ``?page=2``, a Discuz thread page, numbered on from a chapter whose first page carries no
    number or 1), ``maybe`` (a weak one: ``-2``, ``?p=2``, ``4.html`` → ``4-b.html``, or a
    chain that starts at a numbered page, ``chapter_11.html`` → ``chapter_12.html``: the
    titles must agree) or ``no`` (another address or number)."""
    here, there = part_address(current), part_address(url)
    start = part_address(first or current)
    if there.evidence == "none":
        named_on = _continues_name(current, url) or _continues_name(first or current, url)
        in_folder = _continues_in_folder(first or current, current, url)
        return "maybe" if named_on or in_folder else "no"
    if there.number != here.number + 1 or there.chapter != here.chapter:
        return "no"
    if there.evidence == "strong" and start.number <= 1 and start.chapter == there.chapter:
        return "yes"
    return "maybe"


def _continues_name(current: str, url: str) -> bool:
    """``4.html`` → ``4-b.html``: the next page's name is the current one's, continued after a
    separator, in the same folder (``4.html`` → ``40.html`` is not)."""
    here, there = urlsplit(current), urlsplit(url)
    if (here.netloc, here.query) != (there.netloc, there.query):
        return False
    head, _, name = here.path.rpartition("/")
    other_head, _, other = there.path.rpartition("/")
    stem, other_stem = name.split(".", 1)[0], other.split(".", 1)[0]
    return (
        head == other_head
        and bool(stem)
        and len(other_stem) > len(stem) + 1
        and other_stem.startswith(stem)
        and other_stem[len(stem)] in "-_."
    )


_NUMBERED_NAME = re.compile(r"^(?P<n>\d{1,3})(?:\.[a-z]{2,5})?$", re.I)


def _continues_in_folder(first: str, current: str, url: str) -> bool:
    """``123.html`` (or ``123/``) → ``123/2.html`` → ``123/3.html``: the parts of a chapter
    numbered in a folder named after its first page (``first``). Only ever a ``maybe`` (the
    titles decide), and only in the first page's own folder: chapters numbered in a folder
    (``9/5.html`` → ``9/6.html``) are not fetched as candidate parts."""
    start, here, there = urlsplit(first), urlsplit(current), urlsplit(url)
    if len({(p.netloc, p.query) for p in (start, here, there)}) != 1:
        return False
    folder, _, name = there.path.rpartition("/")
    found = _NUMBERED_NAME.match(name)
    if found is None or int(found["n"]) < 2:
        return False
    number = int(found["n"])
    first_folder, _, first_name = start.path.rpartition("/")
    named_after = "." in first_name and start.path.rsplit(".", 1)[0] == folder
    opens_it = first_folder == folder and first_name.split(".", 1)[0].lower() in ("", "index", "1")
    if not (named_after or opens_it or start.path.rstrip("/") == folder):
        return False
    if here.path == start.path:
        return number == 2
    previous = _NUMBERED_NAME.match(here.path.rpartition("/")[2])
    return (
        here.path.rpartition("/")[0] == folder
        and previous is not None
        and (int(previous["n"]) == number - 1)
    )


def _without_fragment(url: str) -> str:
    return urlunsplit(urlsplit(url)._replace(fragment=""))


class NextLink(NamedTuple):
    url: str
    text: str
    how: str  # "text", "rel", "class" or "number": what says it is the next page


_LINKS = lxml.etree.XPath("//a[@href] | //link[@rel][@href]")
#: A ``next`` class or id (``class="next"``, ``id="pb_next"``), with a space added either side.
_NEXT_CLASS = re.compile(r"[\s_-](nxt|next|nextpage|next_page)[\s_-]")
#: ``location.href='…'``, ``window.location = "…"``, ``location.assign('…')``, ``open('…')``.
_NAVIGATION = re.compile(
    r"""(?:location(?:\.href)?\s*=|location\.(?:assign|replace)\s*\(|\bopen\s*\()\s*"""
    r"""(['"])(?P<url>[^'"\s]{1,300})\1"""
)
#: A quoted relative or absolute URL of a page in a script.
_QUOTED_URL = re.compile(r"""(['"])(?P<url>(?:https?://|/|\.{0,2}/)?[\w./%?=&-]{1,300})\1""")


def _scripted_target(element: Any, page: Any) -> str | None:
    """The URL a script-driven "next page" element leads to: the one its ``onclick`` or
    ``javascript:`` URL navigates to, else a URL in the page's inline scripts shaped as the
    next part of this page (a link whose ``href`` a script sets)."""
    for code in (element.get("onclick") or "", element.get("href") or ""):
        found = _NAVIGATION.search(code)
        if found:
            return found["url"]
    for script in page.selector.root.xpath("//script[not(@src)]/text()"):
        for found in _QUOTED_URL.finditer(script):
            url = found["url"]
            if not re.search(r"[./]", url):
                continue
            if part_of(urljoin(page.url, url), page.url) != "no":
                return url
    return None


#: An ``onclick`` that navigates (in the raw bytes: pages without one skip the tree scan)…
_NAVIGATING_CLICK = re.compile(
    rb"""n[cC](?:lick|LICK)\s*=\s*["'][^"'>]{0,200}(?:location|open\s*\()"""
)
#: …and the elements that carry one.
_CLICKABLE = lxml.etree.XPath("//*[@onclick]")


def _clicked_next(page: Any, url_here: str) -> NextLink | None:
    """The next page a "下一页" button (any element with an ``onclick``) navigates to."""
    if _NAVIGATING_CLICK.search(page.body) is None:
        return None
    for element in _CLICKABLE(page.selector.root):
        text = " ".join("".join(element.itertext()).split()) or element.get("value") or ""
        if NEXT_CHAPTER_TEXT.search(text) or not NEXT_PART_TEXT.search(text):
            continue
        target = _NAVIGATION.search(element.get("onclick") or "")
        if target is None:
            continue
        url = _without_fragment(urljoin(page.url, target["url"]))
        if url != url_here and url.startswith(("http://", "https://")):
            return NextLink(url, text, "text")
    return None


def next_part_link(page: Any) -> NextLink | None:
    """The link that leads from ``page`` (a Scrapy ``TextResponse``) to the next page of the
    same chapter, when the page has one: a "下一页" link, ``rel="next"`` or a ``next``/``nxt``
    class, never a 下一章 link or one back to the page itself."""
    here = _without_fragment(page.url)
    candidates: list[NextLink] = []
    number_here: int | None = None
    # lxml's elements, not parsel's: a Selector for each link of every page costs more than
    # the test made of it
    tree = page.selector.root
    for root in _LINKS(tree):
        href = (root.get("href") or "").strip()
        scripted = root.tag != "link" and (not href or href[:11].lower() == "javascript:")
        if not scripted and href.startswith(("#", "mailto:")):
            continue
        text = " ".join("".join(root.itertext()).split()) if root.tag != "link" else ""
        if not text and root.tag != "link":  # an image button: its alt or title says
            text = root.get("title") or next(
                (img.get("alt") or img.get("title") or "" for img in root.iter("img")), ""
            )
        if scripted:
            # 下一页 as a button or a script's link: its target in the onclick, the
            # javascript: URL, or (a link a script fills in) the page's scripts
            if NEXT_CHAPTER_TEXT.search(text) or not NEXT_PART_TEXT.search(text):
                continue
            href = _scripted_target(root, page) or ""
        if not href or href.startswith(("#", "javascript:", "mailto:")):
            continue
        if NEXT_CHAPTER_TEXT.search(text):
            continue
        rel = (root.get("rel") or "").lower().split()
        if NEXT_PART_TEXT.search(text):
            how = "text"
        elif "next" in rel:
            how = "rel"
        elif root.tag == "a" and _NEXT_CLASS.search(
            f" {(root.get('class') or '').lower()} {(root.get('id') or '').lower()} "
        ):
            how = "class"
        elif root.tag == "a" and len(text) < 8 and (number := _PAGER_NUMBER.match(text)):
            # a pager of page numbers only ([1] [2] [3]): the link to the number after this
            # page's, whose URL is shaped as this chapter's next part
            if number_here is None:
                number_here = part_address(page.url).number
            if int(number[1]) != number_here + 1:
                continue
            url = _without_fragment(urljoin(page.url, href))
            if part_address(url).evidence != "strong":
                continue
            if part_of(url, page.url) == "no":
                continue
            how = "number"
        else:
            continue
        url = _without_fragment(urljoin(page.url, href))
        if url == here or not url.startswith(("http://", "https://")):
            continue
        candidates.append(NextLink(url, text, how))
    if not candidates and (clicked := _clicked_next(page, here)) is not None:
        candidates.append(clicked)
    if not candidates:
        return None
    # A URL shaped as the next part wins; then link text over rel over class.
    order = {"text": 0, "rel": 1, "class": 2, "number": 3}
    return min(
        candidates,
        key=lambda c: (part_of(c.url, page.url) != "yes", order[c.how]),
    )


def title_key(page: Any) -> str:
    """The page's chapter title without part markers ("第四章 …（2/3）" → "第四章…"): the
    ``<h1>``, else the first part of ``<title>``."""
    for xpath in ("normalize-space((//h1)[1])", "normalize-space((//title)[1])"):
        title = page.xpath(xpath).get() or ""
        if xpath.endswith("(//title)[1])"):
            title = re.split(r"\s*[_|｜]\s*|\s+-\s+", title, maxsplit=1)[0]
        title = _TITLE_PART.sub("", title)
        key = _TITLE_NOISE.sub("", title).lower()
        if key:
            return key
    return ""


def same_chapter_title(first: Any, page: Any) -> bool:
    """Whether ``page`` carries the chapter title of ``first`` (part markers aside)."""
    key = title_key(first)
    return bool(key) and key == title_key(page)
