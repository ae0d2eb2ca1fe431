"""A discovery run against a local SearXNG-compatible engine, the crawl replaced by a stub: the
day's budget, queries not repeated within discover_requery_days, and every failure mode (a
timeout, an empty or malformed page, every engine unresponsive, a rate limit) logged, the run
going on, the query run again next time. Licensed sites, from every place they are named."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from tests.sites import book_masters
from tracker.demo.searxng import Reply, SearchServer, answer
from tracker.discovery.engines import SearxngEngine
from tracker.discovery.queries import PIRATE_WORDS
from tracker.discovery.run import discover, is_licensed, licensed_sites
from tracker.matching.library import MasterLibrary
from tracker.stores.discovery import QueryStore, SiteRegistry

NOW = datetime(2031, 3, 1, 8, tzinfo=UTC)
RESULTS = ["http://pirate.test/book/1.html", "http://licensed.test/1.html"]


class CrawlStub:
    """Stands for ``run_crawl``: writes a summary saying every result was read, no copy."""

    def __init__(self) -> None:
        self.checked: list[list[str]] = []

    def __call__(self, spider, settings, arguments, **kwargs) -> int:
        with open(arguments["results"], encoding="utf-8") as file:
            urls = [entry["url"] for entry in json.load(file)]
        self.checked.append(urls)
        summary = {"results": dict.fromkeys(urls, "read"), "sites": {}}
        with open(arguments["summary"], "w", encoding="utf-8") as file:
            json.dump(summary, file)
        return 0


@pytest.fixture()
def library(runtime):
    MasterLibrary.from_runtime(runtime).ingest(book_masters(3, work="归途", chars=600))
    return runtime


@pytest.fixture()
def server():
    with SearchServer(lambda query: RESULTS) as server:
        yield server


def run(runtime, settings, server, now=NOW, **overrides):
    settings = replace(settings, licensed_sites=("licensed.test",), **overrides)
    engine = SearxngEngine(server.url, timeout=1.5, retries=1, sleep=lambda s: None)
    crawl = CrawlStub()
    summary = discover(runtime, settings, engine=engine, now=now, crawl=crawl)
    return summary, crawl


def test_failures_are_logged_the_run_goes_on_and_they_are_asked_again(
    library, settings, server, caplog
):
    server.replies += [
        Reply(delay=4.0),  # a timeout
        Reply(body=b""),
        Reply(body=b"{not json"),
        Reply(
            body=json.dumps(answer("q", [], [("baidu", "CAPTCHA"), ("bing", "timeout")])).encode()
        ),
        Reply(unresponsive=[("sogou", "access denied")]),  # the others answered: counts
    ]
    with caplog.at_level(logging.ERROR, logger="tracker.discovery.run"):
        summary, crawl = run(library, settings, server, discover_queries_per_work=6)
    assert summary.queries == 6 and summary.failed == 4
    assert caplog.text.count("to be run again next time") == 4
    assert "did not answer in 1.5s" in caplog.text and "unresponsive engines baidu" in caplog.text
    assert summary.unresponsive == {"baidu": 1, "bing": 1, "sogou": 1}
    assert crawl.checked == [[RESULTS[0]]] and summary.skipped_licensed == 1
    failed = server.queries[:4]
    # Server-side order: the timed-out query was asked once; all four are due again.
    states = QueryStore(library.db).states(server.queries)
    assert all(states[q].get("done_at") is None for q in failed)
    assert all(states[q]["last_error"] for q in failed)

    asked = len(server.queries)
    later = NOW + timedelta(hours=1)
    again, crawl = run(library, settings, server, now=later, discover_queries_per_work=6)
    sent = server.queries[asked:]
    assert set(failed) <= set(sent) and not set(server.queries[4:asked]) & set(sent)
    assert again.failed == 0
    assert crawl.checked == []  # its results were checked an hour ago
    assert again.skipped_checked == 1


def test_a_rate_limit_ends_the_searching_and_the_query_waits_for_next_time(
    library, settings, server
):
    server.replies += [Reply(429, headers={"Retry-After": "1"})] * 2
    summary, crawl = run(library, settings, server)
    assert summary.rate_limited and summary.queries == 1 and summary.failed == 1
    assert "rate-limiting (HTTP 429)" in summary.errors[0]
    assert crawl.checked == []
    [query] = set(server.queries)
    assert QueryStore(library.db).states([query])[query].get("done_at") is None


def test_the_daily_budget_and_the_requery_window(library, settings, server):
    summary, _ = run(library, settings, server, discover_queries_per_day=3)
    assert summary.queries == 3 and summary.budget_left == 0
    assert server.queries == [f"归途 {word}" for word in PIRATE_WORDS[:3]]
    spent, _ = run(library, settings, server, discover_queries_per_day=3)
    assert spent.queries == 0  # the day's budget is spent
    tomorrow, _ = run(library, settings, server, now=NOW + timedelta(days=1))
    assert not set(server.queries[:3]) & set(server.queries[3:])  # not within 7 days
    assert tomorrow.queries == 2 + 3 + 3  # the other titles, 3 chapter titles, 3 phrases
    kinds = {doc["kind"] for doc in library.db["discovery_queries"].find()}
    assert kinds == {"title", "chapter", "sentence"}
    week, _ = run(library, settings, server, now=NOW + timedelta(days=8))
    assert f"归途 {PIRATE_WORDS[0]}" in server.queries[-week.queries :]  # due again


def test_licensed_sites_come_from_the_setting_site_files_and_the_console(
    settings, runtime, tmp_path
):
    site_file = tmp_path / "own.yaml"
    site_file.write_text(
        "name: own\nstart_urls: ['http://127.0.0.1:8123/book/']\nlicensed: true\n", "utf-8"
    )
    sites = [{"name": "own", "spider": "site", "cron": "0 2 * * *",
              "arguments": {"config": str(site_file)}}]  # fmt: skip
    registry = SiteRegistry(runtime.db)
    registry.found("mirror.test", query="q", url="http://mirror.test/1", entries=[], pages=1,
                   copies=1, now=NOW)  # fmt: skip
    registry.mark("mirror.test", "licensed", "olga", NOW)
    found = licensed_sites(
        replace(settings, licensed_sites=("qidian.com", "127.0.0.1:9000"), sites=sites), registry
    )
    assert found == {"qidian.com", "127.0.0.1:9000", "127.0.0.1:8123", "mirror.test"}
    assert is_licensed("https://book.qidian.com/info/1", {"qidian.com"})
    assert not is_licensed("https://qidian.com.evil.test/1", {"qidian.com"})
    assert is_licensed("http://127.0.0.1:9000/x", {"127.0.0.1:9000"})
    assert not is_licensed("http://127.0.0.1:9001/x", {"127.0.0.1:9000"})


def test_an_engine_that_cannot_be_reached_spends_one_query(library, settings):
    with SearchServer() as gone:
        url = gone.url
    engine = SearxngEngine(url, timeout=2, retries=0)
    summary = discover(library, settings, engine=engine, now=NOW, crawl=CrawlStub())
    assert summary.engine_down and summary.queries == 1 and summary.failed == 1
    assert "cannot be reached" in summary.errors[0]


def test_a_crawl_killed_midway_leaves_its_results_to_be_checked_again(library, settings, server):
    def killed(spider, settings, arguments, **kwargs) -> int:
        return -9  # SIGKILL: no summary written

    settings = replace(settings, licensed_sites=("licensed.test",))
    engine = SearxngEngine(server.url, retries=0, sleep=lambda s: None)
    summary = discover(library, settings, engine=engine, now=NOW, crawl=killed)
    assert summary.crawl_exit_code == -9 and "wrote no summary" in summary.errors[-1]
    assert not SiteRegistry(library.db).all()
    _, crawl = run(library, settings, server, now=NOW + timedelta(hours=1))
    assert crawl.checked == [[RESULTS[0]]]  # not taken for checked
