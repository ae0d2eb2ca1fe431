"""Issue 27's done-when: a fresh library (``tracker ingest``) and ``tracker discover`` with
``TRACKER_SEARCH_URL`` at a SearXNG-compatible engine that returns one chapter page each of
two pirate sites, a page of the licensed site and an unrelated page. The report then lists all
16 copies on the two pirate sites (14 of them reachable only by crawling those sites), no page
of the licensed or unrelated site, no innocent page and no wrong master id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.sites import Page, TestSite, chapter_br, html_page, link_list
from tests.texts import prose
from tracker.cli import main
from tracker.demo.searxng import Reply, SearchServer

CHAPTERS = 8
WORKS = {"星海归途": 100, "青云剑录": 200}  # work -> prose seed base


def chapters(work: str) -> list[tuple[str, str]]:
    base = WORKS[work]
    return [(f"第{k}章 {work}第{k}回", prose(base + k, 1200)) for k in range(1, CHAPTERS + 1)]


def book_file(folder: Path, work: str) -> Path:
    path = folder / f"{work}.txt"
    body = "\n\n".join(f"{title}\n\n{text}" for title, text in chapters(work))
    path.write_text(f"《{work}》\n\n{body}\n", encoding="utf-8")
    return path


def pirate_site(work: str, innocent_seed: int) -> TestSite:
    """A 笔趣阁-style copy of ``work``: a home page, a catalogue, every chapter (each linking
    上一章, 目录, 下一章), an announcement and an about page of the site's own text."""
    pages = {
        "/": Page(html_page("首页", link_list([("/book/", work)])).encode()),
        "/about.html": Page(
            html_page("关于本站", f"<div id='content'>{prose(innocent_seed, 900)}</div>").encode()
        ),
        "/book/notice.html": Page(
            html_page("本站公告", chapter_br("本站公告", prose(innocent_seed + 1, 900))).encode()
        ),
    }
    catalogue = [(f"/book/{k}.html", title) for k, (title, _) in enumerate(chapters(work), 1)]
    pages["/book/"] = Page(
        html_page(
            f"{work}最新章节", link_list([*catalogue, ("/book/notice.html", "公告")])
        ).encode()
    )
    for k, (title, text) in enumerate(chapters(work), start=1):
        links = f'<a href="/book/{k - 1}.html">上一章</a> ' if k > 1 else ""
        links += '<a href="/book/">目录</a>'
        links += f' <a href="/book/{k + 1}.html">下一章</a>' if k < CHAPTERS else ""
        pages[f"/book/{k}.html"] = Page(html_page(title, chapter_br(title, text, links)).encode())
    return TestSite(pages)


@pytest.fixture()
def web():
    """The two pirate sites, the licensed site (the rights holder's own reader) and an unrelated
    site, and the engine returning one page of each for every query."""
    first, second = pirate_site("星海归途", 9001), pirate_site("青云剑录", 9101)
    title, text = chapters("星海归途")[2]
    licensed = TestSite({"/read/3.html": Page(html_page(title, chapter_br(title, text)).encode())})
    unrelated = TestSite(
        {"/news/1.html": Page(html_page("天气", chapter_br("天气", prose(9201, 1200))).encode())}
    )
    results = [
        first.url + "book/3.html",
        second.url + "book/5.html",
        licensed.url + "read/3.html",
        unrelated.url + "news/1.html",
    ]
    engine = SearchServer(lambda query: results)
    yield first, second, licensed, unrelated, engine
    for server in (first, second, licensed, unrelated, engine):
        server.close()


