"""Keep only what a browser shows: elements hidden by CSS are dropped before extraction, and the
text of ``::before``/``::after`` pseudo-elements is put where a reader sees it.

Pirate sites put junk characters inside the chapter text in elements a reader never sees
(``天<span class="x9">乱</span>地`` with ``.x9{display:none}``), and some draw real characters
from pseudo-elements (``<i class="c3"></i>`` with ``.c3::after{content:"天"}``), so the HTML text
and the text on screen differ both ways. This module reads the page's CSS the way a browser's
cascade would, for the few properties that decide whether text is seen:

* ``display: none``, ``visibility: hidden|collapse``, ``opacity: 0``, ``font-size: 0`` (also
  through the ``font`` shorthand, ``font: 0/0 a``), ``color: transparent`` (or an alpha of 0),
  text drawn off the screen (``position: absolute|fixed`` with ``left: -9999px`` or the like,
  ``text-indent: -9999em``, in one declaration block), from inline ``style`` attributes, the
  page's ``<style>`` blocks and the same-site stylesheets it links (their text is fetched by
  the crawl: :mod:`tracker.crawling.resources`), and the ``hidden`` and ``aria-hidden="true"``
  attributes;
* ``content`` of ``::before``/``::after`` (strings and ``attr(name)``).

Rules are parsed with tinycss2 (a CSS Syntax Level 3 parser: broken CSS is read the way
browsers read it, an unparsable rule skipped and the rest kept) and their selectors with
cssselect, evaluated as XPath by lxml. The cascade is the browser's, restricted to those
properties: ``!important`` first, then inline styles, then specificity, then source order;
``visibility`` and ``font-size`` are inherited, so a descendant may show itself again
(``visibility: visible``, an absolute ``font-size``) inside a hidden ancestor, while
``display: none`` and ``opacity: 0`` hide a whole subtree. Rules under ``@media`` apply when
the query names neither print nor a viewport size (a desktop reader's screen is assumed; the
responsive variants of a layout are left alone).

**Cost.** Most pages hide nothing with CSS. The work is skipped unless some rule or inline
style could hide something or a pseudo-element has content; a rule is evaluated only when
the classes and ids its selector requires all occur on the page; parsed sheets and inline
declarations are cached by their text (a site repeats the same ``<style>`` on every page).

**Never lose a page.** A block hidden until the page's scripts reveal it (WeChat's
``#js_content``, an app page's body) is most of the page's text: a hidden element holding more
text than everything left visible is kept (counted as ``hidden_body``). Any error in reading
the CSS leaves the page as it was, counted (``css_errors``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple
from urllib.parse import urljoin

import cssselect
import lxml.etree
import tinycss2
from cssselect.parser import Class, CombinedSelector, Hash, Negation

from tracker.reading.webfont import font_face_urls

log = logging.getLogger(__name__)

#: A hidden element with at least this many characters of text may be a body that scripts
#: reveal (see the module doc): it is weighed against the visible text before it is dropped.
HIDDEN_BODY_CHARS = 200
#: Text a pseudo-element may add (longer ``content`` is an ad or an attack, not a character).
MAX_PSEUDO_CHARS = 200

_HIDE, _SHOW, _SHOW_RELATIVE = "hide", "show", "relative"
_PROPERTIES = ("display", "visibility", "opacity", "font-size")
#: Hidden by these, a subtree stays hidden whatever its descendants say.
_FINAL = ("display", "opacity", "offscreen")
#: ``position: absolute|fixed`` with an offset at least this far out (``left: -9999px``): drawn
#: off the screen ("offscreen", a property of our own, decided within one declaration block).
OFFSCREEN_PX = 1000
_ABSOLUTE_UNITS = frozenset(("px", "pt", "pc", "cm", "mm", "q", "in", "rem", "vw", "vh"))
_SIZE_KEYWORDS = frozenset(
    ("xx-small", "x-small", "small", "medium", "large", "x-large", "xx-large", "xxx-large")
)
_TRANSLATOR = cssselect.HTMLTranslator()

# A declaration's place in the cascade: (important, inline, specificity, source order).
Precedence = tuple[bool, bool, tuple[int, int, int], tuple[int, int]]
#: A pseudo-element's content: literal strings and ``("attr", name)`` pieces.
Content = tuple[str | tuple[str, str], ...]


@dataclass(frozen=True)
class Rule:
    """One selector of a style rule, with the declarations that matter here."""

    xpath: str
    specificity: tuple[int, int, int]
    order: int
    pseudo: str | None  # "before" or "after"
    tokens: frozenset[str]  # ".class" and "#id" the selector requires on the page
    states: tuple[tuple[str, str, bool], ...]  # (property, hide/show/relative, important)
    content: Content | None = None
    content_important: bool = False

    @property
    def hides(self) -> bool:
        return self.pseudo is None and any(state == _HIDE for _, state, _ in self.states)


@dataclass
class Visibility:
    """What :func:`show_visible` did to a page."""

    hidden: int = 0  # elements dropped (or blanked) as hidden
    hidden_chars: int = 0  # characters of text in them
    pseudo: int = 0  # ::before/::after texts put in
    hidden_body: int = 0  # hidden elements kept: a body that scripts reveal
    css_errors: int = 0  # sheets or styles that could not be read (the page kept as it was)
    changed: bool = False

    def counts(self) -> dict[str, int]:
        found = {
            "hidden": self.hidden,
            "hidden_chars": self.hidden_chars,
            "pseudo": self.pseudo,
            "hidden_body": self.hidden_body,
            "css_errors": self.css_errors,
        }
        return {key: value for key, value in found.items() if value}


@dataclass
class _Cascade:
    """Winning declarations per element (and per pseudo-element for ``content``)."""

    states: dict[Any, dict[str, tuple[Precedence, str]]] = field(default_factory=dict)
    contents: dict[tuple[Any, str], tuple[Precedence, Content]] = field(default_factory=dict)

    def declare(self, element: Any, prop: str, state: str, precedence: Precedence) -> None:
        found = self.states.setdefault(element, {})
        if prop not in found or found[prop][0] < precedence:
            found[prop] = (precedence, state)

    def state(self, element: Any, prop: str) -> str | None:
        found = self.states.get(element, {}).get(prop)
        return found[1] if found else None


# ----------------------------------------------------------------------------- parsing CSS


def _value_tokens(tokens: Iterable[Any]) -> list[Any]:
    return [t for t in tokens if t.type not in ("whitespace", "comment")]


def _number_state(token: Any) -> str | None:
    """hide (zero), show (absolute or unitless), relative (em, %, …) of a numeric token."""
    if token.type not in ("number", "percentage", "dimension"):
        return None
    if token.value == 0:
        return _HIDE
    if token.type == "dimension" and token.lower_unit not in _ABSOLUTE_UNITS:
        return _SHOW_RELATIVE
    return _SHOW_RELATIVE if token.type == "percentage" else _SHOW


def declaration_state(name: str, tokens: Iterable[Any]) -> str | None:
    """Whether a declaration hides (``hide``), shows (``show``; ``relative`` for a font size
    relative to the parent's) or says nothing we can use (None: ``inherit``, unknown values)."""
    values = _value_tokens(tokens)
    if not values:
        return None
    first = values[0]
    word = first.lower_value if first.type == "ident" else None
    if name == "display":
        if word in ("inherit", "initial", "unset", "revert", None):
            return None
        return _HIDE if word == "none" else _SHOW
    if name == "visibility":
        return {"hidden": _HIDE, "collapse": _HIDE, "visible": _SHOW}.get(word or "")
    if name == "opacity":
        state = _number_state(first)
        return None if state is None else (_HIDE if state == _HIDE else _SHOW)
    if name == "font-size":
        if word in _SIZE_KEYWORDS:
            return _SHOW
        return _number_state(first)
    if name == "font":  # the shorthand: its first number is the size (``font: 0/0 a``)
        for token in values:
            state = _number_state(token)
            if state is not None:
                return state
        return None
    return None


def content_value(tokens: Iterable[Any]) -> Content | None:
    """A ``content`` declaration's strings and ``attr()`` pieces; None for none/normal or a
    value with nothing to show (counters, images and quotes are not text we can read)."""
    pieces: list[str | tuple[str, str]] = []
    for token in _value_tokens(tokens):
        if token.type == "string":
            pieces.append(token.value)
        elif token.type == "function" and token.lower_name == "attr":
            names = [t.value for t in _value_tokens(token.arguments) if t.type == "ident"]
            if names:
                pieces.append(("attr", names[0].lower()))
    return tuple(pieces) or None


def _media_applies(prelude: Iterable[Any]) -> bool:
    """Whether an ``@media`` block applies on a desktop screen (see the module doc)."""
    query = tinycss2.serialize(prelude).lower()
    if "print" in query or "speech" in query or "not " in query:
        return False
    return not any(word in query for word in ("width", "height", "orientation", "aspect"))


def _required_tokens(tree: Any) -> set[str]:
    """Classes and ids a selector requires (not those under :not())."""
    found: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, Negation):
            stack.append(node.selector)  # the negated part requires nothing
            continue
        if isinstance(node, Class):
            found.add("." + node.class_name)
        elif isinstance(node, Hash):
            found.add("#" + node.id)
        if isinstance(node, CombinedSelector):
            stack += [node.selector, node.subselector]
        elif hasattr(node, "selector"):
            stack.append(node.selector)
    return found


