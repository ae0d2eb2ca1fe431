"""The one way to HTML (:mod:`tracker.html`): one environment for the report and the console,
the charts' geometry drawn by one macro, and the console's evidence pairs, which show what was
cut for display as cut and the pirate's inserted lines as inserted."""

from __future__ import annotations

from pathlib import Path

from tests.html_check import assert_inert, elements
from tracker.console.evidence import DIFFERS, INSERTED, SAME, passages
from tracker.html import environment
from tracker.reading.readers import read_book
from tracker.reports.charts import NEW_COLOUR, TOTAL_COLOUR, daily_bars, sparkline

BOOK = Path(__file__).parents[1] / "tracker" / "demo" / "data" / "红楼梦.txt"
HOSTILE = "<img src=x onerror=alert(1)>\"'></p><script>alert(2)</script>"
AD_LINE = "笔趣阁最快更新，请记住本站域名 www.biquge.com"


def chapter(number: int = 0) -> str:
    return list(read_book(BOOK))[number].text


def test_the_console_renders_with_the_reports_environment():
    from tracker.console import views

    assert views.templates.env is environment()
    assert environment().autoescape is True
    assert {"when", "count", "pct", "score", "plural", "http", "pretty"} <= set(
        environment().filters
    )
    # Even a template made from a string escapes.
    assert environment().from_string("{{ x }}").render(x=HOSTILE).count("<") == 0


def test_the_daily_chart_shows_all_and_new_side_by_side():
    days = [("2031-05-01", 6, 6), ("2031-05-02", None, None), ("2031-05-03", 4, 1)]
    chart = daily_bars(days, title="pages")
    totals = [b for b in chart.bars if b.colour == TOTAL_COLOUR and b.tip]
    news = [b for b in chart.bars if b.colour == NEW_COLOUR and b.tip]
    assert len(totals) == len(news) == 2
    for total, new in zip(totals, news, strict=True):
        assert new.x >= total.x + total.width  # beside it, never over it
    assert totals[0].height == news[0].height > 0  # every page new: both bars, equal
    assert news[1].height == totals[1].height / 4
    assert {t.text for t in chart.labels} >= {"all", "new"}  # the legend
    single = daily_bars([("2031-05-01", 3, None)], title="site")
    assert not [b for b in single.bars if b.colour == NEW_COLOUR]  # no new series, no legend
    assert "new" not in {t.text for t in single.labels}


def test_charts_are_drawn_by_the_template_and_escape_their_labels():
    from tracker.reports.charts import horizontal_bars

    chart = horizontal_bars([(HOSTILE, 3)], title=HOSTILE)
    page = (
        environment()
        .from_string('{% from "charts.html" import draw %}{{ draw(c) }}{{ draw(s) }}')
        .render(c=chart, s=sparkline([1, None, 2, 3]))
    )
    parsed = assert_inert(page)
    assert [tag for tag, _ in parsed.found].count("svg") == 2
    assert HOSTILE in parsed.text
    assert ("polyline", {"points": "100.0,10.3 150.0,3.0", "fill": "none", "stroke": "#c33",
                         "stroke-width": "1.5"}) in parsed.found  # fmt: skip
    assert ("circle", {"cx": "0.0", "cy": "17.7", "r": "1.5", "fill": "#c33"}) in parsed.found


def test_what_was_cut_for_display_is_not_shown_as_differing():
    master = chapter(1)
    assert len(master) > 4000
    # A whole copy: the detector keeps the first 2,000 characters of the page's passage.
    span = {"page_start": 0, "page_end": len(master), "master_start": 0,
            "master_end": len(master), "text": master[:2000]}  # fmt: skip
    (shown,) = passages([span], master)
    assert shown.page_hidden == len(master) - 2000
    assert shown.master_hidden == len(master) - sum(len(t) for t, _ in shown.master)
    assert abs(sum(len(t) for t, _ in shown.master) - 2000) <= 2  # the master ends where it does
    assert not [t for t, state in shown.master if state != SAME and len(t) > 2]
    assert not [t for t, state in shown.page if state != SAME and len(t) > 2]
    assert shown.cut and shown.shared > 0.99
    pair = (
        environment()
        .from_string('{% from "console/_macros.html" import passage_pair %}{{ passage_pair(p) }}')
        .render(p=shown)
    )
    text = "".join(elements(pair).text)
    hidden = f"{len(master) - 2000:,}"
    assert f"… {hidden} characters not shown …" in text  # on each side
    assert text.count("characters not shown") == 2
    diffs = [a for tag, a in elements(pair).found if a.get("class") == "diff"]
    assert not diffs


def test_a_master_cut_for_display_cuts_the_page_too():
    master = chapter(1) * 2  # a passage longer than the master side shows (4,000)
    span = {"page_start": 0, "page_end": len(master), "master_start": 0,
            "master_end": len(master), "text": master}  # fmt: skip
    (shown,) = passages([span], master)
    assert shown.master_hidden == len(master) - 4000
    assert abs(sum(len(t) for t, _ in shown.page) - 4000) <= 2
    assert shown.page_hidden == len(master) - sum(len(t) for t, _ in shown.page)
    assert not [t for t, state in shown.page if state != SAME and len(t) > 2]


def test_inserted_lines_are_marked_apart_from_typos():
    master = chapter(0)[:600]
    page = f"{master[:200]}\n{AD_LINE}\n{master[200:400]}错字{master[402:600]}"
    span = {"page_start": 0, "page_end": len(page), "master_start": 0, "master_end": 600,
            "text": page}  # fmt: skip
    (shown,) = passages([span], master)
    inserted = "".join(t for t, state in shown.page if state == INSERTED)
    assert AD_LINE in inserted and "错字" not in inserted
    assert "错字" in "".join(t for t, state in shown.page if state == DIFFERS)
    assert not shown.cut and shown.page_hidden == shown.master_hidden == 0
    pair = (
        environment()
        .from_string('{% from "console/_macros.html" import passage_pair %}{{ passage_pair(p) }}')
        .render(p=shown)
    )
    struck = [a for tag, a in elements(pair).found if tag == "del"]
    assert struck and struck[0]["class"] == "inserted"
    assert "not shown" not in pair


def test_hostile_passages_stay_text_in_a_pair():
    page = f"{HOSTILE}\n{chapter(0)[:300]}"
    span = {"page_start": 0, "page_end": len(page), "master_start": 0, "master_end": 300,
            "text": page}  # fmt: skip
    pair = (
        environment()
        .from_string('{% from "console/_macros.html" import passage_pair %}{{ passage_pair(p) }}')
        .render(p=passages([span], chapter(0))[0])
    )
    parsed = assert_inert(pair)
    assert HOSTILE in "".join(parsed.text)
