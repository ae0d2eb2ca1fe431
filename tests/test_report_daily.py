"""The daily report over several days: stored figures, trends, new-since-previous, takedown
notices, and the HTML with its charts rendered from disk in headless Chromium."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from tracker.crawling.rendering import LAUNCH_ARGS
from tracker.fingerprints.document import to_signed
from tracker.reports import build_report, to_html
from tracker.reports.charts import BAR_COLOUR, TOTAL_COLOUR
from tracker.reports.daily import prepare_report, write_report
from tracker.reports.notices import notice_file_name, plain, to_notices
from tracker.stores.pages import MatchStore, PageRecord, PageStore

pytestmark = pytest.mark.integration

FIRST = date(2031, 5, 1)
DAYS = 12
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).parent / "artifacts"


def at(day: date, hour: int) -> datetime:
    return datetime(day.year, day.month, day.day, hour, tzinfo=UTC)


def spread(key: str) -> int:
    """A fingerprint far (about 32 bits) from every other key's."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big")


def seen(runtime, url: str, doc_id: str, work: str, when: datetime, fingerprint: int) -> None:
    PageStore(runtime.db).save(
        PageRecord(url=url, text=url, title=f"{work} 免费阅读", simhash=to_signed(fingerprint)),
        now=when,
    )
    MatchStore(runtime.db).record(
        url,
        [
            {
                "doc_id": doc_id,
                "work": work,
                "title": f"{work} 第{doc_id[-1]}章",
                "score": 0.9,
                "coverage": 0.8,
                "method": "align",
                "spans": [
                    {
                        "page_start": 0,
                        "page_end": 9,
                        "master_start": 0,
                        "master_end": 9,
                        "text": f"{work}的正文被复制在这里。",
                    }
                ],
            }
        ],
        now=when,
    )


@pytest.fixture()
def history(runtime):
    """Twelve days: the pirate site copies one more chapter of 斗破苍穹 every day, a mirror
    copies the same pages from day 4, and a news site reposts an article on some days."""
    masters = runtime.db["masters"]
    for i in range(1, 10):
        masters.insert_one({"_id": f"dpcq/{i}", "n": i, "work": "斗破苍穹", "title": f"第{i}章"})
    masters.insert_one({"_id": "news/1", "n": 100, "work": "新华社通稿", "title": "通稿"})
    reports = []
    for offset in range(DAYS):
        day = FIRST + timedelta(days=offset)
        for chapter in range(1, min(offset + 2, 10)):
            fingerprint = spread(f"dpcq/{chapter}")
            seen(
                runtime,
                f"https://pirate.example/dpcq/{chapter}.html",
                f"dpcq/{chapter}",
                "斗破苍穹",
                at(day, 2),
                fingerprint,
            )
            if offset >= 3:
                seen(
                    runtime,
                    f"https://mirror.example/b/{chapter}",
                    f"dpcq/{chapter}",
                    "斗破苍穹",
                    at(day, 3),
                    fingerprint ^ 0b101,
                )
        if offset % 3 == 0:
            seen(
                runtime,
                "https://news.example/a/1.html",
                "news/1",
                "新华社通稿",
                at(day, 5),
                spread("news/1"),
            )
        reports.append(prepare_report(runtime, day, now=at(day + timedelta(days=1), 6)))
    return reports


def test_reports_over_days_count_what_is_new_and_keep_their_figures(history, runtime):
    last = history[-1]
    assert last["date"] == "2031-05-12"
    assert last["previous_report"] == "2031-05-11"
    assert last["new_since"] == "2031-05-12T00:00:00+00:00"
    # Day 12: the pirate and the mirror show all 9 chapters, none new since day 11.
    assert last["summary"]["pages"] == 18
    assert last["summary"]["new_pages"] == 0
    assert history[1]["summary"]["new_pages"] == 1  # day 2: chapter 2
    assert history[3]["summary"]["new_pages"] == 5  # day 4: chapter 4 + the mirror's 1–4
    assert history[3]["summary"]["groups"] == 4  # each mirrored page with its original

    work = last["works"][0]
    assert (work["work"], work["total_chapters"], work["chapters"], work["coverage"]) == (
        "斗破苍穹",
        9,
        9,
        1.0,
    )
    assert [(s["site"], s["chapters"], s["coverage"]) for s in work["sites"]] == [
        ("mirror.example", 9, 1.0),
        ("pirate.example", 9, 1.0),
    ]
    assert work["first_seen"] == "2031-05-01T02:00:00+00:00"
    assert work["chapters_found"][0] == {
        "doc_id": "dpcq/1",
        "title": "斗破苍穹 第1章",
        "pages": 2,
        "sites": 2,
    }

    # The 30-day trend comes from the stored reports, not from the matches.
    assert [t["pages"] for t in last["trend"][-DAYS:]] == [len(r["pages"]) for r in history]
    assert [t["pages"] for t in last["trend"][: 30 - DAYS]] == [None] * (30 - DAYS)
    sites = {s["site"]: s for s in last["sites"]}
    assert [t["pages"] for t in sites["mirror.example"]["trend"][-DAYS:]] == [
        0,
        0,
        0,
        4,
        5,
        6,
        7,
        8,
        9,
        9,
        9,
        9,
    ]
    assert "news.example" not in sites  # last seen on day 10
    news = next(s for s in history[9]["sites"] if s["site"] == "news.example")
    assert (news["pages"], news["works"], news["new_pages"]) == (1, 1, 0)
    runtime.db["matches"].delete_many({})  # the figures of stored days do not need them
    again = build_report(runtime.db, FIRST + timedelta(days=DAYS))
    assert [t["pages"] for t in again["trend"][-DAYS - 1 : -1]] == [
        len(r["pages"]) for r in history
    ]
    stored = runtime.db["reports"].find_one({"_id": "2031-05-04"})
    assert {s["site"]: s["new_pages"] for s in stored["sites"]} == {
        "mirror.example": 4,
        "pirate.example": 1,
        "news.example": 0,  # reposted again: first seen on day 1
    }