@lru_cache(maxsize=4096)
def _selector_rules(
    prelude: str,
) -> tuple[tuple[str, tuple[int, int, int], str | None, frozenset], ...]:
    """(xpath, specificity, pseudo-element, required tokens) of each selector of a rule's
    prelude; selectors cssselect cannot read or translate (``:hover``…) are left out."""
    found = []
    try:
        selectors = cssselect.parse(prelude)
    except cssselect.SelectorError:
        return ()
    for selector in selectors:
        pseudo = selector.pseudo_element
        if pseudo is not None and not isinstance(pseudo, str):
            continue  # a functional pseudo-element
        if pseudo is not None and pseudo.lower() not in ("before", "after"):
            continue
        try:
            xpath = _TRANSLATOR.selector_to_xpath(selector, prefix="descendant-or-self::")
        except (cssselect.SelectorError, cssselect.xpath.ExpressionError, ValueError):
            continue
        found.append(
            (
                xpath,
                selector.specificity(),
                pseudo.lower() if pseudo else None,
                frozenset(_required_tokens(selector.parsed_tree)),
            )
        )
    return tuple(found)


def _declarations(tokens: Any) -> tuple[list[tuple[str, str, bool]], tuple[Content, bool] | None]:
    states: list[tuple[str, str, bool]] = []
    content = None
    positioned = offset = False
    important = False
    for item in tinycss2.parse_blocks_contents(tokens, skip_comments=True, skip_whitespace=True):
        if item.type != "declaration":
            continue
        name = item.lower_name
        if name == "position":
            words = [t.lower_value for t in _value_tokens(item.value) if t.type == "ident"]
            positioned = bool(words) and words[0] in ("absolute", "fixed")
            continue
        if name in ("left", "top", "right", "text-indent", "margin-left", "margin-top"):
            values = _value_tokens(item.value)
            if values and values[0].type == "dimension" and values[0].lower_unit in ("px", "em"):
                px = values[0].value * (16 if values[0].lower_unit == "em" else 1)
                if px <= -OFFSCREEN_PX:
                    offset, important = True, important or item.important
                    if name == "text-indent":  # the text pushed out of its own box
                        positioned = True
            continue
        if name == "color":
            if _transparent(item.value):
                states.append(("visibility", _HIDE, item.important))
            continue
        if name == "content":
            value = content_value(item.value)
            content = (value, item.important) if value else None
            continue
        if name in _PROPERTIES or name == "font":
            state = declaration_state(name, item.value)
            if state is not None:
                states.append(("font-size" if name == "font" else name, state, item.important))
    if positioned and offset:
        states.append(("offscreen", _HIDE, important))
    return states, content


