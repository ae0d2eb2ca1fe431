"""Rendered crawl throughput and memory: a site whose every chapter is loaded by script, read
through Debian's Chromium, against the same site served plainly, in the same run.

The bench site of :mod:`bench.crawl_throughput` (``--pages`` chapter pages, half copying the
demo's master sample, half innocent) is written twice: as it is (*plain*), and with every
chapter's text taken out of its HTML (*scripted*): half the pages fetch it as JSON
(``/api/N.json``, an XHR), half carry it as ``document.write(atob(…))``; the chapter lists are
the same. Each is crawled by one ``scrapy crawl novel`` process into a fresh database, with
AutoThrottle off, 16 requests in flight and the default ``TRACKER_RENDER_PAGES`` (2 pages open
in the browser) unless ``--render-pages``. On the scripted site the crawl learns after three
pages that the site needs rendering, and renders the rest at once.

Reported per crawl: pages/s (responses over the spider's open time, from ``crawl_runs``),
rendered pages/s, pages matched, innocent pages matched, and memory: the resident and the
proportional set size (PSS: shared pages divided among the processes sharing them) of the crawl
process, its extraction worker and the browser (Playwright's driver and every Chromium
process), sampled from ``/proc`` every 0.25 s: their peak, and the total at each quarter of the
crawl (a crawl whose memory grows with its pages would show it there).

    python -m bench.rendering --pages 1000 [--rounds 1] [--render-pages 2] [--out F]

Needs Chromium (``apt install chromium``, or ``TRACKER_BROWSER_PATH``). Heavy: run it under
``flock /work/notes/bench.lock`` on a shared machine.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

from bench.crawl_throughput import build_site, process_stat, run_variant
from tracker.config import Settings
from tracker.demo.site import master_documents, serve
from tracker.matching.library import MasterLibrary
from tracker.servers import services
from tracker.servers.runtime import Runtime

_CONTENT = re.compile(r'<div id="content">(.*?)</div>', re.S)


def script_site(root: Path) -> int:
    """Rewrite the chapter pages under ``root/p`` so that their text is loaded by script;
    returns how many were rewritten."""
    (root / "api").mkdir()
    count = 0
    for page in sorted((root / "p").glob("*.html")):
        html = page.read_text(encoding="utf-8")
        found = _CONTENT.search(html)
        if found is None:
            continue
        n = int(page.stem)
        body = found[1]
        if n % 2 == 0:  # an XHR for JSON
            (root / "api" / f"{n}.json").write_text(
                json.dumps({"html": body}, ensure_ascii=False), encoding="utf-8"
            )
            shell = (
                '<div id="content">章节内容加载中…</div><script>'
                f"fetch('/api/{n}.json').then(r => r.json()).then(d => "
                "{document.getElementById('content').innerHTML = d.html;});</script>"
            )
        else:  # document.write(atob(...)), decoded as UTF-8
            encoded = base64.b64encode(body.encode()).decode()
            shell = (
                '<div id="content"><script>document.write(new TextDecoder().decode('
                f"Uint8Array.from(atob('{encoded}'), c => c.charCodeAt(0))));</script></div>"
            )
        page.write_text(html[: found.start()] + shell + html[found.end() :], encoding="utf-8")
        count += 1
    return count


def _pss(pid: int) -> int:
    """Proportional set size of ``pid`` in bytes (0 when unreadable)."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


