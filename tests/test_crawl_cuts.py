"""The crawl's speed cuts (issue 40: the learned body locator, matching in the worker
processes) change nothing a crawl records: a pirate site crawled with them and without them
gives the same pages, the same matches and the same evidence."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest

from bench.crawl_throughput import build_pirate_site
from tests.test_crawl_novel import FAST, crawl_settings
from tracker.config import Settings
from tracker.crawling.crawl import run_crawl
from tracker.demo.site import serve
from tracker.enforcement.warc import RecordRef, parse_records, read_member
from tracker.index.page_index import PageIndex
from tracker.index.storage import RedisStorage
from tracker.matching.library import MasterLibrary
from tracker.model import MasterDocument
from tracker.servers.runtime import Runtime
from tracker.text.normalize import normalize

pytestmark = pytest.mark.integration

WITHOUT_CUTS = {"TRACKER_EXTRACT_LEARNED_BODY": 0, "TRACKER_MATCH_IN_WORKERS": 0}
VOLATILE = {"_id", "capture_id", "crawl_id", "warc_file", "warc_offset", "record_id"}


def _stable(document: dict) -> dict:
    """``document`` without its ids, times and file positions (which differ run to run)."""
    return {
        key: _stable(value) if isinstance(value, dict) else value
        for key, value in document.items()
        if key not in VOLATILE and not isinstance(value, datetime)
    }


def _recorded(runtime: Runtime) -> tuple[dict, dict, dict]:
    db = runtime.db
    pages = {d["_id"]: (d["text"], d["content_hash"], d.get("simhash")) for d in db["pages"].find()}
    matches = {(d["url"], d["doc_id"]): _stable(d) for d in db["matches"].find()}
    captures = {  # the evidence, without what differs from one fetch to the next (times,
        # Date headers, WARC offsets)
        d["url"]: (
            d["content_hash"],
            d["payload_sha256"],
            d["matches"],
            [(p["url"], p["status"], p["sha256"], p["length"]) for p in d["parts"]],
        )
        for d in db["captures"].find()
    }
    return pages, matches, captures


def _crawl_each(
    settings: Settings,
    site_dir: Path,
    masters: list[MasterDocument],
    runs: tuple[dict, ...],
    tmp_path: Path,
    record: Callable[[Runtime, Path], object],
    tag: str,
) -> tuple[list, list[dict]]:
    """Crawl the site at ``site_dir`` once for each of ``runs`` (Scrapy settings), each on a
    database, Redis prefix and evidence directory of its own with ``masters`` ingested: what
    ``record(runtime, evidence_dir)`` reads of each, and each crawl's stats."""
    recorded, stats = [], []
    with serve(site_dir) as site:
        for n, extra in enumerate(runs):
            evidence = tmp_path / f"{tag}-evidence{n}"
            own = replace(
                settings,
                mongo_db=f"{settings.mongo_db}_{tag}{n}",
                redis_prefix=f"{settings.redis_prefix}{tag}{n}:",
                evidence_dir=str(evidence),
            )
            runtime = Runtime(own)
            log = tmp_path / f"{tag}{n}.log"
            try:
                MasterLibrary.from_runtime(runtime).ingest(masters)
                code = run_crawl(
                    "novel",
                    crawl_settings(own),
                    arguments={"start_url": site.url},
                    scrapy_settings={**FAST, **extra},
                    log_file=log,
                    timeout=300,
                )
                assert code == 0, log.read_text(encoding="utf-8")[-3000:]
                recorded.append(record(runtime, evidence))
                stats.append(runtime.db["crawl_runs"].find_one()["stats"])
            finally:
                runtime.mongo.drop_database(own.mongo_db)
                RedisStorage(runtime.redis, own.redis_prefix).clear()
                runtime.close()
    return recorded, stats


def test_the_speed_cuts_change_no_page_match_or_evidence(settings, tmp_path):
    masters = build_pirate_site(tmp_path / "site", 40, copy_share=0.8)
    recorded, stats = _crawl_each(
        settings,
        tmp_path / "site",
        masters,
        (WITHOUT_CUTS, {}),
        tmp_path,
        lambda runtime, _evidence: _recorded(runtime),
        "cut",
    )
    (pages, matches, captures), (pages_cut, matches_cut, captures_cut) = recorded
    assert len(pages) == 40 and len({url for url, _ in matches}) == len(masters) == 32
    assert pages_cut == pages
    assert matches_cut == matches
    assert captures_cut == captures and len(captures) == 32
    # the cuts were at work: pages read by a learned locator, checked in the worker
    assert stats[1].get("tracker__reading__learned_body", 0) >= 20
    assert not stats[0].get("tracker__reading__learned_body")
    assert not stats[1].get("tracker__match__in_crawl_process")


#: The stage batches before the defaults grew (h50): pages a stage batch, pages an extraction.
OLD_BATCHES = {"TRACKER_BATCH_SIZE": 16, "TRACKER_EXTRACT_BATCH": 16}
#: Headers that differ from one fetch, or one writing of a record, to the next.
WARC_VOLATILE = {
    "WARC-Date",
    "WARC-Record-ID",
    "WARC-Concurrent-To",
    "WARC-Block-Digest",  # the block holds the HTTP Date header
    "WARC-Filename",
}


