"""A Legado book source (书源): its fields, whether it can be run here, and reading a file of
them.

A source file is a JSON array of source objects, or one object. Each source names its site
(``bookSourceUrl``), its ``searchUrl`` and four groups of rules (``ruleSearch``,
``ruleBookInfo``, ``ruleToc``, ``ruleContent``; a group may also be given as a JSON string, as
Legado accepts). A source *runs* when it is a text source (``bookSourceType`` 0) with the rules
a run needs (:data:`NEEDED`) and none of them, nor its URL or headers, needs a script; else
:attr:`BookSource.why_not` says why (``needs script: …`` first). Its host is registered as a
discovered site either way.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from tracker.booksources.rules import needs_script

GROUPS = ("ruleSearch", "ruleBookInfo", "ruleToc", "ruleContent")
#: The rules a run reads, by group: without them a source cannot be run.
NEEDED = {
    "ruleSearch": ("bookList", "name", "bookUrl"),
    "ruleToc": ("chapterList", "chapterUrl"),
    "ruleContent": ("content",),
}
#: Fields that are scripts whenever they are set.
SCRIPT_FIELDS = {
    "ruleContent": ("webJs",),
    "ruleToc": ("preUpdateJs",),
}
#: What a URL's ``{{…}}`` may hold without being a script: the search key and page, or
#: arithmetic on the page number.
URL_VARIABLES = re.compile(r"^(key|page|searchKey|searchPage|[\d\s()+\-*/]*page[\d\s()+\-*/]*)$")
SOURCE_TYPES = {0: "text", 1: "audio", 2: "image", 3: "file"}


class SourceFileError(ValueError):
    """A source file that is not JSON, or holds no source object."""


@dataclass
class BookSource:
    """One source as read from a file: its ``raw`` object kept whole."""

    name: str
    url: str  # bookSourceUrl
    host: str  # the site, as site_key names it (host, and port when given)
    raw: dict[str, Any]
    line: int = 0  # where it starts in its file
    why_not: list[str] = field(default_factory=list)

    @property
    def domain(self) -> str:
        """The site's domain, its ``www.``, ``m.`` or ``wap.`` left out: a run stays on it and
        its subdomains (the mobile pages of ``www.`` sources)."""
        name = self.host.split(":")[0]
        for prefix in ("www.", "m.", "wap."):
            if name.startswith(prefix) and name.count(".") > 1:
                return name[len(prefix) :]
        return name

    @property
    def runnable(self) -> bool:
        return not self.why_not

    def rules(self, group: str) -> dict[str, str]:
        """The rules of ``group`` (a JSON string is read as Legado reads it)."""
        return rule_group(self.raw.get(group))

    @property
    def search_url(self) -> str:
        return str(self.raw.get("searchUrl") or "").strip()

    def headers(self) -> dict[str, str]:
        """The source's ``header`` JSON as request headers ({} when unset or unreadable)."""
        header = self.raw.get("header")
        if isinstance(header, str) and header.strip():
            try:
                header = json.loads(header)
            except ValueError:
                return {}
        if not isinstance(header, dict):
            return {}
        return {str(k): str(v) for k, v in header.items() if k.lower() not in _DROPPED_HEADERS}

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "url": self.url,
            "host": self.host,
            "runnable": self.runnable,
            "why_not": "; ".join(self.why_not),
        }


_DROPPED_HEADERS = {"host", "content-length", "cookie", "proxy"}


def rule_group(value: Any) -> dict[str, str]:
    if isinstance(value, str) and value.strip():
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    if not isinstance(value, dict):
        return {}
    return {
        str(k): v if isinstance(v, str) else "" if v is None else str(v) for k, v in value.items()
    }


def source_from(raw: Any, line: int = 0) -> BookSource:
    """A :class:`BookSource` of one object of a file (ValueError when it is no source: not an
    object, or without a ``bookSourceUrl`` naming an http(s) site)."""
    if not isinstance(raw, dict):
        raise ValueError(f"expected a source object, got {type(raw).__name__}")
    url = str(raw.get("bookSourceUrl") or "").strip()
    base = url.split("#", 1)[0].strip()
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"bookSourceUrl {url!r} is not an http(s) URL")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"bookSourceUrl {url!r} has a bad port") from None
    host = parts.hostname.lower() + (f":{port}" if port else "")
    name = str(raw.get("bookSourceName") or "").strip() or host
    source = BookSource(name=name, url=base, host=host, raw=raw, line=line)
    source.why_not = reasons_not_to_run(source)
    return source