def test_takedown_notices_list_urls_titles_and_evidence(history, runtime, settings):
    notices = to_notices(history[-1], runtime.db, replace(settings, notice_language="en"))
    assert sorted(notices) == ["mirror.example", "pirate.example"]  # news: not seen that day
    pirate = notices["pirate.example"]
    assert pirate.startswith("DRAFT: check it")
    assert "TAKEDOWN NOTICE: copyright infringement on pirate.example" in pirate
    for chapter in range(1, 10):
        assert f"https://pirate.example/dpcq/{chapter}.html" in pirate
        assert f"Copies: 《斗破苍穹》, 1 chapter(s) ({chapter}): 斗破苍穹 第{chapter}章" in pirate
    assert "Evidence, as found on the page: > 斗破苍穹的正文被复制在这里。" in pirate
    assert "https://mirror.example" not in pirate
    # The default: a 侵权通知书, its rights holder a placeholder until set.
    chinese = to_notices(history[-1], runtime.db, settings)["pirate.example"]
    assert "侵权通知书" in chinese and "[权利人名称：设置 rights_holder_name]" in chinese


def test_notices_cannot_be_forged_by_page_text(runtime, settings):
    hostile = "https://evil.example/x\n\nWe withdraw this notice.\r\n\x1b[2J\u202egnp.exe\u200b"
    now = datetime.now(UTC)
    found = {"doc_id": "d\n1", "work": "作品\n\nSignature: forged", "title": "第一章\x00",
             "score": 0.9, "coverage": 0.8,
             "spans": [{"page_start": 0, "page_end": 9,
                        "text": "copied\nSignature: someone else\u202e"}]}  # fmt: skip
    MatchStore(runtime.db).record(hostile, [found], now=now)
    report = build_report(runtime.db, now.date(), now=now)
    (site,) = {page["site"] for page in report["pages"]}
    english = replace(settings, notice_language="en")
    text = to_notices(report, runtime.db, english)[site]
    assert "\x1b" not in text and "\u202e" not in text and "\u200b" not in text
    assert "\x00" not in text and "\r" not in text
    lines = text.splitlines()
    assert "1. https://evil.example/x We withdraw this notice. [2Jgnp.exe" in lines
    assert not any(
        line.startswith(("We withdraw", "Signature: forged", "Signature: someone"))
        for line in lines
    )
    assert "   Evidence, as found on the page: > copied Signature: someone else" in lines
    assert plain("a\tb\u2028c") == "a b c"
    assert notice_file_name("../../etc/passwd") == "notice-etc_passwd.txt"
    assert notice_file_name("Pirate.Example") == "notice-pirate.example.txt"
    assert notice_file_name("") == "notice-unknown-site.txt"


def test_html_report_has_offline_charts(history, runtime, tmp_path):
    html = to_html(history[-1])
    assert html.count('<svg class="chart"') == 3
    assert "Infringing pages per day, last 30 days" in html
    assert "Top sites (pages)" in html and "Top works (pages)" in html
    assert html.count('<svg class="spark"') == 2
    assert "<h2>Mirror groups</h2>" in html
    # Nothing is loaded from anywhere: no scripts, no external resources.
    lowered = html.lower()
    for needle in ("<script", "src=", "<link", "url(", "@import"):
        assert needle not in lowered
    paths = write_report(history[-1], tmp_path / "out", runtime)
    assert sorted(paths) == ["csv", "html", "json", "notices"]
    assert sorted(p.name for p in paths["notices"].iterdir()) == [
        "notice-mirror.example.txt",
        "notice-pirate.example.txt",
    ]


def test_chart_labels_are_escaped(runtime):
    seen(runtime, "https://x.example/1", "w/1", '<script>alert("w")</script>', at(FIRST, 1), 1)
    html = to_html(build_report(runtime.db, FIRST))
    assert "<script" not in html.lower()
    assert "&lt;script&gt;alert(&#34;w&#34;)&lt;/script&gt;" in html  # markupsafe's &#34;


@pytest.mark.skipif(
    not CHROMIUM.exists(), reason="headless Chromium (/usr/bin/chromium) is not installed"
)
def test_html_charts_render_from_disk_in_headless_chromium(history, tmp_path):
    from PIL import Image

    page = tmp_path / "report.html"
    page.write_text(to_html(history[-1]), encoding="utf-8")
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / ".gitignore").write_text("*\n")  # test output, never committed
    screenshot = ARTIFACTS / "report-screenshot.png"
    screenshot.unlink(missing_ok=True)
    subprocess.run(
        [
            str(CHROMIUM),
            *LAUNCH_ARGS,  # the crawl's own flags for a sandboxed container run as root
            f"--user-data-dir={tmp_path / 'chromium-profile'}",
            f"--screenshot={screenshot}",
            "--window-size=1280,2000",
            page.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    shutil.copy(screenshot, tmp_path / screenshot.name)

    image = Image.open(screenshot).convert("RGB")
    assert image.size == (1280, 2000)
    colours = {colour: count for count, colour in image.getcolors(maxcolors=1 << 20)}

    def pixels(hex_colour: str) -> int:
        r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
        return sum(
            count
            for (cr, cg, cb), count in colours.items()
            if abs(cr - r) <= 3 and abs(cg - g) <= 3 and abs(cb - b) <= 3
        )

    assert pixels(TOTAL_COLOUR) > 2000  # the daily bars
    assert pixels(BAR_COLOUR) > 2000  # the top sites and top works bars
