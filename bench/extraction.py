"""Body extraction and the article/list decision on real saved pages.

    python -m bench.extraction            # the table on stdout
    python -m bench.extraction --markdown # the same as Markdown, for bench/README.md

The pages are the real-page fixtures (``tests/fixtures/pages``, see its SOURCES.md): article
pages of Chinese news portals, blogs, government and WeChat pages, and list pages. Each page
goes through what a crawl does to it (:func:`tracker.reading.extract.extract`, then the
ExtractPipeline's decision: list page, too little text, or kept as an article) and is scored against
its expected body:

* **recall**: the share of the expected body's character bigrams (after normalisation:
  Simplified, letters and digits) found in the extracted text, as multisets;
* **precision**: the share of the extracted text's bigrams found in the expected body;
* **with / without**: sentences of the body found, link texts from outside it kept out.

A page dropped by the crawl scores recall 0. Sites with several pages show their mean. The
decision is also scored as the crawl made it before (a page whose whole text was more than half
link text was dropped as a list page), on the same pages.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from scrapy.http import HtmlResponse

from spiders.base import decode_page, link_text
from tracker.reading.extract import Extracted, extract
from tracker.text.normalize import normalize

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "pages"
MIN_TEXT_CHARS = 80  # the crawl's TRACKER_MIN_TEXT_CHARS
OLD_MAX_LINK_TEXT_SHARE = 0.5  # the page-level cut-off the crawl used before


@dataclass
class Result:
    name: str
    site: str
    kind: str
    decision: str  # "article", "list" or "no text"
    old_decision: str  # "article" or "list" (the whole-page link share rule)
    recall: float | None
    precision: float | None
    with_found: int
    with_total: int
    without_kept_out: int
    without_total: int
    extractor: str
    seconds: float


def bigrams(text: str) -> Counter[str]:
    chars = normalize(text, strip_boilerplate=False).chars
    return Counter(chars[i : i + 2] for i in range(len(chars) - 1))


def decide(extracted: Extracted) -> str:
    """The ExtractPipeline's decision (pipelines/extract.py)."""
    if extracted.is_list:
        return "list"
    if len(normalize(extracted.text).chars) < MIN_TEXT_CHARS:
        return "no text"
    return "article"


def load() -> list[dict]:
    return json.loads((FIXTURES / "manifest.json").read_text(encoding="utf-8"))["pages"]


def page_bytes(entry: dict) -> bytes:
    """The saved page as served: its original bytes and encoding."""
    return gzip.decompress((FIXTURES / entry["file"]).read_bytes())


def measure(entry: dict) -> Result:
    html = decode_page(page_bytes(entry), "text/html").html
    url = entry.get("url") or f"http://{entry['site']}/{entry['name']}.html"
    response = HtmlResponse(url, body=html.encode("utf-8"), encoding="utf-8")
    total, links = link_text(response)
    old = "list" if links > OLD_MAX_LINK_TEXT_SHARE * total else "article"
    start = time.perf_counter()
    extracted = extract(html, url)
    seconds = time.perf_counter() - start
    decision = decide(extracted)
    text = extracted.text if decision == "article" else ""
    recall = precision = None
    if entry.get("expected"):
        expected = bigrams((FIXTURES / entry["expected"]).read_text(encoding="utf-8"))
        got = bigrams(text)
        common = sum((expected & got).values())
        recall = common / max(1, sum(expected.values()))
        precision = common / sum(got.values()) if got else 0.0
    flat = "".join(text.split())
    with_ = entry.get("with", [])
    without = entry.get("without", [])
    return Result(
        entry["name"],
        entry["site"],
        entry["kind"],
        decision,
        old,
        recall,
        precision,
        sum("".join(s.split()) in flat for s in with_),
        len(with_),
        sum("".join(s.split()) not in flat for s in without),
        len(without),
        extracted.extractor,
        seconds,
    )


def mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def report(results: list[Result], markdown: bool) -> str:
    by_site: dict[str, list[Result]] = defaultdict(list)
    for r in results:
        if r.kind == "article":
            by_site[r.site].append(r)
    rows = [
        "| site | pages | kept as articles | kept before | recall | precision | with | without |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for site, rs in sorted(by_site.items()):
        rows.append(
            f"| {site} | {len(rs)} | {sum(r.decision == 'article' for r in rs)} "
            f"| {sum(r.old_decision == 'article' for r in rs)} "
            f"| {fmt(mean([r.recall for r in rs if r.recall is not None]))} "
            f"| {fmt(mean([r.precision for r in rs if r.precision is not None]))} "
            f"| {sum(r.with_found for r in rs)}/{sum(r.with_total for r in rs)} "
            f"| {sum(r.without_kept_out for r in rs)}/{sum(r.without_total for r in rs)} |"
        )
    articles = [r for r in results if r.kind == "article"]
    lists = [r for r in results if r.kind == "list"]
    scored = [r for r in articles if r.recall is not None]
    rows.append(
        f"| **all** | {len(articles)} | {sum(r.decision == 'article' for r in articles)} "
        f"| {sum(r.old_decision == 'article' for r in articles)} "
        f"| **{fmt(mean([r.recall for r in scored]))}** "
        f"| **{fmt(mean([r.precision for r in scored]))}** "
        f"| {sum(r.with_found for r in articles)}/{sum(r.with_total for r in articles)} "
        f"| {sum(r.without_kept_out for r in articles)}/{sum(r.without_total for r in articles)} |"
    )
    recalls = sorted(r.recall for r in scored)
    correct = sum(r.decision == "article" for r in articles) + sum(
        r.decision != "article" for r in lists
    )
    correct_old = sum(r.old_decision == "article" for r in articles) + sum(
        r.old_decision == "list" for r in lists
    )
    n = len(articles) + len(lists)
    lines = [
        *rows,
        "",
        f"Article/list decision: {correct}/{n} right ({correct / n:.1%}); "
        f"list pages skipped {sum(r.decision != 'article' for r in lists)}/{len(lists)}; "
        f"the whole-page link-share rule it replaces: {correct_old}/{n} "
        f"({correct_old / n:.1%}), list pages {sum(r.old_decision == 'list' for r in lists)}"
        f"/{len(lists)}.",
        f"Body recall over {len(scored)} pages with an expected body: median "
        f"{statistics.median(recalls):.3f}, lowest {recalls[0]:.3f}; pages under 0.8: "
        + (
            ", ".join(
                f"{r.name} ({r.recall:.2f}, {r.decision}, {r.extractor})"
                for r in sorted(scored, key=lambda r: r.recall)
                if r.recall < 0.8
            )
            or "none"
        )
        + ".",
        f"Extraction time per page: median "
        f"{statistics.median(r.seconds for r in results) * 1000:.0f} ms, "
        f"total {sum(r.seconds for r in results):.1f} s for {len(results)} pages.",
    ]
    wrong = [r for r in results if (r.kind == "article") != (r.decision == "article")]
    if wrong:
        lines.append(
            "Decided wrong: "
            + ", ".join(f"{r.name} ({r.kind} taken as {r.decision})" for r in wrong)
            + "."
        )
    text = "\n".join(lines)
    return text if markdown else text.replace("**", "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", action="store_true", help="print Markdown")
    args = parser.parse_args()
    results = [measure(entry) for entry in load()]
    print(report(results, args.markdown))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