def test_discover_finds_every_copy_on_the_pirate_sites_and_nothing_else(
    cli_env, monkeypatch, tmp_path, capsys, web, runtime
):
    first, second, licensed, unrelated, engine = web
    monkeypatch.setenv("TRACKER_SEARCH_URL", engine.url)
    monkeypatch.setenv("TRACKER_LICENSED_SITES", f"example.org, 127.0.0.1:{licensed.port}")
    monkeypatch.setenv("TRACKER_DISCOVER_QUERIES_PER_WORK", "4")
    # One query fails (a timeout, once): it is logged, the run goes on, it is asked again later.
    monkeypatch.setenv("TRACKER_SEARCH_TIMEOUT_S", "1")
    engine.replies.append(Reply(body=b"<html>not json</html>"))

    assert main(["ingest", *(str(book_file(tmp_path, work)) for work in WORKS)]) == 0
    capsys.readouterr()
    assert main(["discover", "--json"]) == 1  # one query failed
    run = json.loads(capsys.readouterr().out)
    assert run["queries"] == 8 and run["failed"] == 1 and run["works"] == 2
    assert run["skipped_licensed"] == 1 and run["checked"] == 3
    assert {s["site"] for s in run["new_sites"]} == {
        f"127.0.0.1:{first.port}",
        f"127.0.0.1:{second.port}",
    }
    assert all(s["query"] for s in run["new_sites"])

    assert main(["report", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    flagged = {page["url"]: page["doc_ids"] for page in report["pages"]}
    expected = {}
    for site, work in ((first, "星海归途"), (second, "青云剑录")):
        for k in range(1, CHAPTERS + 1):
            expected[f"{site.url}book/{k}.html"] = [f"{work}/{k}"]
    assert flagged == expected  # all 16, no innocent page, no wrong master id
    # The engine returned one chapter of each: the other 14 were found by crawling the sites.
    assert len(set(flagged) - {first.url + "book/3.html", second.url + "book/5.html"}) == 14
    assert not licensed.requests  # never fetched
    assert unrelated.fetched()["/news/1.html"] == 1  # checked, not a copy, not crawled further
    discovered = {entry["site"]: entry for entry in report["discovered"]}
    assert set(discovered) == {f"127.0.0.1:{first.port}", f"127.0.0.1:{second.port}"}
    assert all(entry["found_by"] and entry["state"] == "candidate" for entry in discovered.values())
    pages = runtime.db["pages"].find({"_id": first.url + "book/3.html"}, {"found_by": 1})
    assert [page.get("found_by") for page in pages] == [discovered[first.url[7:-1]]["found_by"]]

    assert main(["report", "--format", "html", "--out", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text("utf-8")
    assert "Newly discovered sites" in page and f"127.0.0.1:{second.port}" in page
    capsys.readouterr()

    # Again at once: the next queries of each work, the one that failed again, none of those
    # answered repeated; their results were checked already, nothing is fetched.
    failed, answered = engine.queries[0], set(engine.queries[1:])
    queried = len(engine.queries)
    assert main(["discover", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    sent = engine.queries[queried:]
    assert failed in sent and not answered & set(sent) and again["queries"] == len(sent) == 8
    assert again["checked"] == 0 and again["skipped_checked"] == 3 and not again["new_sites"]


def test_the_discover_job_crawls_the_watched_sites_afterwards(
    cli_env, monkeypatch, tmp_path, capsys, web, settings
):
    from dataclasses import replace

    from tracker.scheduler.jobs import JobContext, job_plan

    first, second, licensed, _, engine = web
    assert "discover" in {spec.name for spec in job_plan(settings)}  # book sources need no engine
    monkeypatch.setenv("TRACKER_SEARCH_URL", engine.url)
    monkeypatch.setenv("TRACKER_LICENSED_SITES", f"127.0.0.1:{licensed.port}")
    monkeypatch.setenv("TRACKER_DISCOVER_QUERIES_PER_WORK", "2")
    assert main(["ingest", *(str(book_file(tmp_path, work)) for work in WORKS)]) == 0
    assert main(["discover"]) == 0
    site = f"127.0.0.1:{first.port}"
    assert main(["discover", "mark", site, "watched"]) == 0
    assert main(["discover", "mark", "nowhere.test", "watched"]) == 2
    assert main(["discover", "sites", "--state", "watched", "--json"]) == 0
    capsys.readouterr()
    assert main(["discover", "sites", "--json"]) == 0
    listed = {doc["_id"]: doc["state"] for doc in json.loads(capsys.readouterr().out)}
    assert listed == {site: "watched", f"127.0.0.1:{second.port}": "candidate"}

    before = first.fetched()["/book/1.html"], second.fetched()["/book/1.html"]
    job_settings = replace(settings, search_url=engine.url, data_dir=tmp_path / "data")
    context = JobContext(job_settings)
    try:
        record = context.run("discover")
    finally:
        context.runtime.close()
    assert record["status"] == "ok", record
    [watched] = record["result"]["watched"]
    assert watched["site"] == site and watched["exit_code"] == 0
    # The watched site was crawled again, the candidate was not.
    assert first.fetched()["/book/1.html"] == before[0] + 1
    assert second.fetched()["/book/1.html"] == before[1]


def test_a_catalogue_result_is_probed_and_its_site_crawled(
    cli_env, monkeypatch, tmp_path, capsys, runtime
):
    """What a title query mostly returns is a book's catalogue, not a chapter, and often
    through the engine's redirect link (Baidu's ``/link?url=…``): the redirect is followed to
    the pirate site, three of the catalogue's chapter links are fetched, and a copy among them
    has the whole site crawled."""
    site = pirate_site("青云剑录", 9301)
    redirector = TestSite()
    redirector.pages["/link"] = Page(status=302, headers={"Location": site.url + "book/"})
    link = redirector.url + "link?url=a1b2c3"
    # Another redirect link leads to the licensed site: it is neither checked nor crawled.
    title, text = chapters("青云剑录")[0]
    chapter = html_page(title, chapter_br(title, text, '<a href="/read/2.html">下一章</a>'))
    licensed = TestSite({"/read/1.html": Page(chapter.encode())})
    redirector.pages["/link2"] = Page(
        status=302, headers={"Location": licensed.url + "read/1.html"}
    )
    results = [link, redirector.url + "link2?url=d4e5"]
    with site, redirector, licensed, SearchServer(lambda query: results) as engine:
        monkeypatch.setenv("TRACKER_SEARCH_URL", engine.url)
        monkeypatch.setenv("TRACKER_LICENSED_SITES", f"127.0.0.1:{licensed.port}")
        monkeypatch.setenv("TRACKER_DISCOVER_QUERIES_PER_WORK", "1")
        assert main(["ingest", str(book_file(tmp_path, "青云剑录"))]) == 0
        capsys.readouterr()
        assert main(["discover", "--json"]) == 0
        run = json.loads(capsys.readouterr().out)
    assert run["copies"] == CHAPTERS and [s["site"] for s in run["new_sites"]] == [
        f"127.0.0.1:{site.port}"
    ]
    assert run["new_sites"][0]["query"] == "青云剑录 笔趣阁"
    # Where the redirect led (and its robots.txt), and no further.
    assert [path for path in licensed.requests if path != "/robots.txt"] == ["/read/1.html"]
    stored = [page["_id"] for page in runtime.db["pages"].find({}, {"_id": 1})]
    assert not [url for url in stored if url.startswith(licensed.url)]
