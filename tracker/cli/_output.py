"""How the command line prints: tables that fit the terminal, times and sizes."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

# C0 and C1 control characters (ESC starts terminal escape sequences), and line breaks.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def print_table(
    headers: Sequence[str],
    rows: Iterable[Sequence[object]],
    wide: bool = False,
    numeric: Iterable[str] = (),
) -> None:
    """Print a table that fits the terminal: a long cell (an id, a title) wraps onto more
    lines, it is never cut; numbers stay on one line. ``wide`` prints every row on one line
    whatever the terminal's width. Cells are printed as text (markup in crawled titles is
    not interpreted)."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    numeric = set(numeric)
    table = Table(box=None, pad_edge=False, header_style="bold")
    for name in headers:
        if name in numeric:
            table.add_column(name, justify="right", no_wrap=True)
        else:
            table.add_column(name, overflow="fold", min_width=min(len(name), 8))
    for row in rows:
        table.add_row(*(Text(plain(cell)) for cell in row))
    console = Console(width=1_000_000 if wide else None, highlight=False)
    console.print(table, crop=not wide, soft_wrap=wide)


def when(moment: datetime | str | None) -> str:
    """A time as ``YYYY-MM-DD HH:MM UTC`` (the command line's one time format); ``-`` for
    none. ISO strings are read; a naive datetime is UTC, as pymongo returns them."""
    if moment is None or moment == "":
        return "-"
    if isinstance(moment, str):
        try:
            moment = datetime.fromisoformat(moment)
        except ValueError:
            return moment
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def count(value: float, unit: str = "") -> str:
    """A quantity with thousands separators (``12,345 characters``); a fraction keeps two
    decimals."""
    text = f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"
    return f"{text} {unit}" if unit else text


def plain(value: object) -> str:
    """``value`` as one line of text safe for a terminal: control characters (a crawled page
    may hold escape sequences) and line breaks become spaces."""
    return _CONTROL.sub(" ", str(value))
