"""Discovery through a search engine (issue 27): queries per work, pages fetched per copy found,
and the time per work, against a known-site crawl of the same sites in the same run.

A library of ``--works`` works of ``--chapters`` chapters (distinct prose drawn from the words
of the demo's texts) is ingested; ``--sites`` 笔趣阁-style pirate sites on 127.0.0.1 each copy
every work (a home page, a catalogue a work, chapter pages linking 上一章 / 目录 / 下一章, and an
innocent announcement a work); a licensed site copies them too, and an unrelated site holds
innocent pages. A local engine answering SearXNG's JSON API plays a search engine: a title
query (the work's name and a pirate word) returns the work's catalogue on one pirate site, a
chapter-title or phrase query that chapter's page on another, and each answer the licensed
copy and two unrelated pages, as real engines mix them.

Two variants, each into a fresh database:

* ``discovery``: ``tracker discover``'s run (:func:`tracker.discovery.run.discover`) with the
  defaults but ``discover_queries_per_work`` (``--per-work``);
* ``known sites`` (the baseline): ``scrapy crawl novel`` from each pirate site's home page, as
  if someone had named the sites.

Reported: queries per work, the copies found (of those planted), pages fetched per copy found
(every request the sites received, robots.txt included),
seconds per work (and the share spent searching), the licensed site's requests (must be 0),
innocent pages flagged (must be 0), and the ratios discovery / known sites.

    python -m bench.discovery [--works 4] [--chapters 8] [--sites 2] [--per-work 10] [--out F]
"""

from __future__ import annotations

import argparse
import html
import json
import random
import re
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.crawl_throughput import clean_up  # noqa: E402
from tracker.config import Settings  # noqa: E402
from tracker.crawling.crawl import run_crawl  # noqa: E402
from tracker.demo.searxng import SearchServer  # noqa: E402
from tracker.demo.server import LoopbackServer  # noqa: E402
from tracker.demo.site import _data_path  # noqa: E402
from tracker.discovery.run import discover  # noqa: E402
from tracker.matching.library import MasterLibrary  # noqa: E402
from tracker.model import MasterDocument  # noqa: E402
from tracker.servers.runtime import Runtime  # noqa: E402

AD = "最快更新本书最新章节，请记住本站域名"
NAMES = ("星海", "归途", "青云", "剑录", "长夜", "灯火", "山河", "旧梦",
         "天机", "残卷", "寒江", "孤舟", "风雪", "故人", "烟雨", "楼台")  # fmt: skip


def vocabulary() -> list[str]:
    import jieba

    text = _data_path("红楼梦.txt").read_text("utf-8") + _data_path("innocent.txt").read_text(
        "utf-8"
    )
    words = [w for w in jieba.lcut(text) if re.fullmatch(r"[\u4e00-\u9fff]+", w)]
    return sorted(set(words))


def prose(rng: random.Random, words: list[str], chars: int) -> str:
    """Paragraphs of sentences of random words: text no other work shares."""
    paragraphs, size = [], 0
    while size < chars:
        sentences = []
        for _ in range(rng.randint(2, 4)):
            clauses = ["".join(rng.choices(words, k=rng.randint(3, 7))) for _ in range(2)]
            sentences.append("，".join(clauses) + rng.choice("。！？"))
        paragraph = "".join(sentences)
        paragraphs.append(paragraph)
        size += len(paragraph)
    return "\n".join(paragraphs)


def library(works: int, chapters: int, seed: int = 27) -> dict[str, list[MasterDocument]]:
    rng, words = random.Random(seed), vocabulary()
    found = {}
    for w in range(works):
        name = (
            NAMES[(2 * w) % len(NAMES)]
            + NAMES[(2 * w + 1) % len(NAMES)]
            + ("" if w < 8 else str(w))
        )
        found[name] = [
            MasterDocument(
                f"{name}/{c:04d}", name, f"第{c}章 {''.join(rng.choices(words, k=2))}",
                prose(rng, words, 1500),
            )
            for c in range(1, chapters + 1)
        ]  # fmt: skip
    return found


def page(title: str, body: str) -> bytes:
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"</head><body><div class='nav'><a href='/'>首页</a></div>{body}"
        "<div class='footer'>Copyright 书城</div></body></html>"
    ).encode()


def links(items: list[tuple[str, str]]) -> str:
    return (
        "<ul>" + "".join(f"<li><a href='{h}'>{html.escape(t)}</a></li>" for h, t in items) + "</ul>"
    )


def chapter_body(title: str, text: str, nav: str = "") -> str:
    lines = [AD, *text.splitlines(), AD]
    content = "<br><br>".join(f"&nbsp;&nbsp;{html.escape(line)}" for line in lines)
    return f"<h1>{html.escape(title)}</h1><div id='content'>{content}</div><div>{nav}</div>"