def _transparent(tokens: Iterable[Any]) -> bool:
    """Whether a ``color`` value draws nothing: ``transparent``, or an alpha of 0."""
    values = _value_tokens(tokens)
    if not values:
        return False
    first = values[0]
    if first.type == "ident":
        return first.lower_value == "transparent"
    if first.type == "function" and first.lower_name in ("rgba", "hsla", "rgb", "hsl"):
        numbers = [t for t in _value_tokens(first.arguments) if t.type in ("number", "percentage")]
        return len(numbers) == 4 and numbers[3].value == 0
    if first.type == "hash":
        return len(first.value) in (4, 8) and first.value[-(len(first.value) // 4) :] in ("0", "00")
    return False


def _rules(items: Iterable[Any], out: list[Rule]) -> None:
    """Append the rules of ``items`` to ``out``, numbered in source order."""
    for item in items:
        if item.type == "at-rule":
            keyword = item.lower_at_keyword
            if item.content is None:
                continue
            if (keyword == "media" and _media_applies(item.prelude)) or keyword in (
                "supports",
                "layer",
            ):
                nested = tinycss2.parse_rule_list(
                    item.content, skip_comments=True, skip_whitespace=True
                )
                _rules(nested, out)
            continue
        if item.type != "qualified-rule":
            continue
        states, content = _declarations(item.content)
        if not states and content is None:
            continue
        prelude = tinycss2.serialize(item.prelude).strip()
        for xpath, specificity, pseudo, tokens in _selector_rules(prelude):
            order = len(out)
            if pseudo is None and states:
                out.append(Rule(xpath, specificity, order, None, tokens, tuple(states)))
            elif pseudo is not None and content is not None:
                hidden = tuple(s for s in states if s[0] == "display")
                out.append(
                    Rule(xpath, specificity, order, pseudo, tokens, hidden, content[0], content[1])
                )


@lru_cache(maxsize=512)
def parse_rules(css: str) -> tuple[Rule, ...]:
    """The rules of a stylesheet that decide visibility or give pseudo-element content, in
    source order (cached by text)."""
    items = tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True)
    out: list[Rule] = []
    _rules(items, out)
    return tuple(out)


def relevant_css(css: str) -> str:
    """The rules of ``css`` that matter here, as CSS text: what a crawl keeps of a stylesheet
    and sends with every page that links it (a site's 100 KB sheet is typically a few hundred
    bytes of such rules)."""
    items = tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True)
    kept: list[str] = []

    def walk(rules: Iterable[Any]) -> None:
        for item in rules:
            if item.type == "at-rule" and item.content is not None:
                keyword = item.lower_at_keyword
                if (keyword == "media" and _media_applies(item.prelude)) or keyword in (
                    "supports",
                    "layer",
                ):
                    walk(
                        tinycss2.parse_rule_list(
                            item.content, skip_comments=True, skip_whitespace=True
                        )
                    )
            elif item.type == "qualified-rule":
                states, content = _declarations(item.content)
                if states or content is not None:
                    kept.append(tinycss2.serialize([item]))

    walk(items)
    return "\n".join(kept)


