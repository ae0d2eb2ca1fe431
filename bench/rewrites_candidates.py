"""The rewrite stage's candidates, its cost a query and the sentence keys' index bytes, this
code against another tree's (issue 39; development data only, never the held-out set).

Each side runs in a process of its own, from its own tree (``--baseline-tree``, e.g. a
``git worktree`` of main), on fresh embedded servers: the detection benchmark's masters
(``bench.corpus``) and the hand set's are ingested, then

* **cost**: the detection benchmark's disguised copies (as :mod:`bench.rewrites`' cost) are
  checked one at a time, rewrite detection on and off alternating in ``--rounds`` rounds: ms a
  query (median of the rounds) and the on/off ratio;
* **candidates**: the hand set's cases (:func:`tests.rewrites_hand.cases`, and ``--windows``
  windows a chapter and share, as :mod:`bench.rewrites_dev_hand`) and the disguised copies,
  checked in batches: per query, the masters its sentence keys name (``named``: those the
  index returns, two keys or more, or one and named by the verbatim stage), those ranked to be
  aligned (``ranked``: at most ``MAX_CANDIDATES``, the verbatim ones left out) and those
  aligned (``aligned``: their bound allows it); and, over ``--rounds`` rounds of both sets,
  the CPU ms a query of the whole check and of its rewrite stage (``find_rewrites``, timed by
  a wrapper), medians of the rounds;
* **index bytes**: Redis ``MEMORY USAGE`` of the sentence keys' table (``rw``) and of the
  others (:func:`bench.rewrites.index_bytes`).

The sides alternate, ``--pairs`` times (before, after, after, before, ...), so that the load
of a shared machine falls on both; the figures are the medians over each side's runs.

    git worktree add --detach /tmp/base main     # the code before
    python -m bench.rewrites_candidates --baseline-tree /tmp/base --pairs 2   # ~10-30 min
    # --after-tree DIR: another tree for 'after' (default: this one)

Writes ``bench/results/rewrites-candidates.json`` and ``.md`` (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


def side(tree: Path, windows: int, cases_per_disguise: int, rounds: int, seed: int) -> dict:
    """One side's figures, with the code of ``tree`` (imported from it: run in a process of
    its own, ``tree`` first on ``sys.path``)."""
    sys.path.insert(0, str(tree))
    from dataclasses import replace

    from bench.corpus import load
    from bench.engine import Engine
    from bench.rewrites import cost, index_bytes, sim_group
    from bench.simulator import DISGUISE, HEAVY, Simulator
    from tests import rewrites_hand as hand
    from tracker.matching import detector as detector_module
    from tracker.matching import rewrites
    from tracker.model import MasterDocument

    assert Path(rewrites.__file__).is_relative_to(tree), rewrites.__file__
    counts: Counter[str] = Counter()
    ranked, rewrites_of = rewrites.ranked, rewrites.rewrites_of

    def counting_ranked(hits, found, named=frozenset()):
        chosen = ranked(hits, found, named)
        counts["named"] += len(hits)
        counts["ranked"] += sum(d not in found for d in chosen)
        return chosen

    def counting_rewrites_of(page, page_units, docs, verbatim, near, free, loaded, *rest):
        counts["aligned"] += sum(d in loaded for d in docs if d not in verbatim)
        return rewrites_of(page, page_units, docs, verbatim, near, free, loaded, *rest)

    rewrites.ranked, rewrites.rewrites_of = counting_ranked, counting_rewrites_of
    find_rewrites = detector_module.find_rewrites
    stage = [0.0]

    def timed_find_rewrites(*args, **kwargs):
        start = time.process_time()
        try:
            return find_rewrites(*args, **kwargs)
        finally:
            stage[0] += time.process_time() - start

    detector_module.find_rewrites = timed_find_rewrites
    corpus = load()
    masters = [MasterDocument(doc, "hand", doc, text) for doc, text in hand.masters()]
    engine = Engine.open(None)
    try:
        engine.ingest(masters + corpus.masters)
        sim = Simulator(corpus)
        disguised = [
            c
            for c in sim.generate(cases_per_disguise, 0, seed=seed)
            if c.kind != "innocent" and c.expected and sim_group(c.kind) in (DISGUISE, HEAVY)
        ]
        timing = cost(engine, disguised, rounds)
        dev = hand.cases(seed)
        if windows:
            from bench.rewrites_dev_hand import windows as dev_windows

            dev += dev_windows(windows)
        per_set = {}
        detector = engine.library.detector(replace(engine.settings, rewrite_detection=True))
        sets = {"dev": [c.text for c in dev], "disguised": [c.text for c in disguised]}
        cpu: dict[str, list[float]] = {name: [] for name in sets}
        stage_cpu: dict[str, list[float]] = {name: [] for name in sets}
        for _ in range(rounds):
            for name, texts in sets.items():
                counts.clear()
                stage[0] = 0.0
                start = time.process_time()
                detector.check_many(texts)
                cpu[name].append((time.process_time() - start) / len(texts) * 1000)
                stage_cpu[name].append(stage[0] / len(texts) * 1000)
                per_set[name] = {
                    "queries": len(texts),
                    **{k: round(v / len(texts), 3) for k, v in counts.items()},
                }
        for name in sets:
            per_set[name]["cpu_ms_per_query"] = round(statistics.median(cpu[name]), 3)
            per_set[name]["stage_cpu_ms_per_query"] = round(statistics.median(stage_cpu[name]), 3)
        index = index_bytes(engine, len(masters) + len(corpus.masters))
        load_avg = os.getloadavg()
    finally:
        engine.close(stop_servers=True)
    # the whole side (ingest, timing, candidates), this process and its servers (reaped)
    usage = {
        who: resource.getrusage(getattr(resource, f"RUSAGE_{who.upper()}"))
        for who in ("self", "children")
    }
    cpu_s = {
        "process": round(usage["self"].ru_utime + usage["self"].ru_stime, 2),
        "servers": round(usage["children"].ru_utime + usage["children"].ru_stime, 2),
    }
    return {"cost": timing, "candidates": per_set, "index": index, "load": load_avg, "cpu_s": cpu_s}


def run_side(tree: Path, args: argparse.Namespace) -> dict:
    """:func:`side` in a fresh process with ``tree``'s code, on a private data dir and home."""
    import tempfile

    from bench.corpus import default_corpus_dir
    from bench.output import worker_json

    env = {
        **os.environ,
        "BENCH_CORPUS": str(default_corpus_dir()),  # this tree's, whichever tree runs
        "PYTHONPATH": str(tree),
        "HOME": tempfile.mkdtemp(prefix="h-"),
        "TRACKER_DATA_DIR": tempfile.mkdtemp(prefix="d-"),
    }
    return worker_json(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            "--side",
            str(tree),
            "--windows",
            str(args.windows),
            "--cases",
            str(args.cases),
            "--rounds",
            str(args.rounds),
            "--seed",
            str(args.seed),
        ],
        env,
        tree,
    )