class Site(LoopbackServer):
    """Pages by path on 127.0.0.1, each request counted."""

    def __init__(self, pages: dict[str, bytes]) -> None:
        from http.server import BaseHTTPRequestHandler

        self.pages, self.requests = pages, []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                site.requests.append(self.path)
                body = site.pages.get(self.path)
                self.send_response(200 if body else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                body = body or b"<html><body>Not Found</body></html>"
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(Handler, name="bench-site")


def pirate_pages(works: dict[str, list[MasterDocument]], rng: random.Random) -> dict[str, bytes]:
    pages = {"/": page("首页", links([(f"/b{w}/", name) for w, name in enumerate(works)]))}
    for w, (name, chapters) in enumerate(works.items()):
        base = f"/b{w}/"
        items = [(f"{base}{c}.html", m.title) for c, m in enumerate(chapters, 1)]
        pages[base] = page(f"{name}最新章节", links([*items, (f"{base}notice.html", "公告")]))
        notice = "\n".join(
            "本站所有小说均来自网络，" + "".join(rng.choices("书城阅读更新推荐收藏", k=30))
            for _ in range(6)
        )
        pages[f"{base}notice.html"] = page("公告", chapter_body("本站公告", notice))
        for c, master in enumerate(chapters, 1):
            nav = f"<a href='{base}{c - 1}.html'>上一章</a> " if c > 1 else ""
            nav += f"<a href='{base}'>目录</a>"
            nav += f" <a href='{base}{c + 1}.html'>下一章</a>" if c < len(chapters) else ""
            pages[f"{base}{c}.html"] = page(
                master.title, chapter_body(master.title, master.text, nav)
            )
    return pages


def engine_results(works, pirates, licensed, unrelated):
    """The engine: ``query → result URLs`` (see the module doc)."""
    texts = {m.doc_id: m.text for chapters in works.values() for m in chapters}
    order = list(works)

    def results(query: str) -> list[str]:
        phrase = query.strip('"')
        for w, chapters in enumerate(works.values()):
            for c, master in enumerate(chapters, 1):
                if master.title in query or (
                    query.startswith('"') and phrase in texts[master.doc_id]
                ):
                    site = pirates[(w + c) % len(pirates)]
                    return [
                        f"{site.url}b{w}/{c}.html", f"{licensed.url}b{w}/{c}.html",
                        f"{unrelated.url}n/{w}-{c}.html", f"{unrelated.url}n/{w}.html",
                    ]  # fmt: skip
        for w, name in enumerate(order):
            if query.startswith(name):
                site = pirates[w % len(pirates)]
                return [f"{site.url}b{w}/", f"{licensed.url}b{w}/", f"{unrelated.url}n/{w}.html"]
        return []

    return results


def run(args: argparse.Namespace) -> dict:
    rng = random.Random(7)
    works = library(args.works, args.chapters)
    masters = [m for chapters in works.values() for m in chapters]
    pirates = [Site(pirate_pages(works, rng)) for _ in range(args.sites)]
    licensed = Site(pirate_pages(works, rng))
    unrelated_pages = {}
    words = vocabulary()
    for w in range(args.works):
        unrelated_pages[f"/n/{w}.html"] = page(
            "新闻", chapter_body("新闻", prose(rng, words, 1200))
        )
        for c in range(1, args.chapters + 1):
            body = chapter_body("随笔", prose(rng, words, 1200))
            unrelated_pages[f"/n/{w}-{c}.html"] = page("随笔", body)
    unrelated = Site(unrelated_pages)
    engine = SearchServer(engine_results(works, pirates, licensed, unrelated))
    planted = len(masters) * len(pirates)
    out: dict = {"works": args.works, "chapters": args.chapters, "sites": args.sites,
                 "planted": planted}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="tracker-bench-discovery-") as tmp:
        tmp_path = Path(tmp)
        base = Settings.load()
        if not (base.mongo_url and base.redis_url):
            base = replace(base, data_dir=tmp_path / "data")
        tag = f"bench_discovery_{int(time.time())}"
        try:
            # discovery
            settings = replace(
                base, mongo_db=f"{tag}_d", redis_prefix=f"{tag}:d:", search_url=engine.url,
                licensed_sites=(f"127.0.0.1:{licensed.port}",),
                discover_queries_per_work=args.per_work,
                discover_queries_per_day=max(100, args.per_work * args.works),
            )  # fmt: skip
            runtime = Runtime(settings)
            MasterLibrary.from_runtime(runtime).ingest(masters)
            sites = [*pirates, licensed, unrelated]
            summary = discover(runtime, settings, log_file=tmp_path / "discover.log")
            fetched = sum(len(site.requests) for site in sites)  # robots.txt included
            flagged = _flagged(runtime, pirates, unrelated)
            runtime.close()
            out["discovery"] = {
                "queries": summary.queries,
                "queries_per_work": round(summary.queries / args.works, 2),
                "results": summary.results,
                "checked": summary.checked,
                "skipped_licensed": summary.skipped_licensed,
                "fetched": fetched,
                "copies": flagged["copies"],
                "pages_per_copy": round(fetched / max(1, flagged["copies"]), 2),
                "seconds": summary.seconds,
                "search_seconds": summary.search_seconds,
                "seconds_per_work": round(summary.seconds / args.works, 2),
                "innocent_flagged": flagged["innocent"],
                "wrong_master": flagged["wrong"],
                "licensed_requests": len(licensed.requests),
                "new_sites": len(summary.new_sites),
            }
            print(f"discovery: {out['discovery']}", file=sys.stderr)
            # the baseline: the same sites, named
            settings = replace(base, mongo_db=f"{tag}_k", redis_prefix=f"{tag}:k:")
            runtime = Runtime(settings)
            MasterLibrary.from_runtime(runtime).ingest(masters)
            before = sum(len(site.requests) for site in sites)
            started = time.monotonic()
            for k, site in enumerate(pirates):
                code = run_crawl(
                    "novel", settings, arguments={"start_url": site.url},
                    log_file=tmp_path / f"known-{k}.log", timeout=3600,
                )  # fmt: skip
                if code != 0:
                    raise SystemExit(f"known-site crawl failed (exit {code})")
            seconds = time.monotonic() - started
            fetched = sum(len(site.requests) for site in sites) - before
            flagged = _flagged(runtime, pirates, unrelated)
            runtime.close()
            out["known_sites"] = {
                "fetched": fetched,
                "copies": flagged["copies"],
                "pages_per_copy": round(fetched / max(1, flagged["copies"]), 2),
                "seconds": round(seconds, 3),
                "seconds_per_work": round(seconds / args.works, 2),
                "innocent_flagged": flagged["innocent"],
                "wrong_master": flagged["wrong"],
            }
            print(f"known sites: {out['known_sites']}", file=sys.stderr)
        finally:
            for server in (*pirates, licensed, unrelated, engine):
                server.close()
            clean_up(base, tag)
    d, k = out["discovery"], out["known_sites"]
    out["ratios"] = {
        "pages_per_copy": round(d["pages_per_copy"] / k["pages_per_copy"], 2),
        "seconds_per_work": round(d["seconds_per_work"] / k["seconds_per_work"], 2),
        "copies_found": round(d["copies"] / max(1, k["copies"]), 3),
    }
    return out