class Sheet(NamedTuple):
    """A fetched stylesheet as a page's reading needs it."""

    css: str  # the rules that decide visibility
    fonts: tuple[str, ...]  # its @font-face sources
    imports: tuple[str, ...] = ()  # the sheets it @imports (same site or not: checked on use)


def read_stylesheet(text: str, url: str) -> Sheet:
    """A fetched sheet as a page needs it (in a crawl's worker process: tinycss2 is pure
    Python). Here, not beside the crawl's resource cache: a worker unpickling the call imports
    this module, which the workers preload, and not Scrapy (~0.4 s of a worker's CPU as the
    first page with a stylesheet arrives)."""
    return Sheet(
        relevant_css(text), tuple(font_face_urls(text, url)), tuple(import_urls(text, url))
    )


def import_urls(css: str, base: str) -> list[str]:
    """The absolute URLs of the sheets ``css`` pulls in with ``@import`` (they come before its
    own rules in the cascade); ``base`` is the URL the sheet's relative URLs resolve against."""
    if "@import" not in css.lower():
        return []
    found = []
    for item in tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True):
        if item.type != "at-rule" or item.lower_at_keyword != "import":
            continue
        media = tinycss2.serialize(item.prelude).lower()
        if "print" in media or "speech" in media:
            continue
        for token in _value_tokens(item.prelude):
            if token.type in ("url", "string"):
                found.append(urljoin(base, token.value.strip()))
                break
            if token.type == "function" and token.lower_name == "url":
                args = [t for t in _value_tokens(token.arguments) if t.type == "string"]
                if args:
                    found.append(urljoin(base, args[0].value.strip()))
                break
    return found


@lru_cache(maxsize=4096)
def inline_states(style: str) -> tuple[tuple[str, str, bool], ...]:
    """The visibility declarations of a ``style`` attribute (cached: sites repeat them)."""
    states, _ = _declarations(style)
    return tuple(states)


# ------------------------------------------------------------------------------ the cascade


_CLASSES = lxml.etree.XPath("//@class", smart_strings=False)
_IDS = lxml.etree.XPath("//@id", smart_strings=False)


def _page_tokens(root: Any) -> set[str]:
    tokens = {"#" + value.strip() for value in _IDS(root)}
    for value in _CLASSES(root):
        tokens.update("." + name for name in value.split())
    return tokens


def _style_contains(*words: str) -> str:
    """An XPath test that ``@style`` contains one of ``words`` (lower, upper or capitalised:
    CSS keywords are case-insensitive, and contains() is C while translate() is not)."""
    cased = {variant for word in words for variant in (word, word.upper(), word.capitalize())}
    return " or ".join(f"contains(@style, '{word}')" for word in sorted(cased))


