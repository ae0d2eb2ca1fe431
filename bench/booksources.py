"""Book sources (issue 35): chapters found per source run, on sites reachable only through
their search box, against a crawl of the same sites from their home pages in the same run.

A library of ``--works`` works of ``--chapters`` chapters (distinct prose drawn from the words
of the demo's texts, :func:`bench.discovery.library`) is ingested. Two local sites copy every
work, with an innocent book beside each: a GBK 笔趣阁-style HTML site whose books are reached
only through a POSTed search form, each chapter over two pages, and an app's JSON API (search,
book, a table of contents in pages, chapters); the site builders are the tests'
(``tests/booksource_sites.py``). A Legado source file reads them: one JSOUP source, one
JSONPath source, one that needs a script (not run).

Two variants, each into a fresh database:

* ``book sources``: ``tracker discover``'s run with no search engine
  (:func:`tracker.discovery.run.discover`), every runnable source for every work;
* ``home pages`` (the baseline): ``scrapy crawl novel`` from each site's home page, as if
  someone had named the sites.

Reported per source: runs (a search of one work), chapters listed and read, copies found,
chapters per run, requests the site received per copy, seconds per run; innocent pages flagged
and wrong master ids (both must be 0); the copies found by the baseline.

    python -m bench.booksources [--works 4] [--chapters 20] [--out F]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.crawl_throughput import clean_up  # noqa: E402
from bench.discovery import library  # noqa: E402
from bench.output import write_result  # noqa: E402
from tests.booksource_sites import (  # noqa: E402
    html_site,
    json_site,
    json_source,
    jsoup_source,
    script_source,
)
from tracker.booksources.source import read_sources  # noqa: E402
from tracker.config import Settings  # noqa: E402
from tracker.crawling.crawl import run_crawl  # noqa: E402
from tracker.discovery.run import discover  # noqa: E402
from tracker.matching.library import MasterLibrary  # noqa: E402
from tracker.servers.runtime import Runtime  # noqa: E402
from tracker.stores.book_sources import BookSourceStore  # noqa: E402
from tracker.stores.discovery import SiteRegistry  # noqa: E402


def flagged(runtime: Runtime, expected: dict[str, str]) -> dict[str, int]:
    """Copies found (pages flagged with their own chapter), innocent pages flagged and pages
    flagged with a wrong master, against ``expected`` (URL -> master id)."""
    copies = innocent = wrong = 0
    for doc in runtime.db["pages"].find({"matched_doc_ids.0": {"$exists": True}}):
        want = expected.get(doc["_id"])
        if want is None:
            innocent += 1
        elif doc["matched_doc_ids"] == [want]:
            copies += 1
        else:
            wrong += 1
    return {"copies": copies, "innocent": innocent, "wrong": wrong}


def run(args: argparse.Namespace) -> dict:
    works = library(args.works, args.chapters)
    masters = [m for chapters in works.values() for m in chapters]
    books = {
        name: [(m.title or f"第{k}章", m.text) for k, m in enumerate(chapters, 1)]
        for name, chapters in works.items()
    }
    reading = html_site({str(1000 + i): (name, books[name]) for i, name in enumerate(books)})
    api = json_site({f"b{i}": (name, books[name]) for i, name in enumerate(books)}, per_page=10)
    expected = {}
    for i, chapters in enumerate(works.values()):
        for k, master in enumerate(chapters, 1):
            expected[f"{reading.url}book/{1000 + i}/{k}.html"] = master.doc_id
            expected[f"{api.url}api/content?id=b{i}&cid={k}"] = master.doc_id
    sources = read_sources(
        json.dumps([jsoup_source(reading), json_source(api), script_source()], ensure_ascii=False)
    ).sources
    out: dict = {"works": args.works, "chapters": args.chapters, "planted": len(expected)}
    with tempfile.TemporaryDirectory(prefix="tracker-bench-booksources-") as tmp:
        tmp_path = Path(tmp)
        base = Settings.load()
        if not (base.mongo_url and base.redis_url):
            base = replace(base, data_dir=tmp_path / "data")
        tag = f"bench_booksources_{int(time.time())}"
        try:
            settings = replace(
                base, mongo_db=f"{tag}_s", redis_prefix=f"{tag}:s:", search_url="",
                discover_queries_per_day=max(100, 2 * args.works),
            )  # fmt: skip
            runtime = Runtime(settings)
            MasterLibrary.from_runtime(runtime).ingest(masters)
            store, registry = BookSourceStore(runtime.db), SiteRegistry(runtime.db)
            moment = datetime.now(UTC)
            for source in sources:
                store.save(source.summary(), source.raw, "bench", moment)
                registry.named(source.host, source.name, moment)
            summary = discover(runtime, settings, log_file=tmp_path / "discover.log")
            found = flagged(runtime, expected)
            runtime.close()
            ran = summary.book_sources
            out["book_sources"] = {
                "seconds": summary.seconds,
                "runs": ran["runs"],
                "copies": found["copies"],
                "innocent_flagged": found["innocent"],
                "wrong_master": found["wrong"],
                "by_source": {},
            }
            for site, name in ((reading, "测试书城"), (api, "某某阅读API")):
                tally = ran["by_source"][name]
                runs = max(1, tally["runs"])
                out["book_sources"]["by_source"][name] = {
                    "runs": tally["runs"],
                    "chapters_listed": tally["chapters"],
                    "chapters_read": tally["read"],
                    "copies": tally["copies"],
                    "chapters_per_run": round(tally["read"] / runs, 2),
                    "requests": len(site.requests),
                    "requests_per_copy": round(len(site.requests) / max(1, tally["copies"]), 2),
                }
            out["book_sources"]["seconds_per_run"] = round(summary.seconds / max(1, ran["runs"]), 3)
            print(f"book sources: {out['book_sources']}", file=sys.stderr)

            settings = replace(base, mongo_db=f"{tag}_h", redis_prefix=f"{tag}:h:")
            runtime = Runtime(settings)
            MasterLibrary.from_runtime(runtime).ingest(masters)
            before = len(reading.requests) + len(api.requests)
            started = time.monotonic()
            for k, site in enumerate((reading, api)):
                run_crawl(
                    "novel", settings, arguments={"start_url": site.url},
                    log_file=tmp_path / f"home-{k}.log", timeout=3600,
                )  # fmt: skip
            found = flagged(runtime, expected)
            runtime.close()
            out["home_pages"] = {
                "seconds": round(time.monotonic() - started, 3),
                "requests": len(reading.requests) + len(api.requests) - before,
                "copies": found["copies"],
                "innocent_flagged": found["innocent"],
            }
        finally:
            reading.close()
            api.close()
            clean_up(base, tag)
    return out


def markdown(out: dict) -> str:
    s = out["book_sources"]
    lines = [
        f"{out['works']} works × {out['chapters']} chapters on two search-only sites: "
        f"{out['planted']} copies planted",
        "",
        "| source | runs | chapters listed | chapters read | copies | chapters/run | "
        "requests/copy |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, t in s["by_source"].items():
        lines.append(
            f"| {name} | {t['runs']} | {t['chapters_listed']} | {t['chapters_read']} | "
            f"{t['copies']} | {t['chapters_per_run']} | {t['requests_per_copy']} |"
        )
    h = out["home_pages"]
    lines += [
        "",
        f"Book sources: {s['copies']}/{out['planted']} copies in {s['seconds']} s "
        f"({s['seconds_per_run']} s a run), {s['innocent_flagged']} innocent pages, "
        f"{s['wrong_master']} wrong ids. Crawling the same sites from their home pages: "
        f"{h['copies']} copies, {h['requests']} requests, {h['seconds']} s.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--works", type=int, default=4)
    parser.add_argument("--chapters", type=int, default=20)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "booksources.json")
    args = parser.parse_args(argv)
    out = run(args)
    write_result(args.out, out, markdown(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
