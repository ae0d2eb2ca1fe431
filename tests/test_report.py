"""The daily infringement report against the real servers: build, renderers, ``tracker report``."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, date, datetime

import pytest

from tracker.reports import build_report, summary_line, to_csv, to_html, to_json
from tracker.stores.pages import MatchStore, PageRecord, PageStore

pytestmark = pytest.mark.integration

DAY = date(2026, 11, 22)
PAGE_A = "https://pirate.example/book/1.html"
PAGE_B = "https://pirate.example/book/2.html"
PAGE_YESTERDAY = "https://mirror.example/old.html"
PAGE_TOMORROW = "https://mirror.example/new.html"
LONG_PASSAGE = "萧炎望着那测验魔石碑，面无表情。" * 30


def at(day: date, hour: int) -> datetime:
    return datetime(day.year, day.month, day.day, hour, tzinfo=UTC)


def match(doc_id: str, work: str, score: float, coverage: float, *passages: str) -> dict:
    return {
        "doc_id": doc_id,
        "work": work,
        "title": f"{work} {doc_id}",
        "score": score,
        "coverage": coverage,
        "method": "align",
        "spans": [
            {
                "page_start": 0,
                "page_end": len(text),
                "master_start": 0,
                "master_end": len(text),
                "text": text,
            }
            for text in passages
        ],
    }


@pytest.fixture()
def seeded(runtime):
    """Two infringing pages on DAY (one copying two works), one the day before, one after."""
    store = MatchStore(runtime.db)
    store.record(
        PAGE_A,
        [
            match("dpcq-1", "斗破苍穹", 0.912345, 0.8, "三十年河东，三十年河西", LONG_PASSAGE),
            match("dpcq-2", "斗破苍穹", 0.5, 0.95, "莫欺少年穷"),
        ],
        now=at(DAY, 10),
    )
    store.record(
        PAGE_B,
        [
            match("dpcq-1", "斗破苍穹", 0.7, 0.3, "斗之力，三段"),
            match("news-1", "新闻", 0.6, 0.66666, "新华社北京电"),
        ],
        now=at(DAY, 12),
    )
    # Re-seen later the same day with a better score: first_seen stays at 12:00.
    store.record(
        PAGE_B,
        [
            match("dpcq-1", "斗破苍穹", 0.75, 0.3, "斗之力，三段"),
            match("news-1", "新闻", 0.6, 0.66666, "新华社北京电"),
        ],
        now=at(DAY, 15),
    )
    store.record(
        PAGE_YESTERDAY,
        [match("dpcq-3", "斗破苍穹", 1.0, 1.0, "昨天的")],
        now=at(date(2026, 11, 21), 23),
    )
    store.record(
        PAGE_TOMORROW, [match("news-2", "新闻", 1.0, 1.0, "明天的")], now=at(date(2026, 11, 23), 0)
    )
    PageStore(runtime.db).save(
        PageRecord(url=PAGE_A, text="…", title="斗破苍穹 第一章 免费阅读"), now=at(DAY, 10)
    )
    return runtime


def test_build_report_groups_the_days_matches_by_work_and_page(seeded):
    report = build_report(seeded.db, DAY, now=at(DAY, 23))

    assert report["date"] == "2026-11-22"
    assert report["generated_at"] == "2026-11-22T23:00:00+00:00"
    assert report["summary"] == {
        "pages": 2,
        "works": 2,
        "sites": 1,
        "matches": 4,
        "new_pages": 2,  # no earlier report: everything is new
        "new_matches": 4,
        "groups": 0,
        "unread": 0,  # every page read
    }
    assert report["pages"] == [
        {
            "url": PAGE_A,
            "site": "pirate.example",
            "doc_ids": ["dpcq-1", "dpcq-2"],
            "copies": [
                {
                    "work": "斗破苍穹",
                    "chapters": 2,
                    "numbers": "1–2",
                    "label": "2 chapters of 斗破苍穹 (1–2)",
                }
            ],
            "score": 0.9123,
            "coverage": 0.95,
            "method": "verbatim",
            "rewritten": [],
            "first_seen": "2026-11-22T10:00:00+00:00",
            "last_seen": "2026-11-22T10:00:00+00:00",
            "new": True,
            "group": None,
            "takedown": None,  # never noticed
        },
        {
            "url": PAGE_B,
            "site": "pirate.example",
            "doc_ids": ["dpcq-1", "news-1"],
            "copies": [
                {
                    "work": "斗破苍穹",
                    "chapters": 1,
                    "numbers": "1",
                    "label": "1 chapter of 斗破苍穹 (1)",
                },
                {"work": "新闻", "chapters": 1, "numbers": "1", "label": "1 chapter of 新闻 (1)"},
            ],
            "score": 0.75,
            "coverage": 0.6667,
            "method": "verbatim",
            "rewritten": [],
            "first_seen": "2026-11-22T12:00:00+00:00",
            "last_seen": "2026-11-22T15:00:00+00:00",
            "new": True,
            "group": None,
            "takedown": None,  # never noticed
        },
    ]
    assert [(w["work"], w["chapters"]) for w in report["works"]] == [("斗破苍穹", 2), ("新闻", 1)]

    novel_pages = report["works"][0]["pages"]
    assert [p["url"] for p in novel_pages] == [PAGE_A, PAGE_B]  # best score first
    page_a = novel_pages[0]
    assert page_a["title"] == "斗破苍穹 第一章 免费阅读"
    assert page_a["doc_ids"] == ["dpcq-1", "dpcq-2"]
    assert (page_a["score"], page_a["coverage"]) == (0.9123, 0.95)
    assert len(page_a["evidence"]) == 200
    assert page_a["evidence"] == LONG_PASSAGE[:199] + "…"
    # Under each work, a page shows only that work's matches.
    assert novel_pages[1] == {
        "url": PAGE_B,
        "site": "pirate.example",
        "title": "",
        "doc_ids": ["dpcq-1"],
        "copies": [
            {
                "work": "斗破苍穹",
                "chapters": 1,
                "numbers": "1",
                "label": "1 chapter of 斗破苍穹 (1)",
            }
        ],
        "score": 0.75,
        "coverage": 0.3,
        "method": "verbatim",
        "rewritten": [],
        "first_seen": "2026-11-22T12:00:00+00:00",
        "evidence": "斗之力，三段",
        "pairs": [],  # a verbatim copy: its passage, no sentence pairs
        "aligned": 0,
        "last_seen": "2026-11-22T15:00:00+00:00",
        "new": True,
        "group": None,
    }
    news_pages = report["works"][1]["pages"]
    assert [(p["url"], p["doc_ids"], p["score"], p["evidence"]) for p in news_pages] == [
        (PAGE_B, ["news-1"], 0.6, "新华社北京电")
    ]


def test_build_report_only_includes_matches_seen_that_day(seeded):
    yesterday = build_report(seeded.db, date(2026, 11, 21))
    assert [p["url"] for p in yesterday["pages"]] == [PAGE_YESTERDAY]
    assert yesterday["pages"][0]["doc_ids"] == ["dpcq-3"]
    assert {k: yesterday["summary"][k] for k in ("pages", "works", "sites", "matches")} == {
        "pages": 1,
        "works": 1,
        "sites": 1,
        "matches": 1,
    }

    tomorrow = build_report(seeded.db, date(2026, 11, 23))
    assert [(p["url"], p["doc_ids"]) for p in tomorrow["pages"]] == [(PAGE_TOMORROW, ["news-2"])]

    empty = build_report(seeded.db, date(2026, 11, 30))
    assert empty["summary"] == {
        "pages": 0,
        "works": 0,
        "sites": 0,
        "matches": 0,
        "new_pages": 0,
        "new_matches": 0,
        "groups": 0,
        "unread": 0,  # every page read
    }
    assert (empty["works"], empty["pages"]) == ([], [])
    assert "No infringement was seen" in to_html(empty)


def test_summary_line(seeded):
    assert summary_line(build_report(seeded.db, DAY)) == (
        "2026-11-22: 2 infringing pages on 1 site(s), copying 2 work(s) (4 matches)"
    )
    assert summary_line(build_report(seeded.db, date(2026, 11, 21))) == (
        "2026-11-21: 1 infringing page on 1 site(s), copying 1 work(s) (1 match)"
    )


def test_json_and_csv_renderers(seeded):
    report = build_report(seeded.db, DAY)
    text = to_json(report)
    assert "斗破苍穹" in text  # not \u-escaped
    assert json.loads(text) == report

    rows = list(csv.reader(io.StringIO(to_csv(report))))
    assert rows == [
        [
            "date",
            "work",
            "doc_id",
            "url",
            "site",
            "score",
            "coverage",
            "first_seen",
            "last_seen",
            "new",
            "group",
            "copies",
            "method",
        ],
        [
            "2026-11-22",
            "斗破苍穹",
            "dpcq-1",
            PAGE_A,
            "pirate.example",
            "0.9123",
            "0.95",
            "2026-11-22T10:00:00+00:00",
            "2026-11-22T10:00:00+00:00",
            "yes",
            "",
            "2 chapters of 斗破苍穹 (1–2)",
            "verbatim",
        ],
        [
            "2026-11-22",
            "斗破苍穹",
            "dpcq-2",
            PAGE_A,
            "pirate.example",
            "0.9123",
            "0.95",
            "2026-11-22T10:00:00+00:00",
            "2026-11-22T10:00:00+00:00",
            "yes",
            "",
            "2 chapters of 斗破苍穹 (1–2)",
            "verbatim",
        ],
        [
            "2026-11-22",
            "斗破苍穹",
            "dpcq-1",
            PAGE_B,
            "pirate.example",
            "0.75",
            "0.3",
            "2026-11-22T12:00:00+00:00",
            "2026-11-22T15:00:00+00:00",
            "yes",
            "",
            "1 chapter of 斗破苍穹 (1)",
            "verbatim",
        ],
        [
            "2026-11-22",
            "新闻",
            "news-1",
            PAGE_B,
            "pirate.example",
            "0.6",
            "0.6667",
            "2026-11-22T12:00:00+00:00",
            "2026-11-22T15:00:00+00:00",
            "yes",
            "",
            "1 chapter of 新闻 (1)",
            "verbatim",
        ],
    ]


def test_html_escapes_hostile_pages(runtime):
    hostile_js = "javascript:alert(1)//<script>alert(1)</script>"
    hostile_http = 'https://evil.example/"><script>alert(2)</script>'
    store = MatchStore(runtime.db)
    store.record(
        hostile_js,
        [match("dpcq-1", "<b>斗破苍穹</b>", 0.9, 0.9, "<img src=x onerror=alert(3)>萧炎")],
        now=at(DAY, 8),
    )
    store.record(
        hostile_http,
        [match("dpcq-1", "<b>斗破苍穹</b>", 0.8, 0.8, "</td></table>")],
        now=at(DAY, 9),
    )
    PageStore(runtime.db).save(
        PageRecord(url=hostile_http, text="x", title="<script>alert(1)</script>"), now=at(DAY, 9)
    )

    html = to_html(build_report(runtime.db, DAY))

    assert html.startswith("<!DOCTYPE html>")
    assert '<meta charset="utf-8">' in html
    assert "<script" not in html.lower()
    assert "<img" not in html and "<b>" not in html and "</td></table>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(3)&gt;萧炎" in html
    assert "<h2>&lt;b&gt;斗破苍穹&lt;/b&gt;</h2>" in html
    assert 'href="javascript' not in html.lower()
    assert "javascript:alert(1)//&lt;script&gt;" in html  # shown as text, not linked
    # Jinja2's autoescape (markupsafe) writes a quote as &#34;
    assert '<a href="https://evil.example/&#34;&gt;&lt;script&gt;alert(2)&lt;/script&gt;"' in html
    assert html.count("<a href=") == 1


UNREAD_QUOTES = "https://walled.example/ch/9.html?a=\"b\"&c='d'><script>alert(6)</script>"
UNREAD_SCRIPT = "javascript:alert(7)//walled.example/"
HOSTILE_REASON = '<script>alert("reason")</script>\''


def unread_day(runtime) -> None:
    """On DAY: three pages of walled.example left unread (a captcha twice, one tried twice; a
    server error), one of pirate.example (a hostile reason), one read later that day."""
    from tracker.stores.unread import UnreadStore

    store = UnreadStore(runtime.db)
    walled = ["https://walled.example/ch/1.html", UNREAD_QUOTES]
    store.record_many([(url, "captcha") for url in walled], now=at(DAY, 8))
    store.record_many([(walled[0], "captcha"), ("https://walled.example/ch/2.html", "http_502")],
                      now=at(DAY, 11))  # fmt: skip
    store.record_many([(UNREAD_SCRIPT, HOSTILE_REASON), (PAGE_B, "banned")], now=at(DAY, 9))
    store.clear([PAGE_B], now=at(DAY, 13))  # read at last: not unread that day


def test_the_report_lists_unread_pages_per_site_in_words(seeded):
    from tests.html_check import assert_inert, links
    from tracker.reports.build import unread_sites

    unread_day(seeded)
    report = build_report(seeded.db, DAY, now=at(DAY, 23))
    assert report["summary"]["unread"] == 4
    assert sorted(u["url"] for u in report["unread"]) == sorted(
        ["https://walled.example/ch/1.html", "https://walled.example/ch/2.html", UNREAD_QUOTES,
         UNREAD_SCRIPT]
    )  # fmt: skip
    (walled, other) = unread_sites(report["unread"])
    assert (walled["site"], walled["pages"]) == ("walled.example", 3)
    assert walled["reasons"] == [{"reason": "captcha", "pages": 2},
                                 {"reason": "http_502", "pages": 1}]  # fmt: skip
    assert walled["first_seen"] == at(DAY, 8).isoformat()
    assert walled["last_seen"] == at(DAY, 11).isoformat()
    assert (other["site"], other["pages"]) == ("", 1)  # a javascript: URL has no host
    assert summary_line(report).endswith("(4 matches); 4 pages could not be read")

    html = to_html(report)
    parsed = assert_inert(html)
    text = " ".join(" ".join(parsed.text).split())
    assert "4 pages could not be read" in text
    assert "4 pages on 2 sites could not be read on this day" in text
    assert "blocked by a captcha: 2" in text and "the site's server failed (HTTP 502): 1" in text
    assert "walled.example: 3 pages not read" in text
    assert HOSTILE_REASON in text and "<script>alert(" not in html  # the reason is text
    assert UNREAD_QUOTES in links(html) and UNREAD_SCRIPT not in links(html)
    assert UNREAD_SCRIPT in text  # shown, not linked
    assert 'href="#unread-1"' in html and 'id="unread-1"' in html
    row = html.split(">https://walled.example/ch/1.html</a>", 1)[1].split("</tr>", 1)[0]
    assert "blocked by a captcha" in row and ">2</td>" in row  # attempts


def test_a_day_of_unread_pages_only_is_not_called_clean(runtime):
    from tracker.stores.unread import UnreadStore

    UnreadStore(runtime.db).record_many([("https://walled.example/", "challenge")], at(DAY, 8))
    html = to_html(build_report(runtime.db, DAY, now=at(DAY, 23)))
    assert "No infringement was seen" not in html
    assert "No infringement was found on the pages read on this day; 1 page could not" in html
    assert "blocked by a browser check (a challenge page)" in html
    empty = to_html(build_report(runtime.db, date(2026, 11, 30)))
    assert "No infringement was seen on this day." in empty and 'id="unread"' not in empty
    assert '<div class="unread-count"><strong>0</strong>pages could not be read</div>' in empty


def test_the_html_report_shows_takedown_compliance_with_flags(seeded):
    from datetime import timedelta

    from tests.html_check import assert_inert
    from tracker.stores.takedowns import LIVE, REMOVED, TakedownStore

    store = TakedownStore(seeded.db)
    start = at(DAY, 9) - timedelta(days=20)
    slow = {f"https://slow.example/{k}.html": ["dpcq-1"] for k in range(4)}
    quick = {'https://quick.example/a.html?"><script>alert(8)</script>': ["dpcq-1"]}
    store.noticed(slow, "n1", start)
    store.noticed(quick, "n2", start)
    store.record_checks(
        [(url, REMOVED if k == 0 else LIVE, 404 if k == 0 else 200, "", start + timedelta(hours=6))
         for k, url in enumerate(sorted(slow))]
        + [(next(iter(quick)), REMOVED, 410, "", start + timedelta(hours=2))]
    )  # fmt: skip
    report = build_report(seeded.db, DAY, now=at(DAY, 23))
    flagged = {t["site"]: t["noncompliant"] for t in report["takedown"]}
    assert flagged == {"slow.example": True, "quick.example": False}
    html = to_html(report)
    assert_inert(html)
    section = html.split('<section class="takedown" id="takedown">', 1)[1].split("</section>")[0]
    slow_row = section.split("<td>slow.example</td>", 1)[1].split("</tr>", 1)[0]
    cells = [c.split("<", 1)[0] for c in slow_row.split('<td class="num">')[1:]]
    assert cells[:7] == ["4", "1", "3", "0", "0", "25.0%", "6.0"]
    assert '<tr class="noncompliant"><td>slow.example</td>' in section
    assert '<strong class="flag">non-compliant</strong>' in slow_row
    assert "<tr><td>quick.example</td>" in section and "100.0%" in section
    assert "<script>alert(8)" not in html  # the noticed URLs are not in the table
    # A day before any notice has no compliance section.
    before = start.date() - timedelta(days=1)
    assert 'class="takedown"' not in to_html(build_report(seeded.db, before))


def main(argv: list[str]) -> int:
    """``tracker.cli.main``, imported on use so the other tests run without every CLI module."""
    from tracker.cli import main as tracker_main

    return tracker_main(argv)


@pytest.fixture()
def cli_env(seeded, settings, monkeypatch, tmp_path):
    """Point ``tracker`` (which loads Settings from the environment) at the test database."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TRACKER_CONFIG", raising=False)
    monkeypatch.setenv("MONGO_URL", settings.mongo_url)
    monkeypatch.setenv("REDIS_URL", settings.redis_url)
    monkeypatch.setenv("TRACKER_MONGO_DB", settings.mongo_db)
    monkeypatch.setenv("TRACKER_REDIS_PREFIX", settings.redis_prefix)
    return tmp_path / "data"


