"""Matching in a crawl's worker processes (tracker/crawling/match_worker.py): the same matches
as the crawl process's own detector, and a failure that hands every page of the batch back."""

from __future__ import annotations

import pytest

from tests.texts import prose
from tracker.crawling import match_worker
from tracker.fingerprints.simhash import simhash_normalized
from tracker.matching.library import MasterLibrary
from tracker.model import MasterDocument
from tracker.text.normalize import normalize


@pytest.fixture()
def fresh_worker(monkeypatch, cli_env):
    monkeypatch.setattr(match_worker, "_detector", None)
    yield
    match_worker._detector = None


def test_the_worker_finds_what_the_crawl_process_finds(runtime, settings, fresh_worker):
    masters = [MasterDocument(f"书/{k}", "书", f"第{k}章", prose(300 + k, 2000)) for k in range(3)]
    library = MasterLibrary.from_runtime(runtime)
    library.ingest(masters)
    pages = [
        "广告：本站最快更新\n" + masters[0].text,
        masters[1].text[:900] + "\n" + prose(999, 1500),
        prose(1000, 2000),  # innocent
    ]
    normalized = [normalize(page) for page in pages]
    simhashes = [int(h) for h in simhash_normalized(normalized)]
    found = match_worker.match_pages(list(zip(normalized, simhashes, strict=True)))
    detector = library.detector(settings)
    here = detector.check_normalized_many(normalized, simhashes)
    assert [[m.to_dict() for m in ms] for ms in here] == [matches for matches, _ in found]
    assert [[m["doc_id"] for m in ms] for ms, _ in found] == [["书/0"], ["书/1"], []]
    assert {version for _, version in found} == {detector.version}


def test_a_failed_check_hands_every_page_back(monkeypatch, fresh_worker):
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")  # nothing listens there
    text = normalize(prose(5, 600))
    found = match_worker.match_pages([(text, 0), (text, 0)])
    assert len(found) == 2 and all(isinstance(f, match_worker.MatchFailed) for f in found)
    assert match_worker._detector is None  # built again for the next batch