# One pass over the tree finds what matters (a page has hundreds of styled elements, a
# handful that could hide anything): styles, sheets, and elements that may hide or show.
_SCAN = lxml.etree.XPath(
    "//*[self::style or self::link[@href] or @hidden or @aria-hidden='true'"
    " or (@style and ("
    f"{_style_contains('none', 'hidden', 'opacity', 'font', 'transparent', 'rgba', 'hsla')}"
    f" or {_style_contains('position', 'indent')}))]"
)
_SHOWING = lxml.etree.XPath(
    f"//*[@style and ({_style_contains('display', 'visib', 'opacity', 'font')})]"
)


@dataclass
class _Scan:
    sheets: list[str] = field(default_factory=list)  # <style> texts and linked sheets, in order
    flagged: list[Any] = field(default_factory=list)  # hidden, aria-hidden
    styled: list[Any] = field(default_factory=list)  # inline styles that may hide


def _scan(root: Any, stylesheets: dict[str, str], url: str | None) -> _Scan:
    found = _Scan()
    base = None
    for element in _SCAN(root):
        tag = element.tag
        if tag in ("style", "link"):
            media = (element.get("media") or "").lower()
            if "print" in media or "speech" in media:
                continue
            if tag == "style":
                if element.text:
                    if base is None:
                        base = next(iter(root.xpath("//base/@href")), None) or url or ""
                    for imported in import_urls(element.text, base):
                        if css := stylesheets.get(imported):
                            found.sheets.append(css)
                    found.sheets.append(element.text)
            elif "stylesheet" in (element.get("rel") or "").lower().split():
                if base is None:
                    base = next(iter(root.xpath("//base/@href")), None) or url or ""
                css = stylesheets.get(urljoin(base, (element.get("href") or "").strip()))
                if css:
                    found.sheets.append(css)
            continue
        if element.get("hidden") is not None or element.get("aria-hidden") == "true":
            found.flagged.append(element)
        if element.get("style"):
            found.styled.append(element)
    return found


def _declare_inline(elements: Iterable[Any], cascade: _Cascade) -> bool:
    """Declare the inline styles of ``elements``; whether any hides."""
    hides = False
    for element in elements:
        for prop, state, important in inline_states(element.get("style") or ""):
            cascade.declare(element, prop, state, (important, True, (0, 0, 0), (0, 0)))
            hides = hides or state == _HIDE
    return hides


def show_visible(
    root: Any, stylesheets: dict[str, str] | None = None, url: str | None = None
) -> Visibility:
    """Drop from ``root`` (an lxml.html tree, changed in place) the elements a browser would
    not show and put in the text of pseudo-elements; ``stylesheets`` maps the absolute URL of
    each linked sheet (``url`` is the page's) to its text. Never raises for bad CSS."""
    report = Visibility()
    try:
        _show_visible(root, stylesheets or {}, url, report)
    except Exception as exc:  # hostile CSS or markup: the page is read as it is
        log.debug("visibility check failed: %r", exc)
        report.css_errors += 1
    return report


def _show_visible(
    root: Any, stylesheets: dict[str, str], url: str | None, report: Visibility
) -> None:
    scan = _scan(root, stylesheets, url)
    rules: list[tuple[int, Rule]] = []  # (sheet number, rule): their order in the cascade
    for number, css in enumerate(scan.sheets):
        try:
            rules += [(number, rule) for rule in parse_rules(css)]
        except Exception:
            report.css_errors += 1
    cascade = _Cascade()
    inline_hides = _declare_inline(scan.styled, cascade)
    flagged = scan.flagged
    if not rules and not inline_hides and not flagged:
        return
    tokens = _page_tokens(root) if rules else set()
    applicable = [(number, rule) for number, rule in rules if rule.tokens <= tokens]
    hiding = [rule for _, rule in applicable if rule.hides]
    pseudos = [(number, rule) for number, rule in applicable if rule.pseudo is not None]
    if not hiding and not inline_hides and not flagged and not pseudos:
        return
    if hiding or inline_hides:
        props = {prop for rule in hiding for prop, state, _ in rule.states if state == _HIDE}
        props |= {p for states in cascade.states.values() for p, (_, s) in states.items()}
        for number, rule in applicable:
            if rule.pseudo is None and any(prop in props for prop, _, _ in rule.states):
                for element in root.xpath(rule.xpath):
                    for prop, state, important in rule.states:
                        if prop in props:
                            order = (number, rule.order)
                            precedence = (important, False, rule.specificity, order)
                            cascade.declare(element, prop, state, precedence)
    if hiding or inline_hides:
        _declare_inline(_SHOWING(root), cascade)  # what may show an element again
    hidden = _hidden_elements(cascade, flagged)
    _drop_hidden(root, hidden, cascade, report)
    if pseudos:
        _put_pseudo_content(root, pseudos, report)


