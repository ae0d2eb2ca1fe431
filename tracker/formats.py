"""The project's one way of writing times and quantities for people (command line, logs,
reports): times in UTC as ``YYYY-MM-DD HH:MM UTC``, counts with thousands separators, waits in
words."""

from __future__ import annotations

import math
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


def duration(seconds: float) -> str:
    """A wait in words, rounded up: ``45 seconds``, ``2 minutes``, ``1 hour 5 minutes``."""
    whole = max(1, math.ceil(seconds))
    if whole < 60:
        return _plural(whole, "second")
    minutes = math.ceil(whole / 60)
    if minutes < 60:
        return _plural(minutes, "minute")
    hours, minutes = divmod(minutes, 60)
    return _plural(hours, "hour") + (f" {_plural(minutes, 'minute')}" if minutes else "")


def _plural(amount: int, unit: str) -> str:
    return f"{amount} {unit}{'' if amount == 1 else 's'}"
