"""Forum threads and other pages of many posts: the text of every post, not one block.

Copies are posted chapter by chapter in forum threads (Discuz!, Baidu Tieba, the portal BBSes
of the 2000s). Main-content extraction keeps one block, the first post or the longest, and a
thread of twenty posts loses nineteen. Here the posts are found and joined:

* **platforms** by their markup: Discuz! (``postmessage_N``, ``td.t_f``, ``t_msgfont``),
  Tieba (``d_post_content``), phpwind (``tpc_content``), vBulletin (``post_message_N``);
* **any other board** by its repeated post containers: block elements of one *signature*
  (tag, classes, id with its digits folded, and the tags of two ancestors: ``td.tablebody1``
  in ``tr`` in ``table``, ``div#textstyle_#``…), three or more of them, none inside another,
  each with text of its own. They are added to the extracted text when they hold at least
  twice as much: the extractor kept one post of the thread, or the opening post and not the
  replies (where an author posts the next chapters). Text is only ever added, so an article
  with a long comment section keeps its article; the comments ride along.

Inside a post, quotes of earlier posts (``blockquote``, ``.quote``), signatures (``.sign``,
``.signature``), edit stamps and attachment boxes are left out: they repeat text from elsewhere
on the page.
"""

from __future__ import annotations

import copy
import re
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import lxml.etree

#: Posts of known platforms (nested matches count once, the outermost), each with the words
#: its markup cannot do without: a page without them is not searched (most pages).
PLATFORM_POSTS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    (
        "discuz",
        ("postmessage_", "t_f", "t_msgfont"),
        "//*[starts-with(@id, 'postmessage_')]"
        " | //td[contains(concat(' ', normalize-space(@class), ' '), ' t_f ')]"
        " | //*[contains(concat(' ', normalize-space(@class), ' '), ' t_msgfont ')]",
    ),
    (
        "tieba",
        ("d_post_content",),
        "//div[contains(concat(' ', normalize-space(@class), ' '), ' d_post_content ')]",
    ),
    (
        "phpwind",
        ("tpc_content",),
        "//div[contains(concat(' ', normalize-space(@class), ' '), ' tpc_content ')]",
    ),
    ("vbulletin", ("post_message_",), "//*[starts-with(@id, 'post_message_')]"),
)
#: Parts of a post that repeat text from elsewhere: quotes, signatures, edit stamps.
POST_CLUTTER = lxml.etree.XPath(
    ".//blockquote | .//*[re:test(concat(' ', @class, ' '),"
    r" '\s(quote|quotes|sign|signature|signatures|pstatus|tattl|attach_nopermission"
    r"|post_sign|j_user_sign|fastre|modact)\s', 'i')]",
    namespaces={"re": "http://exslt.org/regular-expressions"},
)
MIN_POSTS = 3  # repeated blocks that make a thread, without a platform's markup
MAX_LINK_SHARE = 0.3  # of the posts' text in links: more is a list of links with summaries
MIN_POST_CHARS = 20  # a post's own text
POSTS_OVER_EXTRACTED = 2.0  # the posts hold at least this many times the extracted text
_CONTAINER_TAGS = ("div", "td", "li", "article", "section", "dd", "blockquote", "span")
_DIGITS = re.compile(r"\d+")


def platform_posts(root: Any, html: str | None = None) -> tuple[str, list[Any]] | None:
    """The posts of a known forum platform on the page (``html``: its source, when at hand):
    (platform, post elements)."""
    for platform, markers, xpath in PLATFORM_POSTS:
        if html is not None and not any(marker in html for marker in markers):
            continue
        found = root.xpath(xpath)
        if found:
            return platform, outermost(found)
    return None


def outermost(elements: list[Any]) -> list[Any]:
    """``elements`` without those inside another of them, in document order."""
    chosen = set(elements)
    return [e for e in elements if not any(a in chosen for a in e.iterancestors())]


def _signature(element: Any) -> tuple[str, ...]:
    parent = element.getparent()
    grand = parent.getparent() if parent is not None else None
    return (
        element.tag,
        " ".join(sorted(_DIGITS.sub("#", (element.get("class") or "").lower()).split())),
        _DIGITS.sub("#", element.get("id") or ""),
        parent.tag if parent is not None else "",
        grand.tag if grand is not None else "",
    )


def _own_chars(element: Any) -> int:
    """Characters of text directly in ``element`` or its inline children (not in nested
    blocks, nor in links): a post's own words, not its container's."""
    count = len((element.text or "").strip())
    for child in element:
        tag = child.tag if isinstance(child.tag, str) else ""
        if tag in ("p", "br", "font", "span", "b", "strong", "i", "em", "u", "img"):
            count += len((child.text_content() or "").strip()) if tag not in ("br", "img") else 0
        count += len((child.tail or "").strip())
    return count


#: Block elements with a class or an id: bare tags make no signature (see the module doc).
_MARKED_CONTAINERS = lxml.etree.XPath(
    "//*[(@class or @id) and (" + " or ".join(f"self::{tag}" for tag in _CONTAINER_TAGS) + ")]"
)


def _link_share(elements: list[Any]) -> float:
    total = links = 0
    for element in elements:
        total += len("".join(element.text_content().split()))
        links += sum(len("".join(a.text_content().split())) for a in element.iter("a"))
    return links / total if total else 1.0


def repeated_posts(root: Any) -> list[Any]:
    """The page's repeated post containers (see the module doc), or [] when it has none."""
    groups: dict[tuple[str, ...], list[Any]] = defaultdict(list)
    for element in _MARKED_CONTAINERS(root):
        groups[_signature(element)].append(element)
    best: list[Any] = []
    best_chars = 0
    for members in groups.values():
        if len(members) < MIN_POSTS:  # most signatures: no text needs counting
            continue
        members = outermost([m for m in members if _own_chars(m) >= MIN_POST_CHARS])
        if len(members) < MIN_POSTS or _link_share(members) > MAX_LINK_SHARE:
            continue  # a list of links with summaries (related news), not posts
        chars = sum(_own_chars(m) for m in members)
        if chars > best_chars:
            best, best_chars = members, chars
    return best


def posts_text(posts: list[Any], element_text: Callable[[Any], str]) -> str:
    """The posts' texts, one after another, without quotes and signatures (the page's tree
    is left as it is)."""
    texts = []
    for post in posts:
        post = copy.deepcopy(post)
        for clutter in POST_CLUTTER(post):
            if clutter is not post and clutter.getparent() is not None:
                clutter.drop_tree()
        text = element_text(post)
        if text:
            texts.append(text)
    return "\n".join(texts)


def with_posts(extracted: str, posts: str) -> str | None:
    """The extracted text and the posts together, when the posts hold much more than the
    extractor kept (it kept one post of a thread, or the opening post and not the replies):
    the extracted lines the posts do not hold first, then the posts. None otherwise."""
    flat = "".join(posts.split())
    lines = [line for line in extracted.splitlines() if line.strip()]
    total = sum(len("".join(line.split())) for line in lines)
    if not total or len(flat) < POSTS_OVER_EXTRACTED * total:
        return None
    own = [line for line in lines if "".join(line.split()) not in flat]
    return "\n".join([*own, posts])
