"""The project's one way of writing times and quantities for people (command line, logs,
reports): times in UTC as ``YYYY-MM-DD HH:MM UTC``, counts with thousands separators."""

from __future__ import annotations

from datetime import UTC, datetime


def when(moment: datetime | str | None) -> str:
    """A time as ``YYYY-MM-DD HH:MM UTC``; ``-`` for none. ISO strings are read; a naive
    datetime is UTC, as pymongo returns them."""
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
