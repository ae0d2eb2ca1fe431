"""What a crawl's worker process does to a page, in one process: its output's digest (a change
that must leave the output identical is checked with it) and its CPU milliseconds a page.

The worker of ``scrapy crawl`` (``TRACKER_MATCH_IN_WORKERS``) extracts a batch of pages
(:func:`tracker.reading.extract.extract_pages`: the text, its normalised form, SimHash votes
and content hash) and checks them (:func:`tracker.crawling.match_worker.match_pages`, the
detector's :meth:`~tracker.matching.detector.Detector.check_normalized_many`). Here both run
on two sets of pages, 16 to a batch as in a crawl:

* ``bench``: the first ``--pages`` chapter pages of the pirate bench site
  (:func:`bench.crawl_throughput.build_pirate_site`: copies with ad lines, a stylesheet),
  read with that stylesheet as the crawl sends it;
* ``real``: the saved real pages of ``tests/fixtures/pages`` (news portals, blogs, lists).

The library holds the bench site's masters and the real pages' expected bodies, on embedded
servers in a temporary directory, so the checks find copies on both sets.

``--digest`` prints, per set, a SHA-256 over every page's extracted text, title and
extractor, its normalised form (folded characters, their offsets, tokens and token spans),
SimHash votes, SimHash, content hash and check result (the matches, their spans and
scores). Two checkouts whose digests are equal give the crawl the same pages and matches.

``--time`` runs ``--passes`` passes over the bench pages (a fresh detector each pass, warmed
up first, so every master is loaded as in a crawl of distinct masters) and prints the
process's CPU milliseconds a page for extraction and for the check (the best pass; the load
average with it).

    python -m bench.crawl_worker --digest [--pages 200]
    python -m bench.crawl_worker --time [--passes 5] [--pages 200]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np

from tracker.config import Settings
from tracker.matching.detector import Detector
from tracker.matching.library import MasterLibrary
from tracker.model import MasterDocument
from tracker.reading.extract import (
    ExtractedPage,
    ExtractionFailed,
    PageContext,
    extract_normalized,
)
from tracker.reading.locator import BodyLocators
from tracker.servers import services
from tracker.servers.runtime import Runtime
from tracker.text.normalize import normalize

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "pages"
BATCH = 16  # pages to a worker call (TRACKER_EXTRACT_BATCH before h50; 64 since)
SITE = "http://127.0.0.1:8000"

Page = tuple[str, str, PageContext | None]  # url, html, context


def bench_pages(root: Path, count: int) -> tuple[list[Page], list[MasterDocument]]:
    """The first ``count`` chapter pages of the pirate bench site, and their masters."""
    from bench.crawl_throughput import STYLESHEET, build_pirate_site

    masters = build_pirate_site(root, count)
    context = PageContext(stylesheets={f"{SITE}/css/style.css": STYLESHEET})
    pages = [
        (f"{SITE}/p/{n}.html", (root / "p" / f"{n}.html").read_text(encoding="utf-8"), context)
        for n in range(count)
    ]
    return pages, masters


def real_pages() -> tuple[list[Page], list[MasterDocument]]:
    """The saved real pages, decoded as the crawl decodes them, and their expected bodies."""
    from spiders.base import decode_page

    entries = json.loads((FIXTURES / "manifest.json").read_text(encoding="utf-8"))["pages"]
    pages, masters = [], []
    for entry in entries:
        raw = gzip.decompress((FIXTURES / entry["file"]).read_bytes())
        url = entry.get("url") or f"http://{entry['site']}/{entry['name']}.html"
        pages.append((url, decode_page(raw, "text/html").html, None))
        if not entry.get("expected"):  # a list page
            continue
        expected = (FIXTURES / entry["expected"]).read_text(encoding="utf-8")
        if len(expected) >= 200:
            masters.append(MasterDocument(f"real/{entry['name']}", "real", entry["name"], expected))
    return pages, masters


def batches(pages: list[Page]) -> Iterator[list[Page]]:
    for start in range(0, len(pages), BATCH):
        yield pages[start : start + BATCH]


def extract_batch(batch: list[Page], locators: BodyLocators) -> list:
    """:func:`~tracker.reading.extract.extract_pages` of a crawl (its default
    ``extract_learned_body``), with ``locators`` of this run's own."""
    results: list = []
    for url, html, context in batch:
        try:
            results.append(extract_normalized(html, url, None, context, locators))
        except Exception as exc:
            results.append(ExtractionFailed(f"{type(exc).__name__}: {exc}"))
    return results


def check_batch(detector: Detector, extracted: list) -> list:
    """The worker's check of the pages extracted (``match_pages``): matches per page."""
    ok = [k for k, page in enumerate(extracted) if isinstance(page, ExtractedPage)]
    found = detector.check_normalized_many(
        [extracted[k].normalized for k in ok], [extracted[k].simhash for k in ok]
    )
    results: list = [None] * len(extracted)
    for k, matches in zip(ok, found, strict=True):
        results[k] = [m.to_dict() for m in matches]
    return results


