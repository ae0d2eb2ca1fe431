"""A source's URL rules as HTTP requests (Legado's ``AnalyzeUrl``, written anew).

A URL rule is ``url`` or ``url,{options}``: the options a JSON object (``method``, ``body``,
``charset``, ``headers``; Legado's lax JSON with single quotes is accepted too). ``{{key}}``
and ``{{page}}`` (also ``searchKey``/``searchPage``, and arithmetic on the page such as
``{{(page-1)*20}}``) are filled in; ``<a,b,c>`` picks the page'th value. The search key is
percent-encoded in ``charset`` (UTF-8 by default; GBK sites need ``"charset":"gbk"``), in the
query of a GET and in the form body of a POST. Nothing else in ``{{…}}`` is evaluated: a
source with a script there is not run (:mod:`tracker.booksources.source`).
"""

from __future__ import annotations

import ast
import json
import operator
import re
from dataclasses import dataclass, field
from urllib.parse import quote, quote_plus, urljoin

OPTIONS = re.compile(r"\s*,\s*(?=\{(?!\{))")  # not a ,{{page}} template
PAGES = re.compile(r"<([^<>]*,[^<>]*)>")
TEMPLATE = re.compile(r"\{\{(.*?)\}\}", re.S)
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.FloorDiv: operator.floordiv, ast.Div: operator.truediv}  # fmt: skip


class UrlError(ValueError):
    """A URL rule that cannot be made a request."""


@dataclass
class SourceRequest:
    url: str
    method: str = "GET"
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    charset: str = "utf-8"


def page_number(expression: str, page: int) -> int:
    """Arithmetic on ``page`` (``(page-1)*20``), read by :mod:`ast` with numbers, ``page``
    and + - * / // only: not a script run."""

    def value(node: ast.AST) -> int | float:
        if isinstance(node, ast.Expression):
            return value(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.Name) and node.id in ("page", "searchPage"):
            return page
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        raise UrlError(f"{{{{{expression}}}}} is not arithmetic on the page")

    try:
        result = value(ast.parse(expression.strip(), mode="eval"))
    except (SyntaxError, ZeroDivisionError) as exc:
        raise UrlError(f"{{{{{expression}}}}}: {exc}") from None
    return int(result)


def search_request(
    rule: str, key: str, base_url: str, page: int = 1, headers: dict[str, str] | None = None
) -> SourceRequest:
    """The request of a ``searchUrl`` for ``key`` and ``page``."""
    head, options = _split_options(rule)
    charset = str(options.get("charset") or "utf-8").strip() or "utf-8"
    if charset.lower() == "escape":
        charset = "utf-8"
    try:
        "".encode(charset)
    except LookupError:
        raise UrlError(f"unknown charset {charset!r}") from None
    method = str(options.get("method") or "GET").upper()
    body_template = options.get("body")
    if isinstance(body_template, dict):
        body_template = json.dumps(body_template, ensure_ascii=False)
    json_body = isinstance(body_template, str) and body_template.strip()[:1] in ("{", "[")
    request_headers = {**(headers or {}), **_headers(options.get("headers"))}

    def fill(text: str, encode: bool, plus: bool) -> str:
        def variable(found: re.Match) -> str:
            inner = found.group(1).strip()
            if inner in ("key", "searchKey"):
                if not encode:
                    return key
                try:
                    raw = key.encode(charset)
                except UnicodeEncodeError:
                    raise UrlError(f"{key!r} cannot be written in {charset}") from None
                return quote_plus(raw) if plus else quote(raw, safe="")
            return str(page_number(inner, page))

        text = TEMPLATE.sub(variable, text)
        return PAGES.sub(lambda m: _nth(m.group(1), page), text)

    url = urljoin(base_url, fill(head, encode=True, plus=False).strip())
    body = None
    if method == "POST":
        body_text = fill(str(body_template or ""), encode=not json_body, plus=True)
        body = body_text.encode(charset, "replace")
        if json_body:
            request_headers.setdefault("Content-Type", "application/json")
        else:
            request_headers.setdefault("Content-Type", "application/x-www-form-urlencoded")
    elif method != "GET":
        raise UrlError(f"method {method!r}: only GET and POST are sent")
    return SourceRequest(url, method, body, request_headers, charset)


def _nth(values: str, page: int) -> str:
    choices = [value.strip() for value in values.split(",")]
    return choices[min(page, len(choices)) - 1]


def _split_options(rule: str) -> tuple[str, dict]:
    found = OPTIONS.search(rule)
    if found is None:
        return rule, {}
    head, text = rule[: found.start()], rule[found.end() :]
    try:
        options = json.loads(text)
    except ValueError:
        try:  # Legado also takes JavaScript-style objects: single quotes
            options = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            raise UrlError(f"URL options are not JSON: {text[:80]!r}") from None
    if not isinstance(options, dict):
        raise UrlError(f"URL options are not an object: {text[:80]!r}")
    return head, options


def _headers(value: object) -> dict[str, str]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
