"""Legado's (阅读) rule language, read over lxml, cssselect and jsonpath-ng.

A book source reads a site with rules; this module evaluates them on one page (or one item of
a list). Written from Legado's rule help and the behaviour of its ``AnalyzeRule``,
``AnalyzeByJSoup``, ``AnalyzeByXPath`` and ``AnalyzeByJSonPath`` (no code taken from it). A rule
is, in this order of reading:

* ``RULE##regex##replacement`` (``###`` at the end: only the first match, replaced): applied to
  the rule's string result; ``##regex`` alone deletes what the regex matches;
* ``{{rule}}`` templates: the text outside the braces kept, each inner rule (it must carry a
  rule mark: ``@@``, ``@CSS:``, ``@XPath:``, ``//``, ``@Json:``, ``$.``) replaced by its string;
  JSON rules also take ``{$.path}``;
* the mode, from a mark: ``@CSS:`` (a CSS selector, ``@`` then the getter), ``@@`` or none (the
  default JSOUP chain), ``@XPath:`` or a leading ``/``, ``@Json:`` or ``$.``/``$[`` (JSONPath; a
  bare rule on JSON content is a path too, ``$.`` implied);
* ``A&&B`` (all results of both), ``A||B`` (the first that finds something), ``A%%B``
  (interleaved), split at the first of them met outside brackets and quotes;
* the JSOUP chain, segments split at ``@``: ``class.X``, ``tag.X``, ``id.X``, ``text.X``
  (elements whose own text holds X), ``children`` or a CSS selector, each with an optional
  index: ``.N`` (``.0:2:-1`` several), ``!N`` (all but), or ``[N, a:b:step, !…]`` (negative
  indexes count from the end, ranges include both ends and may run backwards); the last segment
  of a string rule is the getter: ``text``, ``textNodes``, ``ownText``, ``html``, ``all`` or an
  attribute name.

Scripts (``@js:``, ``<js>``, a ``{{…}}`` without a rule mark, ``java.…``) are never run:
:func:`needs_script` finds them, and evaluating one raises :class:`ScriptRule`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from copy import deepcopy
from functools import lru_cache
from typing import Any
from urllib.parse import urljoin

import lxml.etree
import lxml.html
from cssselect import SelectorError
from lxml.cssselect import CSSSelector

#: Marks of a rule (not a script) inside ``{{…}}``.
RULE_MARKS = ("@", "$.", "$[", "//")
#: Marks of a script anywhere in a rule.
SCRIPT = re.compile(r"@js:|<js>|</js>|\bjava\.|\beval\s*\(", re.I)
TEMPLATE = re.compile(r"\{\{(.*?)\}\}", re.S)
JSON_TEMPLATE = re.compile(r"\{(\$\.[^{}]+)\}")
GETTERS = ("text", "textNodes", "ownText", "html", "all")
_BRACKET_INDEX = re.compile(r"^(.*?)\[(!?)([-\d:,\s]+)\]$", re.S)
_DOT_INDEX = re.compile(r"^(.*?)([.!])(-?\d+(?::-?\d+)*)$", re.S)
_PAIRS = {"[": "]", "(": ")", "{": "}"}


class RuleError(ValueError):
    """A rule that cannot be read (bad regex, selector, XPath or JSONPath)."""


class ScriptRule(RuleError):
    """A rule that would need a script run."""


def needs_script(rule: str, allowed: Callable[[str], bool] | None = None) -> str | None:
    """The script ``rule`` holds (its first ~40 characters), or None. ``allowed`` accepts the
    inner text of ``{{…}}`` that is not a script where it stands (a URL's ``key``, ``page``)."""
    if not rule:
        return None
    if found := SCRIPT.search(rule):
        return rule[found.start() : found.start() + 40]
    for inner in TEMPLATE.findall(rule):
        inner = inner.strip()
        if inner.startswith(RULE_MARKS) or (allowed is not None and allowed(inner)):
            continue
        return "{{" + inner[:36] + "}}"
    return None


def split_top(rule: str, operators: tuple[str, ...]) -> tuple[list[str], str]:
    """``rule`` split at the first of ``operators`` met outside brackets and quotes (and at
    each later occurrence of that one): the parts and the operator ("" when none)."""
    depth, quote, op, parts, start, i = [], "", "", [], 0, 0
    while i < len(rule):
        char = rule[i]
        if quote:
            if char == "\\":
                i += 2
                continue
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in _PAIRS:
            depth.append(_PAIRS[char])
        elif depth and char == depth[-1]:
            depth.pop()
        elif not depth:
            for candidate in (op,) if op else operators:
                if rule.startswith(candidate, i):
                    op = candidate
                    parts.append(rule[start:i])
                    i += len(candidate)
                    start = i
                    break
            else:
                i += 1
                continue
            continue
        i += 1
    parts.append(rule[start:])
    return parts, op


def java_replacement(replacement: str) -> str:
    """A Java regex replacement (``$1``, ``\\$``) as Python's (``\\g<1>``)."""
    out, i = [], 0
    while i < len(replacement):
        char = replacement[i]
        if char == "\\" and i + 1 < len(replacement):
            out.append(re.escape(replacement[i + 1]) if replacement[i + 1] != "\\" else "\\\\")
            i += 2
        elif char == "$" and i + 1 < len(replacement) and replacement[i + 1].isdigit():
            j = i + 1
            while j < len(replacement) and replacement[j].isdigit() and j - i <= 2:
                j += 1
            out.append(f"\\g<{replacement[i + 1 : j]}>")
            i = j
        else:
            out.append("\\\\" if char == "\\" else char)
            i += 1
    return "".join(out)


@lru_cache(maxsize=512)
def _regex(pattern: str) -> re.Pattern:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise RuleError(f"bad regex {pattern!r}: {exc}") from None


def apply_replace(text: str, rule: str) -> str:
    """``text`` with a ``##regex##replacement[###]`` tail applied (Legado's replaceRegex)."""
    pieces = rule.split("##")
    if len(pieces) < 2 or not pieces[1]:
        return text
    regex, replacement = _regex(pieces[1]), java_replacement(pieces[2] if len(pieces) > 2 else "")
    try:
        if len(pieces) > 3:  # ###: the first match alone, replaced
            found = regex.search(text)
            return regex.sub(replacement, found.group(0), count=1) if found else ""
        return regex.sub(replacement, text)
    except (re.error, IndexError) as exc:
        raise RuleError(f"bad replacement {pieces[2]!r}: {exc}") from None


# ---------------------------------------------------------------------------- contents


def parse_content(text: str) -> Any:
    """A page's body as JSON data when it is JSON, else as an lxml HTML document."""
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped[:1] in ("{", "["):
        try:
            return json.loads(stripped)
        except ValueError:
            pass
    try:
        return lxml.html.document_fromstring(text)
    except (lxml.etree.ParserError, ValueError):  # an empty or unparsable body: no element
        return lxml.html.Element("html")


def is_element(value: Any) -> bool:
    return isinstance(value, lxml.etree._Element)


def html_to_text(html: str) -> str:
    """The text of an HTML fragment, a line for each ``<br>``, paragraph or block."""
    if "<" not in html:
        return html
    try:
        root = lxml.html.fragment_fromstring(html, create_parent="div")
    except (lxml.etree.ParserError, ValueError):
        return html
    for element in root.iter("script", "style"):
        element.drop_tree() if element.getparent() is not None else None
    for element in root.iter("br", "p", "div", "li", "h1", "h2", "h3", "tr"):
        element.tail = "\n" + (element.tail or "")
        if element.tag != "br":
            element.text = "\n" + (element.text or "")
    return "\n".join(line.strip() for line in root.text_content().splitlines() if line.strip())


# ----------------------------------------------------------------------------- analyzer


class Analyzer:
    """Rules evaluated on ``content``: an lxml element, JSON data, or a page's text (parsed by
    :func:`parse_content`); ``base_url`` makes URLs absolute."""

    def __init__(self, content: Any, base_url: str = "") -> None:
        self.content = parse_content(content) if isinstance(content, str) else content
        self.base_url = base_url

    @property
    def is_json(self) -> bool:
        return not is_element(self.content)

    # -- public ----------------------------------------------------------------------------

    def elements(self, rule: str) -> list[Any]:
        """The items a list rule (``bookList``, ``chapterList``) selects."""
        rule = _checked(rule)
        if rule.startswith("-"):  # Legado: a leading "-" lists in reverse order
            return list(reversed(self.elements(rule[1:])))
        return self._each(rule.removeprefix("+").split("##")[0], self._elements_one)

    def strings(self, rule: str) -> list[str]:
        """Every string ``rule`` finds (its ``##`` replacement applied to each)."""
        head, _, tail = _checked(rule).partition("##")
        if "{{" in head:
            values = [self._template(head)]
        else:
            values = self._each(head, self._strings_one) if head else []
        if tail:
            values = [apply_replace(value, "##" + tail) for value in values]
        return values

    def string(self, rule: str) -> str:
        """The rule's strings joined by newlines ("" when it finds nothing)."""
        return "\n".join(self.strings(rule)).strip()

    def url(self, rule: str) -> str:
        """The first string of ``rule`` as an absolute URL ("" when none)."""
        urls = self.urls(rule)
        return urls[0] if urls else ""

    def urls(self, rule: str) -> list[str]:
        return [
            urljoin(self.base_url, value.strip()) for value in self.strings(rule) if value.strip()
        ]

    # -- modes -----------------------------------------------------------------------------

    def _mode(self, rule: str) -> tuple[str, str]:
        lowered = rule.lower()
        if lowered.startswith("@css:"):
            return "css", rule[5:]
        if rule.startswith("@@"):
            return "jsoup", rule[2:]
        if lowered.startswith("@xpath:"):
            return "xpath", rule[7:]
        if lowered.startswith("@json:"):
            return "json", rule[6:]
        if self.is_json or rule.startswith(("$.", "$[")):
            return "json", rule
        if rule.startswith("/"):
            return "xpath", rule
        return "jsoup", rule

    def _each(self, rule: str, one: Callable[[str, str], list[Any]]) -> list[Any]:
        """``one(mode, part)`` of each part of ``rule`` split at ``&&``, ``||`` or ``%%``,
        combined as that operator says."""
        if not rule:
            return []
        mode, body = self._mode(rule)
        parts, op = split_top(body, ("&&", "||", "%%"))
        found = []
        for part in parts:
            got = one(mode, part.strip())
            if got:
                found.append(got)
                if op == "||":
                    break
        return _combine(found, op)

    def _template(self, rule: str) -> str:
        def inner(found: re.Match) -> str:
            text = found.group(1).strip()
            if not text.startswith(RULE_MARKS):
                raise ScriptRule(f"{{{{{text[:40]}}}}} is a script")
            return self.string(text)

        return TEMPLATE.sub(inner, rule)

    def _elements_one(self, mode: str, rule: str) -> list[Any]:
        if not rule:
            return []
        if mode == "json":
            values = self._json(rule)
            if len(values) == 1 and isinstance(values[0], list):
                return list(values[0])
            return values
        if self.is_json:
            return []
        if mode == "xpath":
            return [v for v in self._xpath(rule) if is_element(v)]
        if mode == "css":
            return _css(self.content, rule)
        elements = [self.content]
        for segment in _split_chain(rule):
            elements = [found for element in elements for found in _segment(element, segment)]
        return elements

    def _strings_one(self, mode: str, rule: str) -> list[str]:
        if not rule:
            return []
        if mode == "json":
            if JSON_TEMPLATE.search(rule):
                return [JSON_TEMPLATE.sub(lambda m: _text_of_json(self._json(m.group(1))), rule)]
            return [s for s in (_json_string(v) for v in self._json(rule)) if s]
        if self.is_json:
            return []
        if mode == "xpath":
            return _xpath_strings(self._xpath(rule))
        if mode == "css":
            selector, _, getter = rule.rpartition("@")
            if not selector:
                selector, getter = rule, "text"
            return _get(_css(self.content, selector), getter, self.base_url)
        segments = _split_chain(rule)
        getter = segments.pop() if segments else "text"
        if not segments:  # a getter alone applies to the content itself
            return _get([self.content], getter, self.base_url)
        elements = [self.content]
        for segment in segments:
            elements = [found for element in elements for found in _segment(element, segment)]
        return _get(elements, getter, self.base_url)

    def _json(self, path: str) -> list[Any]:
        if not path.startswith(("$", "@")):
            path = "$." + path
        jsonpath = _jsonpath(path)
        try:
            return [match.value for match in jsonpath.find(self.content)]
        except Exception as exc:  # the library's own failures on odd data (a filter on a str)
            raise RuleError(f"JSONPath {path!r} failed: {exc!r}") from None

    def _xpath(self, path: str) -> list[Any]:
        path, getter = _xpath_getter(path)
        try:
            found = self.content.xpath(path)
        except lxml.etree.XPathError as exc:
            raise RuleError(f"bad XPath {path!r}: {exc}") from None
        found = found if isinstance(found, list) else [found]
        if getter:
            return _get([v for v in found if is_element(v)], getter, self.base_url)
        return found


@lru_cache(maxsize=512)
def _jsonpath(path: str) -> Any:
    # jsonpath-ng is imported at the first JSONPath rule: every crawl process loads this module
    # (Scrapy imports all the spiders), and most never read one (~16 ms of each start)
    from jsonpath_ng.exceptions import JsonPathLexerError, JsonPathParserError
    from jsonpath_ng.ext import parse

    try:
        return parse(path)
    except (JsonPathLexerError, JsonPathParserError) as exc:
        raise RuleError(f"bad JSONPath {path!r}: {exc}") from None
    except Exception as exc:  # the library's own failures on odd paths
        raise RuleError(f"JSONPath {path!r} failed: {exc!r}") from None


def _checked(rule: str | None) -> str:
    """``rule`` stripped; ScriptRule when it needs a script."""
    rule = (rule or "").strip()
    if needs_script(rule):
        raise ScriptRule(f"the rule needs a script: {rule[:60]!r}")
    return rule


def _combine(found: list[list[Any]], op: str) -> list[Any]:
    if op == "%%" and found:
        return [group[i] for i in range(len(found[0])) for group in found if i < len(group)]
    return [value for group in found for value in group]


def _json_string(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dict | list):
        if isinstance(value, list) and all(not isinstance(v, dict | list) for v in value):
            return "\n".join(_json_string(v) for v in value)
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _text_of_json(values: list[Any]) -> str:
    return "\n".join(_json_string(value) for value in values)


# -------------------------------------------------------------------------- JSOUP chains


def _split_chain(rule: str) -> list[str]:
    """A default rule's segments, split at ``@`` outside brackets (``a[href@x]``)."""
    parts, _ = split_top(rule.strip().lstrip("@"), ("@",))
    return [part.strip() for part in parts if part.strip()]


def _segment(element: Any, segment: str) -> list[Any]:
    """The elements one segment of a chain selects under ``element``."""
    selector, exclude, indexes = _indexes(segment)
    found = _select(element, selector)
    if indexes is None:
        return found
    chosen = _pick(len(found), indexes)
    if exclude:
        drop = set(chosen)
        return [e for i, e in enumerate(found) if i not in drop]
    return [found[i] for i in chosen]


def _indexes(segment: str) -> tuple[str, bool, list[Any] | None]:
    """``(selector, exclude, indexes)`` of a segment: an int is an index, a tuple
    ``(start, end, step)`` an inclusive range (None ends: the list's ends)."""
    if found := _BRACKET_INDEX.match(segment):
        indexes: list[Any] = []
        for item in found.group(3).split(","):
            item = item.strip()
            if not item:
                continue
            if ":" in item:
                bounds = [int(b) if b.strip() else None for b in item.split(":")]
                start, end = bounds[0], bounds[1]
                step = bounds[2] if len(bounds) > 2 and bounds[2] is not None else 1
                indexes.append((start, end, step))
            else:
                indexes.append(int(item))
        return found.group(1), found.group(2) == "!", indexes
    if found := _DOT_INDEX.match(segment):
        return found.group(1), found.group(2) == "!", [int(i) for i in found.group(3).split(":")]
    return segment, False, None


def _pick(size: int, indexes: list[Any]) -> list[int]:
    """The positions ``indexes`` name in a list of ``size`` (out-of-range ones left out, each
    once, in order)."""
    chosen: list[int] = []
    for index in indexes:
        if isinstance(index, int):
            position = index + size if index < 0 else index
            if 0 <= position < size:
                chosen.append(position)
            continue
        start, end, step = index
        start = 0 if start is None else start + size if start < 0 else start
        end = size - 1 if end is None else end + size if end < 0 else end
        if (start < 0 and end < 0) or (start >= size and end >= size) or size == 0:
            continue
        start, end = min(max(start, 0), size - 1), min(max(end, 0), size - 1)
        step = abs(step) or 1
        chosen.extend(range(start, end + 1, step) if end >= start else range(start, end - 1, -step))
    return list(dict.fromkeys(chosen))


def _select(element: Any, selector: str) -> list[Any]:
    if not selector or selector == "children":
        return [child for child in element if is_element(child) and isinstance(child.tag, str)]
    kind, _, name = selector.partition(".")
    if kind == "class" and name:
        return element.xpath(
            "descendant-or-self::*[contains(concat(' ', normalize-space(@class), ' '), $c)]",
            c=f" {name} ",
        )
    if kind == "tag" and name:
        return [e for e in element.iter(name) if is_element(e)]
    if kind == "id" and name:
        return element.xpath("descendant-or-self::*[@id=$i]", i=name)
    if kind == "text" and name:
        lowered = name.lower()
        return [
            e for e in element.iter() if isinstance(e.tag, str) and lowered in _own_text(e).lower()
        ]
    return _css(element, selector)


def _css(element: Any, selector: str) -> list[Any]:
    try:
        return _css_selector(selector.strip())(element)
    except (SelectorError, lxml.etree.XPathError) as exc:
        raise RuleError(f"bad CSS selector {selector!r}: {exc}") from None


@lru_cache(maxsize=512)
def _css_selector(selector: str) -> CSSSelector:
    try:
        return CSSSelector(selector)
    except SelectorError as exc:
        raise RuleError(f"bad CSS selector {selector!r}: {exc}") from None


def _own_text(element: Any) -> str:
    texts = [element.text or ""] + [child.tail or "" for child in element]
    return " ".join(" ".join(texts).split())


def _text(element: Any) -> str:
    skip = {id(e) for e in element.iter("script", "style")}
    pieces = []
    for node in element.iter():
        if id(node) in skip or not isinstance(node.tag, str):
            if node is not element and node.tail:
                pieces.append(node.tail)
            continue
        if node.tag == "br":
            pieces.append(" ")
        if node.text:
            pieces.append(node.text)
        if node is not element and node.tail:
            pieces.append(node.tail)
    return " ".join("".join(pieces).split())


def _outer_html(element: Any, clean: bool) -> str:
    if clean:
        element = deepcopy(element)
        for found in list(element.iter("script", "style")):
            if found.getparent() is not None:
                found.drop_tree()
    return lxml.html.tostring(element, encoding="unicode", with_tail=False)


def _get(elements: list[Any], getter: str, base_url: str) -> list[str]:
    """What a chain's last segment takes from its elements."""
    if getter == "text":
        return [t for t in (_text(e) for e in elements) if t]
    if getter == "ownText":
        return [t for t in (_own_text(e) for e in elements) if t]
    if getter == "textNodes":
        found = []
        for element in elements:
            texts = [element.text or ""] + [child.tail or "" for child in element]
            lines = [t.strip() for t in texts if t.strip()]
            if lines:
                found.append("\n".join(lines))
        return found
    if getter in ("html", "all"):
        html = "\n".join(_outer_html(e, getter == "html") for e in elements)
        return [html] if html else []
    values: list[str] = []
    absolute = getter.startswith("abs:")
    name = getter[4:] if absolute else getter
    for element in elements:
        value = (element.get(name) or "").strip()
        if absolute and value:
            value = urljoin(base_url, value)
        if value and value not in values:
            values.append(value)
    return values


# ------------------------------------------------------------------------------- XPath

_XPATH_GETTERS = {"allText()": "text", "text()": "", "html()": "html", "outerHtml()": "all"}


def _xpath_getter(path: str) -> tuple[str, str]:
    """JsoupXpath's own functions at the end of a path (``/allText()``, ``/html()``,
    ``/outerHtml()``) as a getter over the elements before them."""
    for function, getter in _XPATH_GETTERS.items():
        if getter and path.endswith("/" + function):
            return path[: -len(function) - 1], getter
    return path, ""


def _xpath_strings(values: list[Any]) -> list[str]:
    found = []
    for value in values:
        text = _text(value) if is_element(value) else str(value).strip()
        if text:
            found.append(text)
    return found