def _array(digest: hashlib._Hash, array: np.ndarray) -> None:
    digest.update(f"{array.dtype.str}{array.shape}".encode())
    digest.update(np.ascontiguousarray(array).tobytes())


def page_digest(digest: hashlib._Hash, page: object, matches: object) -> None:
    """Fold one page's worker output into ``digest``."""
    if not isinstance(page, ExtractedPage):
        digest.update(f"failed:{page}".encode())
        return
    extracted, normalized = page.extracted, page.normalized
    fields = (extracted.text, extracted.title, extracted.chapter_title, extracted.extractor)
    digest.update(json.dumps(fields, ensure_ascii=False).encode())
    digest.update(json.dumps([extracted.metadata, extracted.reading], sort_keys=True).encode())
    digest.update(f"{extracted.prose_chars},{extracted.link_chars},{extracted.located}".encode())
    digest.update(normalized.source.encode("utf-8", "surrogatepass"))
    digest.update(normalized.chars.encode("utf-8", "surrogatepass"))
    for array in (
        normalized.char_pos,
        normalized.tokens,
        normalized.token_start,
        normalized.token_end,
        page.votes.ones,
    ):
        _array(digest, array)
    digest.update(f"{page.votes.total!r},{page.simhash},{page.content_hash}".encode())
    digest.update(json.dumps(matches, sort_keys=True, ensure_ascii=False).encode())


def digest_of(detector: Detector, pages: list[Page]) -> dict[str, object]:
    """The SHA-256 of the pages' worker output, and how many pages matched a master."""
    digest, matched, locators = hashlib.sha256(), 0, BodyLocators()
    for batch in batches(pages):
        extracted = extract_batch(batch, locators)
        for page, matches in zip(extracted, check_batch(detector, extracted), strict=True):
            page_digest(digest, page, matches)
            matched += bool(matches)
    return {"sha256": digest.hexdigest(), "pages": len(pages), "matched": matched}


def warmed_detector(runtime: Runtime) -> Detector:
    """A detector as a worker builds it, warmed up as a worker warms it."""
    from tracker.reading.extract import WARM_UP_TEXT, warm_up

    warm_up()
    detector = MasterLibrary.from_runtime(runtime).detector(runtime.settings)
    detector.check_normalized_many([normalize(WARM_UP_TEXT)], [0], rewrites=False)
    return detector


def time_passes(runtime: Runtime, pages: list[Page], passes: int) -> dict[str, float]:
    """The best pass's CPU milliseconds a page, for extraction and for the check."""
    best: dict[str, float] = {}
    for _ in range(passes):
        detector, locators = warmed_detector(runtime), BodyLocators()
        extract_cpu = check_cpu = 0.0
        for batch in batches(pages):
            start = time.process_time()
            extracted = extract_batch(batch, locators)
            middle = time.process_time()
            check_batch(detector, extracted)
            extract_cpu += middle - start
            check_cpu += time.process_time() - middle
        result = {
            "extract": 1000 * extract_cpu / len(pages),
            "check": 1000 * check_cpu / len(pages),
        }
        result["worker"] = result["extract"] + result["check"]
        if not best or result["worker"] < best["worker"]:
            best = result
    return {k: round(v, 3) for k, v in best.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=200, help="bench site pages")
    parser.add_argument("--digest", action="store_true", help="the output's digests")
    parser.add_argument("--time", action="store_true", help="CPU ms a page")
    parser.add_argument("--passes", type=int, default=5)
    args = parser.parse_args(argv)
    if not (args.digest or args.time):
        parser.error("--digest and/or --time")
    with tempfile.TemporaryDirectory(prefix="tracker-bench-worker-") as tmp:
        tmp_path = Path(tmp)
        bench, bench_masters = bench_pages(tmp_path / "site", args.pages)
        real, real_masters = real_pages()
        settings = replace(Settings.load(), mongo_url=None, redis_url=None)
        settings = replace(settings, data_dir=tmp_path / "data")
        os.environ["TRACKER_DATA_DIR"] = str(settings.data_dir)  # Settings.load() elsewhere
        runtime = Runtime(settings)
        try:
            MasterLibrary.from_runtime(runtime).ingest([*bench_masters, *real_masters])
            out: dict[str, object] = {"load": os.getloadavg()[0]}
            if args.digest:
                detector = warmed_detector(runtime)
                out["bench"] = digest_of(detector, bench)
                out["real"] = digest_of(detector, real)
            if args.time:
                out["cpu_ms_a_page"] = time_passes(runtime, bench, args.passes)
            out["load_after"] = os.getloadavg()[0]
            print(json.dumps(out))
        finally:
            runtime.close()
            services.stop(settings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
