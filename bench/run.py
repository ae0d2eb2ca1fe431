"""One command for the whole benchmark of issue 3: detection quality and speed of the tracker and
of three baselines (classic SimHash, MinHashLSH, the naive containment detector), in the same
run, on the same masters and cases.

    python bench/run.py --quick                  # ~1–2 minutes
    python bench/run.py                          # full
    python bench/run.py --scale 100000           # + 100,000 masters for latency and memory
    python bench/run.py --quick --methods tracker --kinds typos_15,all_at_once --show-misses 5

Prints the markdown tables and writes them to ``--out`` (default bench/results/latest.md, also
copied to bench/results/<mode>.md), with a JSON summary next to it (for bench/plot.py) and one
JSON line per case (``*-cases.jsonl``: expected and found ids per method, the tracker's scores).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import shutil
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before numpy: one core, so "per core" figures are honest
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import report  # noqa: E402
from bench.baselines import BASELINES, Baseline, NaiveContainment  # noqa: E402
from bench.books import book_cases, check_books  # noqa: E402
from bench.corpus import Corpus, default_corpus_dir, load  # noqa: E402
from bench.engine import Engine  # noqa: E402
from bench.report import CHAPTER_CHARS, METHODS, Outcome  # noqa: E402
from bench.scale import sentence_pool, synthetic_chapters  # noqa: E402
from bench.simulator import CASE_TYPE, CASE_TYPES, INNOCENT, Case, Simulator  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
RELATED_CHARS = 100  # masters sharing a passage this long may be reported for each other
# cases per disguise, per innocent kind, characters for the throughput measurement, lines for
# `check --jsonl` (enough that the half not subtracted outweighs a run's ±0.3 s of noise)
MODES = {
    "quick": (10, 20, 600_000, 100),
    "full": (100, 200, None, 600),
}


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sample (~1–2 minutes)")
    p.add_argument("--n", type=int, help="cases per disguise (quick 10, full 100)")
    p.add_argument("--n-innocent", type=int, help="texts per innocent kind (quick 20, full 200)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--out",
        type=Path,
        help="default bench/results/latest.md (partial.md with --kinds or fewer --methods)",
    )
    p.add_argument("--corpus", type=Path, default=None, help="default: ../shared/corpus")
    p.add_argument("--data-dir", type=Path, help="reuse this data dir (default: a fresh temp dir)")
    p.add_argument("--mongo-url", help="use this MongoDB instead of the embedded SecantusDB")
    p.add_argument("--redis-url", help="use this Redis instead of the embedded valkey")
    p.add_argument(
        "--methods", default=",".join(METHODS), help=f"comma-separated subset of {METHODS}"
    )
    p.add_argument("--kinds", help="comma-separated case types (default: all)")
    p.add_argument(
        "--show-misses", type=int, default=0, metavar="N", help="print N misses per case type"
    )
    p.add_argument("--no-cli", action="store_true", help="skip the runs of `tracker check`")
    p.add_argument("--no-books", action="store_true", help="skip the whole books (as --kinds does)")
    p.add_argument("--scale", type=int, default=0, metavar="MASTERS", help="e.g. 100000")
    p.add_argument("--scale-chars", type=int, default=3000, help="characters per synthetic master")
    p.add_argument("--scale-cases", type=int, default=200, help="cases re-checked at scale")
    p.add_argument(
        "--render",
        type=Path,
        metavar="JSON",
        help="only write the tables again from a run's JSON (e.g. after a change of layout)",
    )
    args = p.parse_args(argv)
    args.mode = "quick" if args.quick else "full"
    n, n_innocent, args.fp_chars, args.cli_lines = MODES[args.mode]
    args.n = args.n or n
    args.n_innocent = args.n_innocent or n_innocent
    args.methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = set(args.methods) - set(METHODS)
    if unknown or "tracker" not in args.methods:
        p.error(f"--methods: unknown {sorted(unknown)}" if unknown else "--methods needs tracker")
    args.methods = [m for m in METHODS if m in args.methods]  # table order
    args.kinds = [k.strip() for k in args.kinds.split(",")] if args.kinds else None
    if args.kinds and set(args.kinds) - set(CASE_TYPE):
        p.error(f"--kinds: unknown {sorted(set(args.kinds) - set(CASE_TYPE))}")
    args.partial = bool(args.kinds) or len(args.methods) < len(METHODS)
    args.books = not (args.no_books or args.kinds)
    args.out = args.out or RESULTS / ("partial.md" if args.partial else "latest.md")
    return args


def throughput(fingerprint_batch, texts: list[str], batch: int = 1, repeats: int = 3) -> float:
    """Characters fingerprinted per CPU-second of this (single-threaded) process, the texts
    handed over ``batch`` at a time: the best of ``repeats`` passes, as ``timeit`` advises on a
    machine shared with other work (a slower pass measures the neighbours, not the code)."""
    fingerprint_batch(texts[:1])  # tables, dictionaries
    batches = [texts[i : i + batch] for i in range(0, len(texts), batch)]
    chars = sum(len(t) for t in texts)
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for group in batches:
            fingerprint_batch(group)
        best = min(best, time.process_time() - start)
    return chars / max(best, 1e-9)


def one_by_one(fingerprint):
    return lambda texts: [fingerprint(text) for text in texts]


def sample_texts(corpus: Corpus, chars: int | None, seed: int) -> list[str]:
    texts = [d.text for d in corpus.masters]
    if chars is None:
        return texts
    random.Random(f"{seed}:throughput").shuffle(texts)
    out, total = [], 0
    for t in texts:
        if total >= chars:
            break
        out.append(t)
        total += len(t)
    return out


def run_cases(
    cases: list[Case],
    engine: Engine,
    baselines: dict[str, Baseline],
    related: dict[str, set[str]] | None = None,
) -> list[Outcome]:
    """Every case checked by every method, each method in a pass of its own: interleaving
    them case by case let each method evict the others' tables from the CPU caches between
    two of its checks (it added ~2 ms to the tracker's p50 in a quick run)."""
    related = related or {}
    outcomes = []
    for case in cases:
        tolerated = {r for e in case.expected for r in related.get(e, ())} - set(case.expected)
        outcomes.append(
            Outcome(
                case.kind, case.case_id, case.expected, len(case.text), case.note, tuple(tolerated)
            )
        )
    for name, check in [("tracker", engine.check), *((n, b.check) for n, b in baselines.items())]:
        start = time.perf_counter()
        for i, (case, o) in enumerate(zip(cases, outcomes, strict=True), start=1):
            t = time.perf_counter()
            try:
                found = check(case.text)
            except Exception as exc:  # one failing case must not end a long run
                found = []
                o.errors[name] = f"{type(exc).__name__}: {exc}"
                log(f"  {case.case_id}: {name} failed: {o.errors[name]}")
            o.seconds[name] = time.perf_counter() - t
            if name == "tracker":
                o.matches = found
                o.found[name] = [m["doc_id"] for m in found]
            else:
                o.found[name] = found
            if i % 500 == 0 or i == len(cases):
                log(f"  {name}: {i}/{len(cases)} cases, {time.perf_counter() - start:.0f} s")
    return outcomes


def chapter_sized(cases: list[Case]) -> list[Case]:
    lo, hi = CHAPTER_CHARS
    return [c for c in cases if lo <= len(c.text) <= hi]


def run_scale(
    args, engine: Engine, corpus: Corpus, cases: list[Case], related: dict[str, set[str]]
) -> dict:
    start = time.perf_counter()
    existing = engine.library.store.count()
    synthetic = max(0, args.scale - existing)
    log(f"scale: building the sentence pool, then {synthetic:,} synthetic masters")
    pool = sentence_pool(d.text for d in corpus.masters)
    # Made before the clock starts: making one takes ~0.7 ms, half as long as ingesting it.
    docs = list(synthetic_chapters(synthetic, pool, args.seed, args.scale_chars))
    done = 0

    def progress(docs):
        nonlocal done
        for doc in docs:
            done += 1
            if done % 10_000 == 0:
                log(f"  {done:,}/{synthetic:,} synthetic masters ingested")
            yield doc

    stats = engine.ingest(progress(docs))
    del docs
    gc.collect()
    gc.freeze()
    masters = engine.library.store.count()
    disguised = [c for c in chapter_sized(cases) if CASE_TYPE[c.kind].group != INNOCENT]
    chosen = random.Random(f"{args.seed}:scale").sample(
        disguised, min(args.scale_cases, len(disguised))
    )
    log(f"scale: re-checking {len(chosen)} chapter-sized cases")
    outcomes = run_cases(chosen, engine, {}, related)
    hits = sum(o.hits("tracker") for o in outcomes)
    expected = sum(len(o.expected) for o in outcomes)
    result = {
        "masters": masters,
        "synthetic": synthetic,
        "ingest_rate": stats.rate,
        "redis_bytes_per_master": (engine.used_memory() - engine.redis_baseline) / masters,
        "latency_ms": report.latency_ms(outcomes, "tracker"),
        "recall": hits / expected if expected else float("nan"),
        "false_ids": sum(len(o.false_ids("tracker")) for o in outcomes),
        "misses": [
            {"case": o.case_id, "missed": sorted(set(o.expected) - set(o.found["tracker"]))}
            for o in outcomes
            if o.hits("tracker") < len(o.expected)
        ],
        "unexpected": [
            {"case": o.case_id, "ids": o.false_ids("tracker")}
            for o in outcomes
            if o.false_ids("tracker")
        ],
    }
    path = args.out.with_name(args.out.stem + "-scale-cases.jsonl")
    with path.open("w", encoding="utf-8") as fh:
        for o in outcomes:
            fh.write(json.dumps(o.to_dict(), ensure_ascii=False) + "\n")
    if not args.no_cli:
        texts = [c.text for c in chapter_sized(cases)][: args.cli_lines]
        log(f"scale: timing `tracker check --jsonl` on {len(texts)} chapter-sized texts")
        result["cli"] = engine.cli_jsonl(texts)
    result["seconds"] = time.perf_counter() - start
    return result


def machine() -> str:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cpu = model or platform.machine()
    return f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}"