def test_cli_prints_json_and_summary(cli_env, capsys):
    assert main(["--data-dir", str(cli_env), "report", "--date", "2026-11-22"]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert [(p["url"], p["doc_ids"]) for p in report["pages"]] == [
        (PAGE_A, ["dpcq-1", "dpcq-2"]),
        (PAGE_B, ["dpcq-1", "news-1"]),
    ]
    assert err.strip() == (
        "2026-11-22: 2 infringing pages on 1 site(s), copying 2 work(s) (4 matches)"
    )


def test_cli_writes_html_under_the_data_dir(cli_env, capsys):
    assert (
        main(["--data-dir", str(cli_env), "report", "--date", "2026-11-22", "--format", "html"])
        == 0
    )
    expected = cli_env / "reports" / "report-2026-11-22.html"
    assert capsys.readouterr().out.strip() == str(expected)
    html = expected.read_text(encoding="utf-8")
    assert "斗破苍穹 第一章 免费阅读" in html
    assert f'<a href="{PAGE_A}"' in html


def test_cli_writes_csv_to_out(cli_env, tmp_path, capsys):
    out_path = tmp_path / "exports" / "day.csv"
    assert (
        main(
            [
                "--data-dir",
                str(cli_env),
                "report",
                "--date",
                "2026-11-21",
                "--format",
                "csv",
                "--out",
                str(out_path),
            ]
        )
        == 0
    )
    assert capsys.readouterr().out.strip() == str(out_path)
    rows = list(csv.reader(io.StringIO(out_path.read_text(encoding="utf-8"))))
    assert rows[1:] == [
        [
            "2026-11-21",
            "斗破苍穹",
            "dpcq-3",
            PAGE_YESTERDAY,
            "mirror.example",
            "1.0",
            "1.0",
            "2026-11-21T23:00:00+00:00",
            "2026-11-21T23:00:00+00:00",
            "yes",
            "",
            "1 chapter of 斗破苍穹 (3)",
            "verbatim",
        ]
    ]
    # Excel (on a Chinese Windows above all) reads it as UTF-8 thanks to its byte-order mark.
    assert out_path.read_bytes().startswith(b"\xef\xbb\xbfdate,work,")
    argv = ["--data-dir", str(cli_env), "report", "--date", "2026-11-21", "--format", "csv"]
    capsys.readouterr()
    assert main([*argv, "--no-bom"]) == 0
    assert capsys.readouterr().out.startswith("date,work,")


@pytest.mark.parametrize("bad", ["22-11-2026", "2026-13-01", "2026-11-31", "20261122", "today"])
def test_cli_rejects_a_bad_date(bad, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["report", "--date", bad])
    assert exc.value.code == 2
    assert f"invalid date {bad!r}: expected YYYY-MM-DD" in capsys.readouterr().err


def test_cli_writes_takedown_notices_to_a_folder(cli_env, tmp_path, capsys):
    folder = tmp_path / "notices"
    argv = ["--data-dir", str(cli_env), "report", "--date", "2026-11-22", "--format", "notices"]
    assert main([*argv, "--out", str(folder)]) == 0
    out, err = capsys.readouterr()
    assert out.split() == [str(folder / "notice-pirate.example.txt")]
    notice = (folder / "notice-pirate.example.txt").read_text(encoding="utf-8")
    assert f"1. 网络地址：{PAGE_A}" in notice and f"2. 网络地址：{PAGE_B}" in notice
    assert "侵权作品：《新闻》，第 1 章，共 1 章（新闻 news-1）" in notice
    assert "复制内容（最长一段）：「斗之力，三段」" in notice  # the longest passage of the page
    assert err.startswith("2026-11-22: 2 infringing pages")


def test_the_html_report_writes_times_in_the_display_timezone(seeded):
    report = build_report(seeded.db, DAY, now=at(DAY, 23))
    html = to_html(report, "Asia/Shanghai")
    assert "Generated 2026-11-23 07:00 (times in Asia/Shanghai (UTC+08:00))." in html
    assert "<td>2026-11-22 18:00</td>" in html  # page A, first seen at 10:00 UTC
    assert " UTC<" not in html and report["pages"][0]["first_seen"].endswith("+00:00")
    assert "Generated 2026-11-22 23:00 UTC (times in UTC (UTC+00:00))." in to_html(report)