def _flagged(runtime: Runtime, pirates: list[Site], unrelated: Site) -> dict[str, int]:
    """Copies found on the pirate sites (pages matching their own chapter), innocent pages
    flagged, and pages flagged with a wrong master."""
    copies = innocent = wrong = 0
    ports = {site.port for site in pirates}
    for doc in runtime.db["pages"].find({"matched_doc_ids.0": {"$exists": True}}):
        url, ids = doc["_id"], doc["matched_doc_ids"]
        found = re.search(r":(\d+)/b(\d+)/(\d+)\.html$", url)
        if not found or int(found[1]) not in ports:
            innocent += 1
            continue
        work, chapter = int(found[2]), int(found[3])
        if all(i.endswith(f"/{chapter:04d}") for i in ids) and len(ids) == 1:
            copies += 1
        else:
            wrong += 1
        del work
    return {"copies": copies, "innocent": innocent, "wrong": wrong}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--works", type=int, default=4)
    parser.add_argument("--chapters", type=int, default=8)
    parser.add_argument("--sites", type=int, default=2, help="pirate sites, each copying all")
    parser.add_argument("--per-work", type=int, default=10, help="discover_queries_per_work")
    parser.add_argument("--out", type=Path, help="also write the results (JSON) to this file")
    args = parser.parse_args(argv)
    out = run(args)
    d, k, r = out["discovery"], out["known_sites"], out["ratios"]
    print(
        f"{args.works} works × {args.chapters} chapters, {args.sites} pirate sites: "
        f"{out['planted']} copies planted"
    )
    print("| variant | queries/work | copies found | pages fetched | pages/copy | s/work | "
          "innocent flagged | wrong master | licensed requests |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| discovery | {d['queries_per_work']} | {d['copies']} | {d['fetched']} | "
          f"{d['pages_per_copy']} | {d['seconds_per_work']} (search {d['search_seconds']} s "
          f"of {d['seconds']}) | {d['innocent_flagged']} | {d['wrong_master']} | "
          f"{d['licensed_requests']} |")  # fmt: skip
    print(f"| known sites (baseline) | - | {k['copies']} | {k['fetched']} | "
          f"{k['pages_per_copy']} | {k['seconds_per_work']} | {k['innocent_flagged']} | "
          f"{k['wrong_master']} | - |")  # fmt: skip
    print(f"| ratio discovery / known | | {r['copies_found']} | | {r['pages_per_copy']} | "
          f"{r['seconds_per_work']} | | | |")  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps(out, ensure_ascii=False, indent=1), "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