def render(args, meta: dict, summary: dict, perf: dict, scale: dict | None) -> str:
    errors = {m: n for m, n in meta["errors"].items() if n}
    parts = [
        f"## {args.mode} run, {meta['date']}",
        "",
        f"Machine: {meta['machine']}, shared with other work. Seed {args.seed}; "
        f"{args.n} cases per disguise, {args.n_innocent} texts per innocent kind "
        f"({meta['cases']} cases). Masters: {meta['novel_chapters']} novel chapters + "
        f"{meta['news_masters']} news articles = {meta['masters']}; innocent pool "
        f"{meta['innocents']} texts ({meta['excluded']} left out for sharing ≥ 50 characters "
        f"with a master); {meta['related']} masters share a passage of ≥ {RELATED_CHARS} "
        f"characters with another master (reporting one for the other is tolerated). "
        f"Run time {meta['seconds'] / 60:.1f} min.",
        "",
        "### Detection",
        "",
        report.detection_table(summary, args.methods),
        "",
        *(
            [f"Cases that raised an error (counted as nothing found): {errors}", ""]
            if errors
            else []
        ),
        "### Speed and memory",
        "",
        report.performance_table(perf, summary, args.methods),
    ]
    if perf.get("books"):
        parts += [
            "",
            "### Whole books on one page",
            "",
            report.books_table(perf["books"], perf.get("chapter_cps")),
        ]
    if scale:
        parts += ["", f"### Scale: {scale['masters']:,} masters", "", report.scale_table(scale)]
    return "\n".join(parts) + "\n"


