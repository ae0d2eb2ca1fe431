"""How the command line prints: tables that fit the terminal, text safe for it."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Iterable, Sequence
from unicodedata import east_asian_width

# C0 and C1 control characters (ESC starts terminal escape sequences), and line breaks.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def print_table(
    headers: Sequence[str],
    rows: Iterable[Sequence[object]],
    wide: bool = False,
    numeric: Iterable[str] = (),
) -> None:
    """Print a table that fits the terminal (``COLUMNS``, else 80 columns when not a
    terminal): a long cell (an id, a title) wraps onto more lines, it is never cut; numbers
    stay on one line, right-aligned. ``wide`` prints every row on one line whatever the
    width. Cells are printed as plain text (:func:`plain`), Chinese characters two columns
    wide."""
    numeric = {i for i, name in enumerate(headers) if name in set(numeric)}
    cells = [[plain(cell) for cell in row] for row in rows]
    widths = [
        max([width(name)] + [width(row[i]) for row in cells]) for i, name in enumerate(headers)
    ]
    if not wide:
        space = shutil.get_terminal_size((80, 24)).columns - 2 * (len(headers) - 1)
        floor = [
            widths[i] if i in numeric else min(widths[i], max(width(h), 8))
            for i, h in enumerate(headers)
        ]
        while sum(widths) > space:
            shrinkable = [i for i in range(len(widths)) if widths[i] > floor[i]]
            if not shrinkable:
                break
            widest = max(shrinkable, key=lambda i: widths[i])
            widths[widest] -= 1
    for row in [list(headers), *cells]:
        folded = [_fold(cell, widths[i]) for i, cell in enumerate(row)]
        for line in range(max(len(parts) for parts in folded)):
            out = []
            for i, parts in enumerate(folded):
                part = parts[line] if line < len(parts) else ""
                pad = " " * (widths[i] - width(part))
                out.append(pad + part if i in numeric else part + pad)
            print("  ".join(out).rstrip())


def print_listing(
    docs: list[dict],
    as_json: bool,
    empty: str,
    headers: Sequence[str],
    row: Callable[[dict], Sequence[object]],
    numeric: Iterable[str] = (),
) -> None:
    """Stored documents listed by a reading command: as JSON, or ``empty`` when there are none,
    or as a table of one ``row(doc)`` each."""
    if as_json:
        print(json.dumps(docs, ensure_ascii=False, default=str))
    elif not docs:
        print(empty)
    else:
        print_table(headers, [row(doc) for doc in docs], numeric=numeric)


def width(text: str) -> int:
    """Columns ``text`` takes in a terminal: wide (CJK) and full-width characters take two."""
    if text.isascii():
        return len(text)
    return sum(2 if east_asian_width(c) in "WF" else 1 for c in text)


def _fold(text: str, columns: int) -> list[str]:
    """``text`` cut into pieces of at most ``columns`` terminal columns."""
    if width(text) <= columns:
        return [text]
    parts, part, used = [], "", 0
    for c in text:
        size = width(c)
        if used + size > columns and part:
            parts.append(part)
            part, used = "", 0
        part += c
        used += size
    return [*parts, part]


def plain(value: object) -> str:
    """``value`` as one line of text safe for a terminal: control characters (a crawled page
    may hold escape sequences) and line breaks become spaces."""
    return _CONTROL.sub(" ", str(value))
