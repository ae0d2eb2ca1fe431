"""Issue 35's done-when for book sources: ``tracker ingest`` of two works, ``tracker sources
import`` of a Legado file (a JSOUP source for a search-only GBK HTML site, a JSONPath source for
a JSON API, one that needs a script), ``tracker discover`` with no search engine set: every
copy on both sites is found through its source (16 + 8), no innocent page, no wrong id; and
the bad inputs (a malformed source file, a rule matching nothing, a search page answering
garbage) each get a clear reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.booksource_sites import (
    CHAPTERS,
    WORKS,
    AppSite,
    book_text,
    chapters,
    html_site,
    json_site,
    json_source,
    jsoup_source,
    legado_sources,
    script_source,
)
from tracker.cli import main


def ingest(tmp_path: Path) -> None:
    paths = []
    for work in WORKS:
        path = tmp_path / f"{work}.txt"
        path.write_text(book_text(work), encoding="utf-8")
        paths.append(str(path))
    assert main(["ingest", *paths]) == 0


@pytest.fixture()
def sites():
    reading, api = html_site(), json_site()
    yield reading, api
    reading.close()
    api.close()


def site_of(site: AppSite) -> str:
    return site.url.removeprefix("http://").rstrip("/")


def test_sources_find_every_copy_with_no_search_engine(
    cli_env, monkeypatch, tmp_path, capsys, sites, runtime
):
    reading, api = sites
    monkeypatch.delenv("TRACKER_SEARCH_URL", raising=False)
    ingest(tmp_path)
    source_file = tmp_path / "legado.json"
    source_file.write_text(legado_sources(reading, api), encoding="utf-8")
    capsys.readouterr()

    assert main(["sources", "import", str(source_file), "--json"]) == 0
    imported = json.loads(capsys.readouterr().out)
    hosts = {site_of(reading), site_of(api), "www.js-only.test"}
    assert {s["host"] for s in imported["sources"]} == set(imported["new_sites"]) == hosts
    assert main(["sources", "list", "--json"]) == 0
    listed = {doc["_id"]: doc for doc in json.loads(capsys.readouterr().out)}
    assert [listed[name]["runnable"] for name in ("测试书城", "某某阅读API")] == [True, True]
    script = listed["需要脚本的书源"]
    assert not script["runnable"] and script["why_not"].startswith("needs script")
    assert main(["discover", "sites", "--json"]) == 0
    registered = {doc["_id"]: doc for doc in json.loads(capsys.readouterr().out)}
    assert registered["www.js-only.test"]["found_by"] == "需要脚本的书源"
    assert all(doc["state"] == "candidate" for doc in registered.values())

    assert main(["discover", "--json"]) == 0
    run = json.loads(capsys.readouterr().out)
    done = run["book_sources"]
    assert done["runs"] == 4 and done["failed"] == 0  # 2 sources x 2 works
    assert done["by_source"]["测试书城"]["read"] == 2 * CHAPTERS
    assert done["by_source"]["某某阅读API"]["read"] == CHAPTERS
    assert done["copies"] == 3 * CHAPTERS
    for crawl in runtime.db["crawl_runs"].find():  # every URL the sources fetched ended one way
        assert crawl["urls"]["fetched"] > 0 and crawl["urls"]["unaccounted"] == 0, crawl["urls"]

    assert main(["report", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    flagged = {page["url"]: page["doc_ids"] for page in report["pages"]}
    expected = {}
    for book_id, work in (("1001", "星海归途"), ("1002", "青云剑录")):
        for k in range(1, CHAPTERS + 1):
            expected[f"{reading.url}book/{book_id}/{k}.html"] = [f"{work}/{k}"]
    for k in range(1, CHAPTERS + 1):
        expected[f"{api.url}api/content?id=x7&cid={k}"] = [f"星海归途/{k}"]
    assert flagged == expected  # all 16 + 8, no innocent page, no wrong master id
    # the innocent books beside them were never read: their names are not the works'
    assert not any("/book/1501/" in path or "/book/1502/" in path for path in reading.fetched())
    assert not any("id=q9" in path for path in api.fetched())
    # A chapter read over its two pages, the site's ad lines replaced away, both pages kept
    # as evidence; found by its source.
    first = runtime.db["pages"].find_one({"_id": f"{reading.url}book/1001/1.html"})
    _, text = chapters("星海归途")[0]
    assert text.splitlines()[-1].strip() in first["text"] and "最快更新" not in first["text"]
    assert first.get("found_by") == "book source 测试书城"
    discovered = {entry["site"]: entry for entry in report["discovered"]}
    assert discovered[site_of(reading)]["found_by"] == "测试书城"
    assert discovered[site_of(api)]["found_by"] == "某某阅读API"
    assert discovered[site_of(api)]["sources"] == ["某某阅读API"]
    assert "www.js-only.test" not in discovered  # named by a source, no copy found on it
    assert {s["site"] for s in run["new_sites"]} == {site_of(reading), site_of(api)}

    # Again at once: each source's search of each work was done, nothing is run.
    fetched = len(reading.fetched()) + len(api.fetched())
    assert main(["discover", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["book_sources"]["runs"] == 0
    assert len(reading.fetched()) + len(api.fetched()) == fetched


def test_bad_sources_get_clear_reasons(cli_env, monkeypatch, tmp_path, capsys, sites):
    """A malformed source in a file: exit 2 naming it and its line, the others stored. A rule
    matching nothing and a search page answering garbage: logged reasons, the run going on."""
    reading, api = sites
    monkeypatch.delenv("TRACKER_SEARCH_URL", raising=False)
    ingest(tmp_path)
    garbage = AppSite(lambda method, path, query, body: (200, "text/html", b"<html>busy</html>"))
    nothing = jsoup_source(reading, "章节规则失效")
    nothing["ruleToc"] = {"chapterList": "id.catalog@tag.li", "chapterUrl": "tag.a@href"}
    texts = [
        json.dumps(source, ensure_ascii=False, indent=2)
        for source in (json_source(api), nothing, json_source(garbage, "乱码接口"))
    ]
    broken = json.dumps(script_source(), ensure_ascii=False, indent=2).replace('",\n', '"\n', 1)
    file = tmp_path / "mixed.json"
    file.write_text("[\n" + ",\n".join([texts[0], broken, texts[1], texts[2]]) + "\n]\n", "utf-8")
    capsys.readouterr()
    try:
        assert main(["sources", "import", str(file)]) == 2
        out, err = capsys.readouterr()
        line = 2 + texts[0].count("\n") + 1  # the broken source starts after the first
        assert f"source '需要脚本的书源' at line {line}" in err and "not JSON" in err
        assert "3 source(s) imported" in out

        assert main(["sources", "import", str(tmp_path / "missing.json")]) == 2
        (tmp_path / "bad.json").write_text("{not json", "utf-8")
        assert main(["sources", "import", str(tmp_path / "bad.json")]) == 2
        assert "not JSON" in capsys.readouterr().err

        assert main(["discover", "--json"]) == 0
        run = json.loads(capsys.readouterr().out)
    finally:
        garbage.close()
    by_source = run["book_sources"]["by_source"]
    assert by_source["某某阅读API"]["copies"] == CHAPTERS  # the good source ran on
    missed = by_source["章节规则失效"]["reasons"]
    assert len(missed) == 2 and all(
        "ruleToc.chapterList" in r and "matched nothing" in r for r in missed
    )
    reasons = by_source["乱码接口"]["reasons"]
    assert reasons and all("not JSON" in reason for reason in reasons)


def test_a_challenge_on_a_chapter_is_unread_as_in_a_crawl(
    cli_env, monkeypatch, tmp_path, capsys, sites
):
    """A chapter page answered with a browser check is recorded unread (never clean), the
    other chapters are read and matched."""
    reading, _ = sites
    monkeypatch.delenv("TRACKER_SEARCH_URL", raising=False)
    ingest(tmp_path)
    wall = b"<html><head><title>Just a moment...</title></head><body></body></html>"
    served = reading.handler
    blocked = "/book/1002/4.html"
    gone = "/book/1001/6_2.html"  # a chapter's second page: the chapter as far as it was read

    def handler(method: str, path: str, query: dict, body: bytes) -> tuple | None:
        if path == blocked:
            return 200, "text/html", wall
        return None if path == gone else served(method, path, query, body)

    reading.handler = handler
    # imported from a URL this time, as collections are shared
    data = json.dumps([jsoup_source(reading)], ensure_ascii=False).encode()
    with AppSite(lambda method, path, query, body: (200, "application/json", data)) as host:
        assert main(["sources", "import", host.url + "sources.json"]) == 0
    assert main(["sources", "import", host.url + "sources.json"]) == 2  # gone: a clear error
    assert "sources.json" in capsys.readouterr().err
    assert main(["discover", "--json"]) == 0
    run = json.loads(capsys.readouterr().out)
    tally = run["book_sources"]["by_source"]["测试书城"]
    assert tally["unread"] == 1 and tally["copies"] == 2 * CHAPTERS - 1
    assert any("challenge" in reason for reason in tally["reasons"])
    assert main(["report", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    flagged = {page["url"] for page in report["pages"]}
    assert flagged >= {f"{reading.url}book/1002/3.html", f"{reading.url}book/1001/6.html"}
    assert reading.url + blocked[1:] not in flagged
    unread = {entry["url"]: entry["reason"] for entry in report["unread"]}
    assert unread == {reading.url + blocked[1:]: "challenge"}
    # Nothing due any more: the text output says what ran, without an engine line of zeros.
    capsys.readouterr()
    assert main(["discover"]) == 0
    out = capsys.readouterr().out
    assert "no query was due" in out and "no search engine (search_url)" in out


def test_the_discover_job_runs_the_sources_with_no_engine(
    cli_env, monkeypatch, tmp_path, capsys, sites, settings
):
    from dataclasses import replace

    from tracker.scheduler.jobs import JobContext, job_plan

    _, api = sites
    monkeypatch.delenv("TRACKER_SEARCH_URL", raising=False)
    job_settings = replace(settings, search_url="", data_dir=tmp_path / "data")
    assert "discover" in {spec.name for spec in job_plan(job_settings)}
    context = JobContext(job_settings)
    try:
        record = context.run("discover")  # nothing to discover with yet: skipped, not failed
        assert record["status"] == "ok" and "skipped" in record["result"]["discovery"]
        ingest(tmp_path)
        file = tmp_path / "api.json"
        file.write_text(json.dumps(json_source(api), ensure_ascii=False), "utf-8")
        assert main(["sources", "import", str(file)]) == 0
        record = context.run("discover")
    finally:
        context.runtime.close()
    assert record["status"] == "ok", record
    ran = record["result"]["discovery"]["book_sources"]
    assert ran["runs"] == len(WORKS) and ran["copies"] == CHAPTERS


def test_runs_are_planned_within_the_budget_priority_first(runtime, settings):
    from dataclasses import replace
    from datetime import UTC, datetime

    from tests.texts import prose
    from tracker.booksources.run import plan_runs, query_of
    from tracker.matching.library import MasterLibrary
    from tracker.model import MasterDocument
    from tracker.stores.discovery import QueryStore

    works = ("甲书", "乙书", "丙书")
    MasterLibrary.from_runtime(runtime).ingest(
        [MasterDocument(f"{w}/0001", w, "第1章", prose(300 + k, 800)) for k, w in enumerate(works)]
    )
    sources = [{"_id": "a"}, {"_id": "b"}]
    now = datetime.now(UTC)
    first = replace(settings, discover_priority=("丙书",))
    pairs = plan_runs(runtime.db, first, sources, None, 5, now)
    assert len(pairs) == 5 and pairs[:2] == [("a", "丙书"), ("b", "丙书")]
    QueryStore(runtime.db).attempted(query_of("a", "甲书"), {}, now, done=True)
    again = plan_runs(runtime.db, first, sources, None, 10, now)
    assert len(again) == 5 and ("a", "甲书") not in again  # done within discover_requery_days
    only = plan_runs(runtime.db, first, sources, ["乙书"], 10, now)
    assert only == [("a", "乙书"), ("b", "乙书")]