def summary(runs: list[dict]) -> dict:
    """The medians over one side's runs."""

    def med(get) -> float:
        return round(statistics.median(get(r) for r in runs), 3)

    sets = runs[0]["candidates"]
    return {
        "runs": len(runs),
        "ms_per_query_on": med(lambda r: r["cost"]["ms_per_query_on"]),
        "ms_per_query_off": med(lambda r: r["cost"]["ms_per_query_off"]),
        "ratio_on_off": med(lambda r: r["cost"]["ratio_median"]),
        "verbatim_unchanged": min(r["cost"]["verbatim_unchanged"] for r in runs),
        "cpu_s_process": med(lambda r: r.get("cpu_s", {}).get("process", 0)),
        "cpu_s_servers": med(lambda r: r.get("cpu_s", {}).get("servers", 0)),
        "rw_bytes": med(lambda r: r["index"]["rw_bytes"]),
        "other_bytes": med(lambda r: r["index"]["other_bytes"]),
        "candidates": {
            name: {
                k: med(lambda r, name=name, k=k: r["candidates"][name].get(k, 0))
                for k in sets[name]
            }
            for name in sets
        },
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--baseline-tree", type=Path, help="the tree whose code is 'before'")
    p.add_argument("--after-tree", type=Path, help="the tree whose code is 'after' (this one)")
    p.add_argument("--pairs", type=int, default=2, help="before/after pairs, alternated")
    p.add_argument("--windows", type=int, default=10, help="windows per chapter and share")
    p.add_argument("--cases", type=int, default=10, help="disguised copies per disguise")
    p.add_argument("--rounds", type=int, default=5, help="timing rounds within a run")
    p.add_argument("--seed", type=int, default=39)
    p.add_argument("--side", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--out", type=Path, default=RESULTS / "rewrites-candidates.json")
    args = p.parse_args(argv)
    if args.side:
        result = side(args.side.resolve(), args.windows, args.cases, args.rounds, args.seed)
        print(json.dumps(result))
        return 0
    if args.baseline_tree is None:
        p.error("--baseline-tree is required")
    trees = {"before": args.baseline_tree.resolve(), "after": (args.after_tree or ROOT).resolve()}
    runs: dict[str, list[dict]] = {"before": [], "after": []}
    for k in range(args.pairs):
        for name in ("before", "after") if k % 2 == 0 else ("after", "before"):
            print(f"[{time.strftime('%H:%M:%S')}] {name} run {k + 1}", file=sys.stderr, flush=True)
            runs[name].append(run_side(trees[name], args))
    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "load": [round(x, 2) for x in os.getloadavg()],
        "trees": {k: str(v) for k, v in trees.items()},
        **{name: summary(r) for name, r in runs.items()},
        "runs": runs,
    }
    from bench.output import write_result

    write_result(args.out, result, markdown(result))
    return 0


def markdown(result: dict) -> str:
    b, a = result["before"], result["after"]

    def total(x: dict) -> int:
        return x["rw_bytes"] + x["other_bytes"]

    def row(name: str, x: float, y: float) -> str:
        return f"| {name} | {x:,} | {y:,} | ×{y / x:.3f} |" if x else f"| {name} | {x} | {y} | |"

    lines = [
        f"Rewrite candidates and cost, {result['date']}, load {result['load']}, "
        f"{b['runs']} + {a['runs']} alternated runs (medians)",
        "",
        "| | before | after | after / before |",
        "|---|---|---|---|",
        row("ms a query, rewrite on (disguised)", b["ms_per_query_on"], a["ms_per_query_on"]),
        row("ms a query, rewrite off", b["ms_per_query_off"], a["ms_per_query_off"]),
        row("on / off", b["ratio_on_off"], a["ratio_on_off"]),
        row("CPU s of a whole side: process", b["cpu_s_process"], a["cpu_s_process"]),
        row("CPU s of a whole side: servers", b["cpu_s_servers"], a["cpu_s_servers"]),
        row("index bytes: sentence keys (rw)", b["rw_bytes"], a["rw_bytes"]),
        row("index bytes: all tables", total(b), total(a)),
    ]
    for name, got in b["candidates"].items():
        for k in ("named", "ranked", "aligned", "cpu_ms_per_query", "stage_cpu_ms_per_query"):
            if k in got:
                lines.append(row(f"{name}: {k} a query", got[k], a["candidates"][name].get(k, 0)))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