def show_misses(outcomes: list[Outcome], engine: Engine, texts: dict[str, str], n: int) -> None:
    print("\n## Tracker misses and false positives\n")
    for ct in CASE_TYPES:
        mine = [o for o in outcomes if o.kind == ct.name]
        if ct.group == INNOCENT:
            bad = [o for o in mine if o.found["tracker"]]
        else:
            bad = [o for o in mine if o.hits("tracker") < len(o.expected) or o.false_ids("tracker")]
        if not bad:
            continue
        print(f"### {ct.name}: {len(bad)} of {len(mine)} cases\n")
        for o in bad[:n]:
            print(f"- {o.case_id} ({o.note}; {o.chars} chars)")
            print(f"  expected {list(o.expected)} found {o.found['tracker']}")
            for m in o.matches[:4]:
                span = m["spans"][0]["text"][:60].replace("\n", " ") if m["spans"] else ""
                print(
                    f"    {m['doc_id']}: score {m['score']}, coverage {m['coverage']}, "
                    f"{m['method']}, {len(m['spans'])} spans: {span}"
                )
            for doc_id in o.expected:
                if doc_id not in o.found["tracker"]:
                    print(f"    missed {doc_id}: {engine.explain_miss(texts[o.case_id], doc_id)}")
        print()


def rerender(path: Path) -> int:
    """The markdown tables and the plot of a stored run, with the current layout."""
    data = json.loads(path.read_text(encoding="utf-8"))
    fields = ("mode", "seed", "n", "n_innocent", "methods")
    args = argparse.Namespace(**{k: data[k] for k in fields})
    text = render(args, data["meta"], data["summary"], data["perf"], data["scale"])
    path.with_suffix(".md").write_text(text, encoding="utf-8")
    print(text)
    try:
        from bench.plot import plot
    except ImportError as exc:
        log(f"no plot: {exc}")
    else:
        plot(data, path.with_suffix(".png"))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render:
        return rerender(args.render)
    began = time.perf_counter()
    log(f"{args.mode} run: loading the corpus from {args.corpus or default_corpus_dir()}")
    corpus = load(args.corpus)
    naive = NaiveContainment()
    naive.add(corpus.masters)
    corpus.exclude_derived(naive.longest_shared)
    related = naive.related(corpus.masters, RELATED_CHARS)
    simulator = Simulator(corpus)
    cases = list(simulator.generate(args.n, args.n_innocent, args.seed, args.kinds))
    log(f"{len(corpus.masters)} masters, {len(cases)} cases")

    from tracker.fingerprints.document import fingerprint, fingerprint_many
    from tracker.matching.library import MasterLibrary

    baselines = {m: BASELINES[m]() for m in args.methods if m != "tracker"}
    sample = sample_texts(corpus, args.fp_chars, args.seed)
    perf: dict = {"fingerprint_cps": {}, "ingest_rate": {}}
    log(f"fingerprinting throughput on {sum(map(len, sample)):,} characters")
    # The tracker as ingest runs it (batches of MasterLibrary.BATCH), and one text at a time
    # as a page is checked; the baselines have no batch mode.
    perf["fingerprint_cps"]["tracker"] = throughput(fingerprint_many, sample, MasterLibrary.BATCH)
    perf["fingerprint_batch"] = MasterLibrary.BATCH
    perf["fingerprint_cps_single"] = throughput(one_by_one(fingerprint), sample)
    for name, baseline in baselines.items():
        perf["fingerprint_cps"][name] = throughput(one_by_one(baseline.fingerprint), sample)

    temp_dir = args.data_dir is None and not (args.mongo_url and args.redis_url)
    engine = Engine.open(args.data_dir, args.mongo_url, args.redis_url)
    try:
        log(f"tracker: ingesting into {engine.settings.data_dir}")
        stats = engine.ingest(corpus.masters)
        perf["ingest_rate"]["tracker"] = stats.rate
        perf["redis_bytes_per_master"] = stats.redis_bytes / max(stats.documents, 1)
        for name, baseline in baselines.items():
            log(f"{name}: indexing")
            start = time.perf_counter()
            baseline.add(corpus.masters)
            perf["ingest_rate"][name] = len(corpus.masters) / (time.perf_counter() - start)
        log("checking every case with every method")
        # The harness holds millions of long-lived objects (corpus, cases, the baselines'
        # indexes): frozen out of the garbage collector, its passes over them are not billed
        # to whichever method is being timed when one triggers.
        gc.collect()
        gc.freeze()
        outcomes = run_cases(cases, engine, baselines, related)
        if not args.no_cli:
            texts = [c.text for c in chapter_sized(cases)][: args.cli_lines]
            log(f"timing `tracker check --jsonl` on {len(texts)} chapter-sized texts")
            perf["cli"] = engine.cli_jsonl(texts)
        chapters = [o for o in outcomes if CHAPTER_CHARS[0] <= o.chars <= CHAPTER_CHARS[1]]
        perf["chapter_cps"] = sum(o.chars for o in chapters) / max(
            sum(o.seconds.get("tracker", 0.0) for o in chapters), 1e-9
        )
        if args.books:
            books = book_cases(corpus, simulator.alphabet, args.seed, large=args.mode == "full")
            log(f"whole books: {len(books)} cases")
            perf["books"] = [b.to_dict() for b in check_books(books, engine, cli=not args.no_cli)]
        summary = report.summarize(outcomes, args.methods)
        if args.show_misses:
            show_misses(outcomes, engine, {c.case_id: c.text for c in cases}, args.show_misses)
        meta = {
            "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": machine(),
            "cases": len(cases),
            "novel_chapters": len(corpus.novel_chapters),
            "news_masters": len(corpus.news_masters),
            "masters": len(corpus.masters),
            "innocents": len(corpus.innocents),
            "excluded": corpus.excluded_innocents,
            "related": len(related),
            "errors": {m: sum(1 for o in outcomes if m in o.errors) for m in args.methods},
            "seconds": time.perf_counter() - began,
        }
        finish(args, meta, summary, perf, None, outcomes, quiet=bool(args.scale))
        if args.scale:  # the results above are on disk already, should this step fail
            scale = run_scale(args, engine, corpus, cases, related)
            meta["seconds"] = time.perf_counter() - began
            finish(args, meta, summary, perf, scale, outcomes)
    finally:
        engine.close(stop_servers=temp_dir)
        if temp_dir:
            shutil.rmtree(engine.settings.data_dir, ignore_errors=True)
    return 0


