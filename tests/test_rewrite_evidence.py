"""The evidence of a rewritten copy (改写/洗稿, issue 39) as a reader meets it: found by the real
detector, stored as a check stores it, then in the daily report (JSON, CSV, HTML), the takedown
notices (Chinese and English) and the console labelled 改写/洗稿 and shown as aligned sentence
pairs, the page's sentence beside the master's with the swapped words marked, never as a
verbatim passage; a verbatim copy's evidence stays what it was; a hostile sentence stays text."""

from __future__ import annotations

import csv
import html
import io
import json
import re
from dataclasses import replace
from datetime import UTC, date, datetime

import pytest
from fastapi.testclient import TestClient

from tests import rewrites as r
from tests.html_check import assert_inert
from tests.test_rewrites import BY_HAND
from tracker.cli import main
from tracker.console import create_app
from tracker.console.users import Users
from tracker.matching.library import MasterLibrary
from tracker.matching.rewrites import METHOD
from tracker.model import MasterDocument
from tracker.reports import build_report, to_csv, to_html, to_json
from tracker.reports.build import EVIDENCE_CHARS, copied_text
from tracker.reports.notices import to_notices
from tracker.reports.pairs import (
    ADDED,
    DROPPED,
    PAIRS_SHOWN,
    REWRITE,
    SAME,
    SWAPPED,
    marked,
    plain_marked,
    telling_pairs,
)
from tracker.stores.pages import MatchStore, PageRecord, PageStore

pytestmark = pytest.mark.integration

DAY = date(2026, 11, 22)
NOW = datetime(2026, 11, 22, 10, tzinfo=UTC)
REWRITTEN = "https://pirate.example/xigao/1.html"
VERBATIM = "https://pirate.example/copy/1.html"
HOSTILE = "<script>alert(1)</script>"
#: The hand-written rewrite of hand/0, with a hostile tag inside its most telling sentence.
TOLD = "初步统计显示，这场暴雨让二千六百亩庄稼受灾"
HOSTILE_COPY = BY_HAND[0][1].replace(TOLD, TOLD + HOSTILE)


def test_the_report_names_the_detectors_method():
    assert REWRITE == METHOD


def test_marks_show_swapped_added_and_dropped_words():
    pair = {"text": "然而他称，430名村民已安置到镇中学",
            "master_text": "但是他表示，四百三十名村民转移到镇中学",
            "swapped": [["然而", "但是"], ["称", "表示"], ["430", "四百三十名"]]}  # fmt: skip
    page, master = marked(pair)
    assert "".join(t for t, _ in page) == pair["text"]
    assert "".join(t for t, _ in master) == pair["master_text"]
    assert {t for t, s in page if s == SWAPPED} >= {"然而", "称"}
    assert "430" in "".join(t for t, s in page if s == SWAPPED)
    # the detector joins a number and its measure word; the segmenter cuts them apart
    assert "四百三十名" in "".join(t for t, s in master if s == SWAPPED)
    assert "村民" in "".join(t for t, s in page if s == SAME)
    assert "安置" in "".join(t for t, s in page if s == ADDED)
    assert "转移" in "".join(t for t, s in master if s == DROPPED)
    assert plain_marked(pair, "【", "】")[0].startswith("【然而】他【称】")


def test_the_most_telling_pairs_are_shown_in_page_order():
    def span(at, text, master, cosine, dice, swapped=()):
        return {"page_start": at, "text": text, "master_text": master, "cosine": cosine,
                "dice": dice, "swapped": [list(s) for s in swapped]}  # fmt: skip

    spans = [
        span(50, "短句而已", "短句", 0.99, 1),
        span(40, "这是第二个足够长的句子了吧", "第二个足够长的句子", 0.6, 0.6, [("这是", "此为")]),
        span(30, "这是第三个足够长的句子了吧", "第三个足够长的句子", 0.5, 0.5),
        span(20, "这是第四个足够长的句子了吧", "第四个足够长的句子", 0.9, 0.8),
        span(10, "这是第五个足够长的句子了吧", "第五个足够长的句子", 0.4, 0.4),
    ]
    verbatim = {"doc_id": "v", "method": "shingle", "spans": [{"text": "原样复制的段落" * 9}]}
    shown = telling_pairs([verbatim, {"doc_id": "d", "method": REWRITE, "spans": spans}])
    assert len(shown) == PAIRS_SHOWN
    assert [p["master_text"] for p in shown] == ["第四个足够长的句子", "第三个足够长的句子",
                                                 "第二个足够长的句子"]  # fmt: skip
    assert shown[2]["swapped"] == [["这是", "此为"]]


