"""A per-site body locator learned from trafilatura's own output, so that a site serving every
chapter from one template is read with a tree walk instead of a full extraction.

A pirate site renders each chapter page from the same template: the text trafilatura keeps is,
page after page, the text of the same element (``<div id="content">``). Trafilatura itself
(~60 % of a chapter page's extraction, :mod:`tracker.reading.extract`) re-derives that on every
page. :class:`BodyLocators` learns it instead, for each site (:func:`tracker.model.site_key`):

* **Learning.** When trafilatura's text (its lines stripped, blank lines dropped) is exactly
  the text of one element of the page (:func:`tracker.reading.extract.element_text`), that
  element's path is the site's candidate locator (its ``id`` when unique in the page, else its
  position), with what the element held (the set of tags inside it) and its share of the
  page's text.
* **Trust.** A locator is used once it has given trafilatura's text on :data:`CONFIRM` pages
  in a row. It reads a page only when the page verifies: the path finds exactly one element,
  with no tag inside it that the learning pages' element did not have (a link, a table or a
  script that trafilatura might treat otherwise), at least :data:`MIN_CHARS` characters, and
  a share of the page's text within :data:`SHARE_SLACK` of the learned one. A page that does
  not verify is extracted by trafilatura, as before.
* **Checks.** Every :data:`CHECK_EVERY`-th page a trusted locator would read is extracted by
  trafilatura too and compared; a difference forgets the locator (counted), and the site is
  learned again from its next pages. A site where learning failed :data:`MAX_FAILURES` times
  is not tried again in this process.

The text a locator returns is therefore trafilatura's on every page checked, and the pages
between checks are read from the same element of the same template with no new kind of markup
in it: the matches and their evidence do not change. Only a crawl's extraction workers keep
locators (their lifetime is the crawl); ``tracker check URL`` and the other readers of a
single page use trafilatura.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import lxml.etree

#: Agreeing pages before a locator is used.
CONFIRM = 2
#: One page in this many read by a trusted locator is extracted by trafilatura too.
CHECK_EVERY = 10
#: A locator reads pages of at least this many characters of text (shorter ones may be lists,
#: stubs or error pages, which trafilatura reads otherwise).
MIN_CHARS = 500
#: The element's share of the page's text may move this much (absolute) from the learned one.
SHARE_SLACK = 0.1
#: Learning attempts that fail before a site is given up (per extraction process).
MAX_FAILURES = 8
#: Ancestors of the longest line's text node tried as the body element when learning.
MAX_DEPTH = 12


def text_lines(text: str) -> str:
    """``text`` with every line stripped and blank lines dropped: the form in which
    :func:`tracker.reading.extract.strip_boilerplate_lines` reads it (so two texts equal in it
    extract to the same text)."""
    return "\n".join(line for raw in text.splitlines() if (line := raw.strip()))


#: Characters of an element's text, whitespace runs counted as one (in lxml's C code: a
#: walk in Python over a chapter's hundreds of ``<br>`` would cost as much as it saves).
_TEXT_LENGTH = lxml.etree.XPath("string-length(normalize-space(.))")
_SIMPLE_TAG = re.compile(r"[a-z][a-z0-9]*")


def _share(root: Any, element: Any, length: float | None = None) -> float:
    """The element's share of the text of the page's body (``length``: the element's text
    length, when known)."""
    body = root.find("body") if root.tag == "html" else None
    whole = _TEXT_LENGTH(body if body is not None else root)
    if length is None:
        length = _TEXT_LENGTH(element)
    return length / whole if whole else 0.0


@dataclass
class Locator:
    """One site's learned body element: its path, the tags found inside it and its share of
    the page's text when learned."""

    path: str
    tags: frozenset[str]
    share: float
    agreed: int = 0
    since_check: int = 0

    def __post_init__(self) -> None:
        self._find = lxml.etree.XPath(self.path)
        others = " or ".join(f"self::{tag}" for tag in sorted(self.tags)) or "false()"
        # nothing inside but the learned tags (no comment, no processing instruction)
        self._only_learned = lxml.etree.XPath(
            f"not(.//*[not({others})]) and not(.//comment()) and not(.//processing-instruction())"
        )

    def element(self, root: Any) -> Any | None:
        found = self._find(root)
        return found[0] if len(found) == 1 else None

    def verified(self, root: Any, element: Any) -> bool:
        """Whether the page's element looks like the learning pages' one (see the module)."""
        if not self._only_learned(element):
            return False
        length = _TEXT_LENGTH(element)
        return (
            length >= MIN_CHARS and abs(_share(root, element, length) - self.share) <= SHARE_SLACK
        )


class BodyLocators:
    """The locators of the sites an extraction process has read (see the module)."""

    def __init__(self) -> None:
        self.sites: dict[str, Locator] = {}
        self.failures: dict[str, int] = {}

    def read(
        self, site: str, root: Any, extract: Callable[[], str], element_text: Callable[[Any], str]
    ) -> tuple[str, bool]:
        """The page's main text (``root``: its parsed tree) and whether the site's locator read
        it: ``extract()`` (trafilatura) unless a trusted locator verifies on the page.
        ``element_text`` is the text of an element as the extraction reads one."""
        locator = self.sites.get(site)
        element = locator.element(root) if locator is not None else None
        if element is not None and locator.agreed >= CONFIRM and locator.verified(root, element):
            locator.since_check += 1
            if locator.since_check < CHECK_EVERY:
                return element_text(element), True
            locator.since_check = 0  # this one is checked against trafilatura below
        text = extract()
        if locator is not None:
            if element is not None and element_text(element) == text_lines(text):
                locator.agreed += 1
                return text, False
            del self.sites[site]  # the template changed, or the element was never the body
        if self.failures.get(site, 0) < MAX_FAILURES:
            learned = self._learn(root, text, element_text)
            if learned is not None:
                self.sites[site] = learned
            else:
                self.failures[site] = self.failures.get(site, 0) + 1
        return text, False

    @staticmethod
    def _learn(root: Any, text: str, element_text: Callable[[Any], str]) -> Locator | None:
        """The locator of the element whose text is ``text`` (the deepest one holding its
        longest line: a title's words may also be the page's ``<title>``), or None."""
        wanted = text_lines(text)
        if len(wanted) < MIN_CHARS or not hasattr(root, "iter"):
            return None
        first = max(wanted.split("\n"), key=len)
        holder = None
        for node in root.iter():
            if not isinstance(node.tag, str):
                continue
            if node.text and first in node.text:
                holder = node
                break
            if node.tail and first in node.tail:
                holder = node.getparent()
                break
        depth = 0
        while holder is not None and depth < MAX_DEPTH:
            if element_text(holder) == wanted:
                return _locator_of(root, holder)
            holder, depth = holder.getparent(), depth + 1
        return None


def _locator_of(root: Any, element: Any) -> Locator | None:
    """A locator for ``element``: by its ``id`` when that is unique in the page, else by its
    position in the tree; None when it holds anything but plain elements."""
    tags = set()
    for inner in element.iterdescendants():
        if not isinstance(inner.tag, str) or not _SIMPLE_TAG.fullmatch(inner.tag):
            return None  # a comment, a processing instruction, a namespaced element
        tags.add(inner.tag)
    ident = element.get("id")
    path = None
    if ident and "'" not in ident:
        candidate = f"//{element.tag}[@id='{ident}']"
        if len(root.xpath(candidate)) == 1:
            path = candidate
    if path is None:
        path = element.getroottree().getpath(element)
    return Locator(path, frozenset(tags), _share(root, element), agreed=1)