def finish(args, meta, summary, perf, scale, outcomes: list[Outcome], quiet: bool = False) -> None:
    text = render(args, meta, summary, perf, scale)
    if not quiet:
        print(text)
    data, targets = write_results(args, text, meta, summary, perf, scale, outcomes)
    try:
        from bench.plot import plot
    except ImportError as exc:  # matplotlib is optional for the run itself
        log(f"no plot: {exc}")
        return
    for target in targets:
        plot(data, target.with_suffix(".png"))


def write_results(
    args, text, meta, summary, perf, scale, outcomes: list[Outcome]
) -> tuple[dict, list[Path]]:
    out: Path = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "mode": args.mode,
        "seed": args.seed,
        "n": args.n,
        "n_innocent": args.n_innocent,
        "methods": args.methods,
        "meta": meta,
        "summary": summary,
        "perf": perf,
        "scale": scale,
    }
    targets = [out]
    if out.resolve() == (RESULTS / "latest.md").resolve() and not args.partial:
        targets.append(RESULTS / f"{args.mode}.md")
    for target in targets:
        target.write_text(text, encoding="utf-8")
        target.with_suffix(".json").write_text(
            json.dumps(data, ensure_ascii=False, indent=1, allow_nan=True), encoding="utf-8"
        )
    with out.with_name(out.stem + "-cases.jsonl").open("w", encoding="utf-8") as fh:
        for o in outcomes:
            fh.write(json.dumps(o.to_dict(), ensure_ascii=False) + "\n")
    log(f"wrote {', '.join(str(t) for t in targets)} (+ .json, .png, {out.stem}-cases.jsonl)")
    return data, targets


if __name__ == "__main__":
    sys.exit(main())
