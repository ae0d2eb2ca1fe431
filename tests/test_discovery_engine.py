"""The SearXNG client against a local server speaking SearXNG's JSON API, its failure modes
included: each is a SearchError naming the cause (the run logs it and goes on)."""

from __future__ import annotations

import pytest

from tracker.demo.searxng import Reply, SearchServer
from tracker.discovery import engines
from tracker.discovery.engines import SearchError, SearxngEngine


@pytest.fixture()
def server():
    with SearchServer(lambda q: ["http://a.test/1.html", ("http://b.test/2", "标题", "摘要")]) as s:
        yield s


def engine(server: SearchServer, waits: list[float] | None = None, **kwargs) -> SearxngEngine:
    sleep = waits.append if waits is not None else (lambda s: None)
    return SearxngEngine(server.url, sleep=sleep, **kwargs)


def test_results_are_read_from_searxngs_json_shape(server):
    answer = engine(server).search("某书 最新章节")
    assert [r.url for r in answer.results] == ["http://a.test/1.html", "http://b.test/2"]
    assert answer.results[1].title == "标题" and answer.results[1].engines == ("bing", "baidu")
    assert answer.number_of_results == 2 and answer.unresponsive == []
    assert server.queries == ["某书 最新章节"]


def test_unresponsive_engines_are_reported_with_the_results_of_the_others(server):
    server.replies.append(Reply(unresponsive=[("baidu", "CAPTCHA"), ("sogou", "timeout")]))
    answer = engine(server).search("q")
    assert len(answer.results) == 2
    assert answer.unresponsive == [("baidu", "CAPTCHA"), ("sogou", "timeout")]


def test_a_rate_limit_is_waited_out_with_retry_after_then_backoff(server):
    server.replies += [
        Reply(429, headers={"Retry-After": "7"}),
        Reply(429),
        Reply(503),
    ]
    waits: list[float] = []
    answer = engine(server, waits, retries=3).search("q")
    assert len(answer.results) == 2 and len(server.queries) == 4
    assert waits[0] == 7.0
    assert 0 < waits[1] <= 4 and 0 < waits[2] <= 8  # 2, 4 s with equal jitter


def test_a_rate_limit_outlasting_the_retries_is_rate_limited(server):
    server.replies += [Reply(429)] * 3
    with pytest.raises(SearchError) as caught:
        engine(server, [], retries=2).search("q")
    assert caught.value.kind == engines.RATE_LIMITED and "rate-limiting (HTTP 429)" in str(
        caught.value
    )
    server.replies[:] = [Reply(429, headers={"Retry-After": "3600"})]
    with pytest.raises(SearchError, match="asks for 3600s"):
        engine(server, []).search("q")


@pytest.mark.parametrize(
    ("reply", "kind", "words"),
    [
        (Reply(body=b""), engines.EMPTY, "an empty page"),
        (Reply(body=b"<html>oops</html>"), engines.MALFORMED, "not JSON"),
        (Reply(body=b'{"results": [{"url": "http://a'), engines.MALFORMED, "not JSON"),
        (Reply(body=b'{"query": "q"}'), engines.MALFORMED, "without a results list"),
        (Reply(500, body=b"Internal Server Error"), engines.HTTP, "HTTP 500"),
    ],
)
def test_broken_answers_are_errors_naming_the_cause(server, reply, kind, words):
    server.replies.append(reply)
    with pytest.raises(SearchError, match=words) as caught:
        engine(server).search("q")
    assert caught.value.kind == kind
    assert f"SearXNG at http://127.0.0.1:{server.port}" in str(caught.value)


def test_a_timeout_is_an_error(server):
    server.replies.append(Reply(delay=1.0))
    with pytest.raises(SearchError, match=r"did not answer in 0\.2s") as caught:
        engine(server, timeout=0.2).search("q")
    assert caught.value.kind == engines.TIMEOUT


def test_an_instance_without_the_json_format_says_how_to_enable_it(server):
    eng = engine(server)
    eng.url += "/html-only"  # no /search there: 404 is an HTTP error
    with pytest.raises(SearchError, match="HTTP 404"):
        eng.search("q")
    server.replies.append(Reply(403, body=b"Forbidden"))
    with pytest.raises(SearchError, match="enable the json format") as caught:
        engine(server).search("q")
    assert caught.value.kind == engines.REFUSED


def test_a_server_that_is_gone_is_a_connection_error():
    with SearchServer() as gone:
        url = gone.url
    with pytest.raises(SearchError, match="cannot be reached") as caught:
        SearxngEngine(url, timeout=2).search("q")
    assert caught.value.kind == engines.CONNECTION


def test_only_http_results_are_kept_once_each():
    results = ["http://a.test/1", "javascript:alert(1)", "http://a.test/1", "ftp://x/y"]
    with SearchServer(lambda q: results) as server:
        answer = SearxngEngine(server.url).search("q")
    assert [r.url for r in answer.results] == ["http://a.test/1"]
