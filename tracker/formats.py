"""The project's one way of writing times and quantities for people (command line, logs,
reports, the console): times in UTC as ``YYYY-MM-DD HH:MM UTC``, or in a display time zone
(``display_timezone``: notices, the HTML report, the console) as ``YYYY-MM-DD HH:MM``, counts
with thousands separators, shares as percentages, a count with its noun (``1 chapter``,
``3 articles``), and waits in words."""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime, tzinfo
from functools import cache
from typing import Any


def when(moment: datetime | str | None, zone: str | None = None) -> str:
    """A time as ``YYYY-MM-DD HH:MM UTC``, or with ``zone`` (an IANA name, the
    ``display_timezone``) as ``YYYY-MM-DD HH:MM`` there; ``-`` for none. ISO strings are read;
    a naive datetime is UTC, as pymongo returns them."""
    if moment is None or moment == "":
        return "-"
    if isinstance(moment, str):
        try:
            moment = datetime.fromisoformat(moment)
        except ValueError:
            return moment
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    if zone:
        return moment.astimezone(time_zone(zone)).strftime("%Y-%m-%d %H:%M")
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


@cache
def time_zone(name: str) -> tzinfo:
    """The time zone ``name`` (checked when the setting is loaded)."""
    from zoneinfo import ZoneInfo

    return ZoneInfo(name)


def zone_label(name: str, moment: datetime | None = None) -> str:
    """``Asia/Shanghai (UTC+08:00)``: a time zone as a reader is told which it is."""
    offset = (moment or datetime.now(UTC)).astimezone(time_zone(name)).strftime("%z")
    return f"{name} (UTC{offset[:3]}:{offset[3:]})"


def count(value: float, unit: str = "") -> str:
    """A quantity with thousands separators (``12,345 characters``); a fraction keeps two
    decimals."""
    text = f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"
    return f"{text} {unit}" if unit else text


def share(value: Any) -> str:
    """A share (0–1) as a percentage with one decimal (``22.5%``); ``-`` for none."""
    return f"{float(value):.1%}" if is_number(value) else "-"


def plural(number: int, noun: str) -> str:
    """``1 chapter``, ``2 chapters``, ``1,024 articles`` (nouns that take an s)."""
    return f"{count(number)} {noun}{'' if number == 1 else 's'}"


def is_number(value: Any) -> bool:
    """A number to show (not a bool, not None or a string)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def duration(seconds: float) -> str:
    """A wait in words, rounded up: ``45 seconds``, ``2 minutes``, ``1 hour 5 minutes``."""
    whole = max(1, math.ceil(seconds))
    if whole < 60:
        return plural(whole, "second")
    minutes = math.ceil(whole / 60)
    if minutes < 60:
        return plural(minutes, "minute")
    hours, minutes = divmod(minutes, 60)
    return plural(hours, "hour") + (f" {plural(minutes, 'minute')}" if minutes else "")


def number_ranges(numbers: Iterable[int]) -> str:
    """``1–98`` or ``1–3, 7, 9–12``: the numbers, sorted, runs joined."""
    runs: list[list[int]] = []
    for number in sorted(numbers):
        if runs and number <= runs[-1][1] + 1:
            runs[-1][1] = max(runs[-1][1], number)
        else:
            runs.append([number, number])
    return ", ".join(str(a) if a == b else f"{a}–{b}" for a, b in runs)