def _hidden_elements(cascade: _Cascade, flagged: Sequence[Any]) -> dict[Any, str]:
    """Elements hidden, each with the property that hides it (``attribute`` for ``hidden``
    and ``aria-hidden``)."""
    hidden: dict[Any, str] = {element: "attribute" for element in flagged}
    for element, states in cascade.states.items():
        for prop, (_, state) in states.items():
            if state == _HIDE:
                hidden.setdefault(element, prop)
                if prop in _FINAL:
                    hidden[element] = prop
    return hidden


def _shown_again(cascade: _Cascade, prop: str, element: Any) -> list[Any]:
    """Descendants of ``element`` that show themselves again for an inherited ``prop``."""
    found = []
    for other, states in cascade.states.items():
        winner = states.get(prop)
        if winner is None or winner[1] != _SHOW:
            continue
        if any(ancestor is element for ancestor in other.iterancestors()):
            found.append(other)
    return found


def _text_length(element: Any) -> int:
    return len("".join((element.text_content() or "").split()))


def _drop_hidden(root: Any, hidden: dict[Any, str], cascade: _Cascade, report: Visibility) -> None:
    if not hidden:
        return
    body_chars: int | None = None
    dropped: set[Any] = set()
    # Ancestors first, so that what lies in a dropped subtree is not counted again.
    for element in sorted(hidden, key=lambda e: sum(1 for _ in e.iterancestors())):
        prop = hidden[element]
        if element.getparent() is None:
            continue
        if any(ancestor in dropped for ancestor in element.iterancestors()):
            continue
        chars = _text_length(element)
        if chars >= HIDDEN_BODY_CHARS:
            if body_chars is None:
                body_chars = _text_length(root)
            if chars > body_chars - chars:  # more than all the rest: a body scripts reveal
                report.hidden_body += 1
                continue
        shown = _shown_again(cascade, prop, element) if prop not in _FINAL else []
        report.hidden += 1
        report.changed = True
        if not shown:
            report.hidden_chars += chars
            dropped.add(element)
            _drop(element)
        else:
            report.hidden_chars += _blank_except(element, shown)


def _drop(element: Any) -> None:
    """Remove ``element`` and its subtree, keeping the text that follows it."""
    parent = element.getparent()
    tail = element.tail
    if tail:
        previous = element.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(element)


def _blank_except(element: Any, shown: list[Any]) -> int:
    """Blank the text of ``element``'s subtree outside the ``shown`` descendants; the
    characters blanked."""
    keep = set(shown)
    blanked = 0

    def walk(node: Any) -> None:
        nonlocal blanked
        if node in keep:
            return
        if isinstance(node.tag, str) and node.text:
            blanked += len(node.text.strip())
            node.text = None
        for child in node:
            walk(child)
            if child.tail:  # the tail is the hidden parent's text, shown child or not
                blanked += len(child.tail.strip())
                child.tail = None

    walk(element)
    return blanked


def _put_pseudo_content(root: Any, rules: Sequence[tuple[int, Rule]], report: Visibility) -> None:
    winners: dict[tuple[Any, str], tuple[Precedence, Rule]] = {}
    for number, rule in rules:
        for element in root.xpath(rule.xpath):
            key = (element, rule.pseudo or "")
            order = (number, rule.order)
            precedence = (rule.content_important, False, rule.specificity, order)
            if key not in winners or winners[key][0] < precedence:
                winners[key] = (precedence, rule)
    for (element, pseudo), (_, rule) in winners.items():
        if element.getroottree().getroot() is not root:
            continue  # dropped as hidden
        if any(state == _HIDE for prop, state, _ in rule.states if prop == "display"):
            continue
        text = "".join(
            piece if isinstance(piece, str) else (element.get(piece[1]) or "")
            for piece in rule.content or ()
        )[:MAX_PSEUDO_CHARS]
        if not text.strip():
            continue
        report.pseudo += 1
        report.changed = True
        if pseudo == "before":
            element.text = text + (element.text or "")
        elif len(element):
            last = element[-1]
            last.tail = (last.tail or "") + text
        else:
            element.text = (element.text or "") + text