@pytest.fixture()
def stored(runtime):
    """hand/0 and hand/1 rewritten (the first with a hostile sentence), news/501 copied
    verbatim: found by the detector, stored as a crawl stores them."""
    masters = {"hand/0": BY_HAND[0][0], "hand/1": BY_HAND[1][0], "news/501": r.news(501)}
    MasterLibrary.from_runtime(runtime).ingest(
        [MasterDocument(doc, doc.split("/")[0], f"{doc} 标题", t) for doc, t in masters.items()]
    )
    library = MasterLibrary.from_runtime(runtime)
    pages = {REWRITTEN: HOSTILE_COPY + "\n" + BY_HAND[1][1], VERBATIM: masters["news/501"]}
    found = library.detector().check_many(list(pages.values()))
    found = {url: [m.to_dict() for m in ms] for url, ms in zip(pages, found, strict=True)}
    assert sorted(m["doc_id"] for m in found[REWRITTEN]) == ["hand/0", "hand/1"]
    assert all(m["method"] == REWRITE for m in found[REWRITTEN])
    assert [m["doc_id"] for m in found[VERBATIM]] == ["news/501"]
    assert found[VERBATIM][0]["method"] != REWRITE
    MatchStore(runtime.db).record_many(found, NOW)
    for url, text in pages.items():
        PageStore(runtime.db).save(PageRecord(url=url, text=text, title="第一章"), now=NOW)
    return runtime, found, masters


def _rows(report, url):
    return [p for w in report["works"] for p in w["pages"] if p["url"] == url]


def test_the_report_shows_a_rewrite_as_aligned_pairs(stored):
    runtime, found, masters = stored
    report = build_report(runtime.db, DAY, now=NOW)
    [flat] = [p for p in report["pages"] if p["url"] == REWRITTEN]
    assert (flat["method"], flat["rewritten"]) == (REWRITE, ["hand/0", "hand/1"])
    [row] = _rows(report, REWRITTEN)  # both masters are of the work "hand"
    assert row["method"] == REWRITE and row["evidence"] == ""  # no verbatim passage
    assert row["aligned"] == sum(len(m["spans"]) for m in found[REWRITTEN])
    assert len(row["pairs"]) == PAIRS_SHOWN
    for pair in row["pairs"]:
        assert pair["text"] in HOSTILE_COPY + BY_HAND[1][1]
        assert pair["master_text"] in masters[pair["doc_id"]]
        assert pair["text"] != pair["master_text"]
    assert any(HOSTILE in pair["text"] for pair in row["pairs"])

    # A verbatim copy keeps today's evidence: its longest passage, no pairs.
    [copy] = _rows(report, VERBATIM)
    assert (copy["method"], copy["rewritten"], copy["pairs"], copy["aligned"]) == (
        "verbatim",
        [],
        [],
        0,
    )
    longest = max((copied_text(s["text"]) for s in found[VERBATIM][0]["spans"]), key=len)
    expected = longest if len(longest) <= EVIDENCE_CHARS else longest[: EVIDENCE_CHARS - 1] + "…"
    assert copy["evidence"] == expected and expected

    # JSON and CSV carry the method.
    assert json.loads(to_json(report)) == report
    rows = list(csv.DictReader(io.StringIO(to_csv(report))))
    assert {(row["doc_id"], row["method"]) for row in rows} == {
        ("hand/0", REWRITE),
        ("hand/1", REWRITE),
        ("news/501", "verbatim"),
    }


def test_the_html_report_labels_and_marks_a_rewrite_and_escapes_it(stored):
    runtime, _, _ = stored
    report = build_report(runtime.db, DAY, now=NOW)
    page = to_html(report)
    assert "<script" not in page.lower()
    assert html.escape(HOSTILE, quote=False) in page
    rows = {row.split("</tr>")[0] for row in page.split("<tr>")}
    [rewritten] = [row for row in rows if REWRITTEN in row and "改写/洗稿" in row]
    assert len(re.findall(r'class="rewrite-pair"', rewritten)) == PAIRS_SHOWN
    swapped = re.findall(r"<mark>(.*?)</mark>", rewritten)
    assert swapped  # the words swapped, marked on both sides
    assert re.search(r"<ins>.+?</ins>", rewritten) and re.search(r"<del>.+?</del>", rewritten)
    shown = html.unescape(re.sub(r"</?(?:mark|ins|del)>", "", rewritten))
    for pair in _rows(report, REWRITTEN)[0]["pairs"]:  # each side whole, its marks taken off
        assert pair["text"] in shown and pair["master_text"] in shown
    [verbatim] = [row for row in rows if VERBATIM in row and "<td" in row]
    assert "改写/洗稿" not in verbatim and "rewrite-pair" not in verbatim
    evidence = _rows(report, VERBATIM)[0]["evidence"]
    assert f'<td class="evidence">{html.escape(evidence)}</td>' in verbatim
    assert "<ins>words the page added</ins>" in page  # the legend, once
    assert page.count('class="legend"') == 1


