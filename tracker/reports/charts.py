"""The report's charts, as geometry: where each bar, rule, label and line of an SVG chart goes.

The SVG itself is drawn by the template macros of ``tracker/html/templates/charts.html`` (one
``draw`` for every chart), so the report and the console draw the same charts, inline, with no
script and no network access, and every label (site names and work titles come from crawled
pages) is escaped by the templates like any other value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tracker.formats import count

TOTAL_COLOUR = "#e8a3a3"
NEW_COLOUR = "#c33"
BAR_COLOUR = "#4a78b5"
LINE_COLOUR = "#c33"
GRID_COLOUR = "#ddd"
MISSING_COLOUR = "#bbb"
LABEL_CHARS = 28  # a longer label is cut (the whole of it is the label's tooltip)


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    colour: str
    tip: str = ""  # the tooltip (an SVG <title>)


@dataclass(frozen=True)
class Label:
    x: float
    y: float
    text: str
    anchor: str = "start"  # SVG text-anchor: start, middle, end
    tip: str = ""


@dataclass(frozen=True)
class Rule:
    x1: float
    y1: float
    x2: float
    y2: float


@dataclass
class Chart:
    """One SVG chart: ``kind`` "chart" (titled, at full size) or "spark" (a small line)."""

    kind: str
    width: int
    height: int
    title: str = ""
    rules: list[Rule] = field(default_factory=list)
    bars: list[Bar] = field(default_factory=list)
    labels: list[Label] = field(default_factory=list)
    lines: list[list[tuple[float, float]]] = field(default_factory=list)  # polylines
    dots: list[tuple[float, float]] = field(default_factory=list)  # lone points of a line
    grid: str = GRID_COLOUR  # the rules' colour
    ink: str = LINE_COLOUR  # the lines' and dots' colour


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 5, 10, 20, 50… (times a power of ten) at least ``value``, so the
    axis ticks at half of it are round numbers too."""
    scale = 1.0
    while scale * 10 <= value:
        scale *= 10
    return next(step * scale for step in (1, 2, 5, 10) if step * scale >= value)


def daily_bars(
    days: Sequence[tuple[str, int | None, int | None]],
    *,
    title: str,
    width: int = 720,
    height: int = 220,
) -> Chart:
    """Bars of ``(YYYY-MM-DD, total, new)`` per day. When any day has a count of new items,
    each day has two bars side by side, all items and new ones, each in its colour with a
    legend (a new bar drawn over the total would hide it when everything is new); else one bar
    a day. A day with no figures (total None) is marked with a grey tick."""
    left, right, top, bottom = 40, 10, 24, 34
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = nice_ceiling(max([total or 0 for _, total, _ in days] + [2]))
    slot = plot_w / max(len(days), 1)
    paired = any(new is not None for _, _, new in days)
    bar_w = max(slot * (0.38 if paired else 0.7), 1.0)
    group_w = bar_w * (2 if paired else 1)
    chart = Chart("chart", width, height, title)
    for fraction in (0.0, 0.5, 1.0):
        y = _r(top + plot_h * (1 - fraction))
        chart.rules.append(Rule(left, y, width - right, y))
        chart.labels.append(Label(left - 6, _r(y + 4), count(peak * fraction), "end"))
    base = top + plot_h
    label_every = max(1, len(days) // 6)
    width_one = _r(bar_w)
    for i, (day, total, new) in enumerate(days):
        x = left + i * slot + (slot - group_w) / 2
        if total is None:
            tip = f"{day}: no report"
            chart.bars.append(Bar(_r(x), _r(base - 2), _r(group_w), 2, MISSING_COLOUR, tip))
        else:
            tip = f"{day}: {total} in all" + (f", {new or 0} new" if paired else "")
            h_total = plot_h * total / peak
            chart.bars.append(
                Bar(_r(x), _r(base - h_total), width_one, _r(h_total), TOTAL_COLOUR, tip)
            )
            if paired:  # right beside it
                h_new = plot_h * min(new or 0, total) / peak
                chart.bars.append(
                    Bar(
                        _r(_r(x) + width_one),
                        _r(base - h_new),
                        width_one,
                        _r(h_new),
                        NEW_COLOUR,
                        tip,
                    )
                )
        if i % label_every == 0 or i == len(days) - 1:
            chart.labels.append(Label(_r(x + group_w / 2), height - bottom + 14, day[5:], "middle"))
    legend = [("all", TOTAL_COLOUR), ("new", NEW_COLOUR)] if paired else []
    for n, (name, colour) in enumerate(legend):
        at = left + n * 44
        chart.bars.append(Bar(at, height - 12, 10, 10, colour))
        chart.labels.append(Label(at + 14, height - 3, name))
    return chart


def horizontal_bars(
    items: Sequence[tuple[str, float]], *, title: str, width: int = 520, unit: str = ""
) -> Chart:
    """One labelled bar per ``(label, value)``, longest first as given."""
    row, top, label_w, right = 22, 24, 190, 60
    height = top + row * max(len(items), 1) + 8
    plot_w = width - label_w - right
    peak = max([value for _, value in items] + [1])
    chart = Chart("chart", width, height, title)
    if not items:
        chart.labels.append(Label(10, top + 14, "nothing to show"))
    for i, (label, value) in enumerate(items):
        y = top + i * row
        shown = label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"
        bar = plot_w * value / peak
        chart.labels.append(Label(label_w - 6, y + 14, shown, "end", tip=label))
        chart.bars.append(Bar(label_w, y + 3, _r(max(bar, 1)), row - 8, BAR_COLOUR))
        chart.labels.append(Label(_r(label_w + bar + 4), y + 14, f"{count(value)}{unit}"))
    return chart


def sparkline(values: Sequence[int | None], *, width: int = 150, height: int = 28) -> Chart:
    """A small line of daily values; days without figures (None) break the line."""
    peak = max([v for v in values if v is not None] + [1])
    step = width / max(len(values) - 1, 1)
    chart = Chart("spark", width, height)
    current: list[tuple[float, float]] = []
    for i, value in enumerate([*values, None]):
        if value is None:
            if len(current) > 1:
                chart.lines.append(current)
            elif current:
                chart.dots.append(current[0])
            current = []
            continue
        current.append((_r(i * step), _r(height - 3 - (height - 6) * value / peak)))
    return chart


def report_charts(report: dict[str, Any]) -> list[Chart]:
    """The report's charts: pages per day (all and new), top sites, top works."""
    trend = [(t["date"], t.get("pages"), t.get("new_pages")) for t in report.get("trend", [])]
    sites = [(s["site"], s["pages"]) for s in report.get("sites", [])[:10]]
    works = sorted(((w["work"], len(w["pages"])) for w in report["works"]), key=lambda w: -w[1])
    return [
        daily_bars(trend, title=f"Infringing pages per day, last {len(trend)} days"),
        horizontal_bars(sites, title="Top sites (pages)"),
        horizontal_bars(works[:10], title="Top works (pages)"),
    ]


def _r(value: float) -> float:
    return round(value, 1)