def _without_times(value: object) -> object:
    """``value`` with every datetime left out (nested documents and lists too)."""
    if isinstance(value, dict):
        return {k: _without_times(v) for k, v in value.items() if not isinstance(v, datetime)}
    if isinstance(value, list):
        return [_without_times(v) for v in value]
    return value


def _warc_record(evidence: Path, ref: dict) -> tuple:
    """The WARC record ``ref`` names, read back, without what differs from one writing to
    the next (its id, date, the HTTP Date header and the digest of the block holding it)."""
    (record,) = parse_records(read_member(evidence, RecordRef.from_dict(ref)))
    return (
        record.type,
        record.target_uri,
        record.status,
        sorted((k, v) for k, v in record.warc_headers.items() if k not in WARC_VOLATILE),
        [(k, v) for k, v in record.http_headers if k != "Date"],
        record.payload,
    )


def _everything(runtime: Runtime, evidence: Path, masters: list) -> dict:
    """All that a crawl recorded, field by field, keyed so that two crawls of one site
    compare: every collection of its database (without times); the page numbers and cluster
    numbers, which follow the order pages arrived in, by what they name (the page index's
    candidates of each master by URL, each page's cluster by its leader); the captures by URL,
    with every WARC record they name read back; every Redis key of the crawl."""
    db = runtime.db
    pages = {d["_id"]: _without_times(d) for d in db["pages"].find()}
    url_of = {page.pop("n"): url for url, page in pages.items()}
    leader = {d["_id"]: d["leader"] for d in db["clusters"].find()}
    captures = {}
    for d in db["captures"].find():
        capture = _without_times(d)
        capture.pop("_id")
        for part in capture["parts"]:
            part["response_headers"].pop("Date", None)
            part["records"] = [_warc_record(evidence, ref) for ref in part["records"]]
        captures[capture["url"]] = capture
    capture_url = {d["_id"]: d["url"] for d in db["captures"].find()}
    matches = {}
    for d in db["matches"].find():
        match = _without_times(d)
        match["capture_id"] = capture_url[match["capture_id"]]  # the page's own capture
        matches[d["_id"]] = match
    members = {}
    for d in db["cluster_members"].find():
        member = _without_times(d)
        member["cluster"] = leader[member["cluster"]]
        members[d["_id"]] = member
    rest = {
        name: {repr(d["_id"]): _without_times(d) for d in db[name].find()}
        for name in db.list_collection_names()
        if name not in ("pages", "captures", "matches", "clusters", "cluster_members", "crawl_runs")
    }
    (run,) = db["crawl_runs"].find()
    tokens = [normalize(m.text).tokens for m in masters]
    candidates: dict[str, dict[str, int]] = {}
    for n, shared in PageIndex.from_runtime(runtime).sharing(tokens).items():
        for text, count in shared.items():
            candidates.setdefault(masters[text].doc_id, {})[url_of[n]] = count
    keys = {}
    prefix = runtime.settings.redis_prefix
    for key in runtime.redis.scan_iter(match=f"{prefix}*"):
        name = key.decode()[len(prefix) :]
        kind = runtime.redis.type(key).decode()
        if name.startswith(("pix:pa", "cl:centres:")):  # page and cluster numbers: above
            keys[name] = kind
        elif kind == "string":
            keys[name] = runtime.redis.get(key)
        elif kind == "hash":
            keys[name] = runtime.redis.hgetall(key)
        elif kind == "set":
            keys[name] = runtime.redis.smembers(key)
        else:
            keys[name] = (kind, runtime.redis.memory_usage(key))
    return {
        "pages": pages,
        "page numbers": sorted(url_of),
        "matches": matches,
        "captures": captures,
        "cluster members": members,
        "clusters": sorted(leader.values()),
        "index candidates": candidates,
        "redis": keys,
        "urls": run["urls"],
        "counts": (run["pages"], run["matches"], run["clustering"]),
        **rest,
    }


def test_bigger_stage_batches_change_no_page_match_or_evidence(settings, tmp_path):
    """The defaults' stage and extraction batches (h50: 128 and 64 pages, from 16 and 16)
    record exactly what the old ones did on a pirate site, field by field: pages, matches,
    captures and their WARC records, clusters, the page index, every Redis key. The third
    crawl waits a second for its batches, so that they fill up whatever the machine's load."""
    masters = build_pirate_site(tmp_path / "site", 150, copy_share=0.8)
    runs = (OLD_BATCHES, {}, {"TRACKER_BATCH_DELAY": 1})
    recorded, stats = _crawl_each(
        settings,
        tmp_path / "site",
        masters,
        runs,
        tmp_path,
        lambda runtime, evidence: _everything(runtime, evidence, masters),
        "batch",
    )
    old = recorded[0]
    assert len(old["pages"]) == 150 and len(old["matches"]) == len(masters) == 120
    assert len(old["captures"]) == 120 and len(old["index candidates"]) == 120
    assert old["urls"]["unaccounted"] == 0
    for new in recorded[1:]:
        assert new.keys() == old.keys()
        for what in old:
            assert new[what] == old[what], what
    # the bigger batches were at work: the waiting crawl's stages took more than 16 pages a
    # batch, its extraction calls more than 16 pages
    waited = stats[2]
    for stage, most in (("store", 16), ("extract", 16)):
        pages = waited[f"tracker__batches__{stage}__pages"]
        assert pages / waited[f"tracker__batches__{stage}"] > most, (stage, waited)
    assert Settings.batch_size > 16 and Settings.extract_batch > 16