def reasons_not_to_run(source: BookSource) -> list[str]:
    """Why ``source`` cannot be run here ([] when it can): scripts first."""
    raw = source.raw
    scripts = []
    if found := needs_script(source.search_url, lambda inner: bool(URL_VARIABLES.match(inner))):
        scripts.append(f"searchUrl {found!r}")
    if found := re.search(r",\s*\{[^{}]*['\"]?(js|webJs|webView)['\"]?\s*:", source.search_url):
        scripts.append(f"searchUrl option {found.group(1)}")  # webView: a page's scripts
    if needs_script(str(raw.get("header") or "")):
        scripts.append("header")
    for group in GROUPS:
        rules = source.rules(group)
        for key, rule in rules.items():
            if key in SCRIPT_FIELDS.get(group, ()) and rule.strip():
                scripts.append(f"{group}.{key}")
            elif key not in ("imageDecode", "payAction", "formatJs", "imageStyle") and (
                found := needs_script(rule)
            ):
                scripts.append(f"{group}.{key} {found!r}")
    if scripts:
        return [f"needs script: {', '.join(scripts)}"]
    why = []
    if raw.get("enabled") is False:
        why.append("disabled in its file (enabled: false)")
    kind = raw.get("bookSourceType") or 0
    if kind != 0:
        why.append(f"not a text source ({SOURCE_TYPES.get(kind, kind)})")
    if not source.search_url:
        why.append("no searchUrl")
    for group, keys in NEEDED.items():
        rules = source.rules(group)
        missing = [key for key in keys if not rules.get(key, "").strip()]
        if missing:
            why.append(f"no {group}.{'/'.join(missing)}")
    for group, key in (("ruleSearch", "bookList"), ("ruleToc", "chapterList")):
        rule = source.rules(group).get(key, "").strip().lstrip("-+")
        if rule.startswith(":"):
            why.append(f"{group}.{key} is an AllInOne regex (not supported)")
    for group in GROUPS:
        for key, rule in source.rules(group).items():
            if re.search(r"@(put|get):", rule, re.I):
                why.append(f"{group}.{key} uses @put/@get (not supported)")
    return why


# ------------------------------------------------------------------------------ files


@dataclass
class SourceFile:
    """What a source file held: its good sources, and each bad one with its line and why."""

    sources: list[BookSource]
    bad: list[dict[str, Any]]  # {index, line, name, error}


def read_sources(text: str) -> SourceFile:
    """The sources of a file's text (SourceFileError when it is not JSON or holds none)."""
    text = text.lstrip("\ufeff")
    file = SourceFile([], [])
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        if not text.lstrip().startswith("["):
            raise SourceFileError(
                f"not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
            ) from None
        items, lines = _salvage(text, file)
    else:
        items = data if isinstance(data, list) else [data]
        lines = _object_lines(text, len(items) if isinstance(data, list) else 0)
    if not items and not file.bad:
        raise SourceFileError("no source in the file (an empty list)")
    for index, raw in enumerate(items):
        line = lines[index] if index < len(lines) else 0
        try:
            file.sources.append(source_from(raw, line))
        except ValueError as exc:
            name = str(raw.get("bookSourceName") or "") if isinstance(raw, dict) else ""
            file.bad.append({"index": index, "line": line, "name": name, "error": str(exc)})
    return file


def _object_lines(text: str, count: int) -> list[int]:
    """The line where each top-level item of a JSON array starts (``count`` items; one object:
    line 1)."""
    if not count:
        return [1]
    decoder = json.JSONDecoder()
    lines, position = [], text.index("[") + 1
    for _ in range(count):
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        lines.append(text.count("\n", 0, position) + 1)
        try:
            _, position = decoder.raw_decode(text, position)
        except ValueError:
            break
    return lines


_ITEM_START = re.compile(r"\n[ \t]{0,4}\{")


def _salvage(text: str, file: SourceFile) -> tuple[list[Any], list[int]]:
    """The readable objects of a JSON array that does not parse as a whole, with their lines;
    each unreadable one recorded in ``file.bad`` (its line, the JSON error) and skipped to the
    next object starting a line (as exported files are laid out)."""
    decoder = json.JSONDecoder()
    items: list[Any] = []
    lines: list[int] = []
    position = text.index("[") + 1
    while True:
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        if position >= len(text) or text[position] == "]":
            break
        line = text.count("\n", 0, position) + 1
        try:
            raw, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            name = re.search(r'"bookSourceName"\s*:\s*"([^"]*)"', text[position : exc.pos])
            file.bad.append(
                {
                    "index": len(items) + len(file.bad),
                    "line": line,
                    "name": name.group(1) if name else "",
                    "error": f"not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}",
                }
            )
            after = _ITEM_START.search(text, max(exc.pos, position + 1))
            if after is None:
                break
            position = after.start() + 1
            continue
        items.append(raw)
        lines.append(line)
    return items, lines
