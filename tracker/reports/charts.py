"""Charts for the HTML report as inline SVG: drawn here, so the report opens from disk with no
script and no network access. Labels come from crawled pages: every text is escaped."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from tracker.formats import count

TOTAL_COLOUR = "#e8a3a3"
NEW_COLOUR = "#c33"
BAR_COLOUR = "#4a78b5"
LINE_COLOUR = "#c33"
GRID_COLOUR = "#ddd"
MISSING_COLOUR = "#bbb"
FONT = 'font-family="sans-serif" font-size="11" fill="#444"'


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
) -> str:
    """Bars of ``(YYYY-MM-DD, total, new)`` per day; a day with no figures (None) is marked
    with a grey tick. New items are drawn over the total in a darker colour."""
    left, right, top, bottom = 40, 10, 24, 34
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = nice_ceiling(max([total or 0 for _, total, _ in days] + [2]))
    slot = plot_w / max(len(days), 1)
    bar_w = max(slot * 0.7, 1.0)
    parts = [_frame(width, height, title)]
    for fraction in (0.0, 0.5, 1.0):
        y = top + plot_h * (1 - fraction)
        parts.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{width - right}" y2="{y:.1f}" '
            f'stroke="{GRID_COLOUR}"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" {FONT}>'
            f"{escape(count(peak * fraction))}</text>"
        )
    label_every = max(1, len(days) // 6)
    for i, (day, total, new) in enumerate(days):
        x = left + i * slot + (slot - bar_w) / 2
        label = escape(f"{day}: {'no report' if total is None else total} ({new or 0} new)")
        if total is None:
            parts.append(
                f'<rect x="{x:.1f}" y="{top + plot_h - 2:.1f}" width="{bar_w:.1f}" height="2" '
                f'fill="{MISSING_COLOUR}"><title>{label}</title></rect>'
            )
        else:
            h_total = plot_h * total / peak
            h_new = plot_h * min(new or 0, total) / peak
            parts.append(
                f'<rect class="bar" x="{x:.1f}" y="{top + plot_h - h_total:.1f}" '
                f'width="{bar_w:.1f}" height="{h_total:.1f}" fill="{TOTAL_COLOUR}">'
                f"<title>{label}</title></rect>"
            )
            if h_new:
                parts.append(
                    f'<rect x="{x:.1f}" y="{top + plot_h - h_new:.1f}" width="{bar_w:.1f}" '
                    f'height="{h_new:.1f}" fill="{NEW_COLOUR}"><title>{label}</title></rect>'
                )
        if i % label_every == 0 or i == len(days) - 1:
            parts.append(
                f'<text x="{x + bar_w / 2:.1f}" y="{height - bottom + 14}" text-anchor="middle" '
                f"{FONT}>{escape(day[5:])}</text>"
            )
    parts.append(
        f'<rect x="{left}" y="{height - 12}" width="10" height="10" fill="{TOTAL_COLOUR}"/>'
        f'<text x="{left + 14}" y="{height - 3}" {FONT}>all</text>'
        f'<rect x="{left + 44}" y="{height - 12}" width="10" height="10" fill="{NEW_COLOUR}"/>'
        f'<text x="{left + 58}" y="{height - 3}" {FONT}>new</text>'
    )
    return "".join(parts) + "</svg>"


def horizontal_bars(
    items: Sequence[tuple[str, float]], *, title: str, width: int = 520, unit: str = ""
) -> str:
    """One labelled bar per ``(label, value)``, longest first as given."""
    row, top, label_w, right = 22, 24, 190, 60
    height = top + row * max(len(items), 1) + 8
    plot_w = width - label_w - right
    peak = max([value for _, value in items] + [1])
    parts = [_frame(width, height, title)]
    if not items:
        parts.append(f'<text x="10" y="{top + 14}" {FONT}>nothing to show</text>')
    for i, (label, value) in enumerate(items):
        y = top + i * row
        shown = label if len(label) <= 28 else label[:27] + "…"
        bar = plot_w * value / peak
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 14}" text-anchor="end" {FONT}>'
            f"<title>{escape(label)}</title>{escape(shown)}</text>"
            f'<rect class="bar" x="{label_w}" y="{y + 3}" width="{max(bar, 1):.1f}" '
            f'height="{row - 8}" fill="{BAR_COLOUR}"/>'
            f'<text x="{label_w + bar + 4:.1f}" y="{y + 14}" {FONT}>'
            f"{escape(count(value))}{escape(unit)}</text>"
        )
    return "".join(parts) + "</svg>"


def sparkline(values: Sequence[int | None], *, width: int = 150, height: int = 28) -> str:
    """A small line of daily values; days without figures (None) break the line."""
    peak = max([v for v in values if v is not None] + [1])
    step = width / max(len(values) - 1, 1)
    segments, current = [], []
    for i, value in enumerate(values):
        if value is None:
            if current:
                segments.append(current)
            current = []
            continue
        current.append(f"{i * step:.1f},{height - 3 - (height - 6) * value / peak:.1f}")
    if current:
        segments.append(current)
    lines = "".join(
        f'<polyline points="{" ".join(points)}" fill="none" stroke="{LINE_COLOUR}" '
        f'stroke-width="1.5"/>'
        if len(points) > 1
        else f'<circle cx="{points[0].split(",")[0]}" cy="{points[0].split(",")[1]}" r="1.5" '
        f'fill="{LINE_COLOUR}"/>'
        for points in segments
    )
    return (
        f'<svg class="spark" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img">{lines}</svg>'
    )


def _frame(width: int, height: int, title: str) -> str:
    return (
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
        f'<text x="0" y="14" font-family="sans-serif" font-size="13" font-weight="bold" '
        f'fill="#222">{escape(title)}</text>'
    )