def test_notices_describe_a_rewrite_with_a_few_pairs(stored, settings):
    runtime, found, _ = stored
    report = build_report(runtime.db, DAY, now=NOW)
    pairs = _rows(report, REWRITTEN)[0]["pairs"]
    aligned = sum(len(m["spans"]) for m in found[REWRITTEN])
    [zh] = to_notices(report, runtime.db, settings).values()
    rewritten, verbatim = _notice_parts(zh, REWRITTEN, VERBATIM)
    assert f"改写/洗稿：共 {aligned} 句与原作逐句对应" in rewritten
    assert "最长一段" not in rewritten and "最长一段" in verbatim
    assert "改写/洗稿" not in verbatim
    assert rewritten.count("· 网页：「") == rewritten.count("原作：「") == PAIRS_SHOWN
    for pair in pairs:
        page, master = plain_marked(pair, "【", "】")
        assert f"网页：「{page}」" in rewritten and f"原作：「{master}」" in rewritten
    assert "【" in rewritten and HOSTILE in rewritten  # plain text: the tag is only text

    english = replace(settings, notice_language="en")
    [en] = to_notices(report, runtime.db, english).values()
    rewritten, verbatim = _notice_parts(en, REWRITTEN, VERBATIM)
    assert f"Rewritten copy (paraphrase): {aligned} sentences match" in rewritten
    assert rewritten.count("- Page:") == rewritten.count("Original:") == PAIRS_SHOWN
    assert "Evidence, as found on the page" in verbatim
    assert "Rewritten copy" not in verbatim


def _notice_parts(text: str, *urls: str) -> list[str]:
    """Each URL's part of a notice: from its numbered line to the next URL's."""
    starts = [text.index(f". {url}" if f". {url}" in text else url) for url in urls]
    bounds = [*sorted(starts), len(text)]
    return [text[start : bounds[bounds.index(start) + 1]] for start in starts]


def test_check_jsonl_says_rewrite_with_the_pairs(runtime, cli_env, tmp_path, capsys):
    MasterLibrary.from_runtime(runtime).ingest(
        [MasterDocument("hand/2", "hand", "h2", BY_HAND[2][0])]
    )
    path = tmp_path / "pages.jsonl"
    path.write_text(
        json.dumps({"id": "p1", "text": BY_HAND[2][1]}, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    assert main(["check", "--jsonl", str(path), "--workers", "1"]) == 0
    [answer] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    [match] = answer["matches"]
    assert (answer["id"], match["doc_id"], match["method"]) == ("p1", "hand/2", REWRITE)
    assert len(match["spans"]) >= 4
    for span in match["spans"]:
        assert span["text"] in BY_HAND[2][1] and span["master_text"] in BY_HAND[2][0]


def test_the_console_labels_a_rewrite_and_shows_its_pairs(stored):
    runtime, found, _ = stored
    Users(runtime.db).add("olga", "operator", "operator-pass")
    with TestClient(create_app(runtime.settings, runtime)) as client:
        work = client.get(f"/work?name=hand&date={DAY}", auth=("olga", "operator-pass"))
        evidence = client.get("/page", params={"url": REWRITTEN}, auth=("olga", "operator-pass"))
    assert work.status_code == evidence.status_code == 200
    aligned = sum(len(m["spans"]) for m in found[REWRITTEN])
    assert f"改写/洗稿</strong> rewritten copy: {aligned} sentences aligned" in work.text
    assert "改写/洗稿 (rewrite)" in evidence.text  # every pair, beside the master's
    assert evidence.text.count('class="pair"') == aligned
    for page in (work.text, evidence.text):
        assert_inert(page, scripts=("/static/console.js", "/static/docs.js"))
        assert "<script>alert" not in page