class MemorySampler:
    """RSS and PSS of the crawl process (this process's child), the Python processes below it
    (the extraction worker and its multiprocessing helpers) and the rest below it (Playwright's
    driver and Chromium's processes), every ``interval`` seconds."""

    def __init__(self, interval: float = 0.25) -> None:
        self.interval = interval
        self.samples: list[tuple[float, dict[str, tuple[int, int]]]] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._done.is_set():
            self.samples.append((time.time(), self._read()))
            time.sleep(self.interval)

    def _read(self) -> dict[str, tuple[int, int]]:
        stats = {
            int(p): st for p in os.listdir("/proc") if p.isdigit() and (st := process_stat(int(p)))
        }
        children: dict[int, list[int]] = {}
        for pid, (parent, _, _) in stats.items():
            children.setdefault(parent, []).append(pid)
        roles: dict[int, str] = {}
        for crawl in children.get(os.getpid(), []):
            if b"scrapy" not in _cmdline(crawl):  # the embedded servers, started from here
                continue
            roles[crawl] = "crawl process"
            below = list(children.get(crawl, []))
            while below:
                pid = below.pop()
                browser = roles.get(stats[pid][0]) == "browser" or not _comm(pid).startswith(
                    "python"
                )  # Playwright's driver (node) and Chromium's processes, or the workers
                roles[pid] = "browser" if browser else "extraction worker"
                below += children.get(pid, [])
        totals: dict[str, tuple[int, int]] = {}
        for pid, role in roles.items():
            rss, pss = totals.get(role, (0, 0))
            totals[role] = (rss + stats[pid][2], pss + _pss(pid))
        return totals

    def between(self, start: float, end: float) -> dict[str, object]:
        """Peaks and quarter-way totals (MB) within the crawl's open time."""
        inside = [(t, v) for t, v in self.samples if start <= t <= end] or self.samples[-1:]
        roles = sorted({role for _, v in inside for role in v})
        mb = 1024 * 1024

        def total(values: dict[str, tuple[int, int]], k: int) -> float:
            return round(sum(v[k] for v in values.values()) / mb, 1)

        quarters = [inside[min(len(inside) - 1, len(inside) * q // 4)][1] for q in (1, 2, 3, 4)]
        return {
            "peak_rss_mb": {
                role: round(max(v.get(role, (0, 0))[0] for _, v in inside) / mb, 1)
                for role in roles
            },
            "peak_pss_mb": {
                role: round(max(v.get(role, (0, 0))[1] for _, v in inside) / mb, 1)
                for role in roles
            },
            "peak_total_rss_mb": max(total(v, 0) for _, v in inside),
            "peak_total_pss_mb": max(total(v, 1) for _, v in inside),
            "quarter_total_pss_mb": [total(v, 1) for v in quarters],
        }


def crawl(name: str, settings: Settings, url: str, extra: dict, logs: Path) -> dict[str, object]:
    """:func:`bench.crawl_throughput.run_variant`'s figures of a crawl of ``url``, with the
    pages it rendered and the memory of its processes."""
    with MemorySampler() as sampler:
        result = run_variant(name, settings, url, extra, logs)
    run = Runtime(settings).db["crawl_runs"].find_one(sort=[("finished_at", -1)])
    stats = run["stats"]
    start, end = result.pop("open")
    rendered = int(stats.get("tracker__render__pages", 0))
    return {
        **{key: result[key] for key in ("pages", "seconds", "pages_per_second", "stored")},
        "rendered": rendered,
        "rendered_per_second": round(rendered / result["seconds"], 2),
        "matched": result["matched"],
        "innocent_matched": result["innocent_matched"],
        "unread": run.get("unread", {}),
        "render_wait_expired": int(stats.get("tracker__render__wait_expired", 0)),
        "contexts_closed": int(stats.get("tracker__render__contexts_closed", 0)),
        **sampler.between(start, end),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--render-pages", type=int, default=2, help="TRACKER_RENDER_PAGES")
    parser.add_argument("--out", type=Path, help="also write the results (JSON) to this file")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="tracker-bench-render-") as tmp:
        tmp_path = Path(tmp)
        base = replace(Settings.load(), data_dir=tmp_path / "data", mongo_url=None, redis_url=None)
        copies = build_site(tmp_path / "plain", args.pages)
        build_site(tmp_path / "scripted", args.pages)
        scripted = script_site(tmp_path / "scripted")
        runs: dict[str, list[dict]] = {"plain": [], "scripted": []}
        load = [os.getloadavg()[0]]
        with serve(tmp_path / "plain") as plain, serve(tmp_path / "scripted") as script:
            for round_no in range(args.rounds):
                for name, site in (("plain", plain), ("scripted", script)):
                    db = f"bench_render_{round_no}_{name}"
                    settings = replace(base, mongo_db=db, redis_prefix=f"{db}:")
                    MasterLibrary.from_runtime(Runtime(settings)).ingest(master_documents())
                    extra = {"TRACKER_RENDER_PAGES": args.render_pages}
                    result = crawl(f"{name}-{round_no}", settings, site.url, extra, tmp_path)
                    runs[name].append(result)
                    print(f"{name:>9}: {json.dumps(result)}", file=sys.stderr)
                load.append(os.getloadavg()[0])
        services.stop(base)

    print(
        f"{args.rounds} round(s), {args.pages} chapter pages ({copies} copies, {scripted} "
        f"loaded by script), {args.render_pages} pages open in the browser; load average "
        "(1 min) before and after each round: " + ", ".join(f"{x:.1f}" for x in load)
    )
    print(
        "| site | pages | s | pages/s | vs plain | rendered | rendered/s | matched "
        "| innocent matched | peak PSS MB (crawl, extraction, browser) | peak total RSS MB "
        "| total PSS MB at 1/4, 1/2, 3/4, end |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|")
    plain_rates = [r["pages_per_second"] for r in runs["plain"]]
    summary: dict[str, object] = {"pages": args.pages, "copies": copies, "load": load}
    for name, rs in runs.items():
        ratios = [r["pages_per_second"] / b for r, b in zip(rs, plain_rates, strict=True)]
        r = rs[len(rs) // 2] if len(rs) % 2 else rs[0]
        pss = r["peak_pss_mb"]
        print(
            f"| {name} | {r['pages']} | {r['seconds']} | {r['pages_per_second']} | "
            f"{statistics.median(ratios):.2f}× | {r['rendered']} | {r['rendered_per_second']} | "
            f"{r['matched']} | {r['innocent_matched']} | "
            f"{pss.get('crawl process', 0)}, {pss.get('extraction worker', 0)}, "
            f"{pss.get('browser', 0)} | {r['peak_total_rss_mb']} | "
            + ", ".join(str(x) for x in r["quarter_total_pss_mb"])
            + " |"
        )
        summary[name] = rs
    print(json.dumps(summary))
    if args.out:
        args.out.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
