"""Rewritten copies (洗稿, issue 39) on the development corpus, and what finding them costs.

On the detection benchmark's masters (红楼梦 and 西游记 chapters, People's Daily articles:
``bench.corpus``), in one run on fresh embedded servers:

* **recall per operation and strength**: copies of ``--n`` chapters and ``--n`` articles
  rewritten by the held-out tool of :mod:`tests.rewrites` (its own synonym table, never
  tuned on, and the detector's thesaurus never used), each operation alone and all at
  once, at each strength (``light``: 30 % of the table's words swapped, connectives and
  dateline; ``medium``: 60 %, every operation; ``no13``/``no8``: 80–90 % and fillers until no
  13 / 8 characters in a row are shared); and 40 % of a chapter rewritten (no8) inside
  unrelated text as long. A copy is found when its master is reported (by either detector;
  ``rewrite`` counts those reported as rewrites);
* **false positives**: ``--innocents`` innocent texts (the second half of the news, 呐喊,
  古文观止), two thirds of them rewritten by the same tools (dev and held-out, medium and
  no8): any match is a false positive;
* **cost**: the detection benchmark's disguised copies (``bench.simulator``, ``--cases`` of
  each disguise) checked one at a time with rewrite detection on and off, alternating in
  rounds, the same detectors on the same library: the ratio of the per-query times, and
  the verbatim matches compared (they must be the same);
* **index bytes**: Redis ``MEMORY USAGE`` of the sentence-key table (``rw``) against the
  other index tables, per chapter.

    python -m bench.rewrites                # ~5 min
    python -m bench.rewrites --n 20 --innocents 150 --cases 5     # ~2 min

Writes ``bench/results/rewrites.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.corpus import load  # noqa: E402
from bench.engine import Engine  # noqa: E402
from bench.output import write_result  # noqa: E402
from bench.simulator import DISGUISE, HEAVY, Simulator  # noqa: E402
from tests import rewrites as r  # noqa: E402

RESULTS = ROOT / "bench" / "results"


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def found(matches: list, doc_id: str) -> tuple[bool, bool]:
    hit = [m for m in matches if m.doc_id == doc_id]
    return bool(hit), any(m.method == "rewrite" for m in hit)


def recall(engine: Engine, masters: list, n: int, seed: int) -> list[dict]:
    """Rows of (kind, operation, strength, n, found, as rewrite, wrong ids)."""
    rows = []
    detector = engine.detector
    for kind, pool in masters:
        for strength in r.STRENGTHS:
            for operation in r.OPERATIONS:
                copies = [
                    r.rewrite(m.text, seed + k, r.HELD, strength, operation)
                    for k, m in enumerate(pool[:n])
                ]
                results = detector.check_many(copies)
                hits = [found(ms, m.doc_id) for ms, m in zip(results, pool, strict=False)]
                wrong = sum(
                    1
                    for ms, m in zip(results, pool, strict=False)
                    for x in ms
                    if x.doc_id != m.doc_id
                )
                rows.append(
                    {
                        "kind": kind,
                        "operation": operation,
                        "strength": strength,
                        "n": len(copies),
                        "recall": sum(h for h, _ in hits) / len(copies),
                        "as_rewrite": sum(w for _, w in hits) / len(copies),
                        "wrong_ids": wrong,
                    }
                )
                log(f"{kind} {strength} {operation}: {rows[-1]['recall']:.2f}")
    return rows


def partial(engine: Engine, chapters: list, fillers: list[str], n: int, seed: int) -> dict:
    pages = []
    for k, m in enumerate(chapters[:n]):
        rng = random.Random(seed + k)
        inner = r.part(r.rewrite(m.text, seed + k, r.HELD, "no8"), 0.4, rng)
        filler = "\n".join(fillers[(k * 7 + j) % len(fillers)] for j in range(12))
        pages.append(r.embed(inner, filler[: max(len(inner), 800)], rng))
    results = engine.detector.check_many(pages)
    hits = [found(ms, m.doc_id) for ms, m in zip(results, chapters, strict=False)]
    wrong = sum(
        1 for ms, m in zip(results, chapters, strict=False) for x in ms if x.doc_id != m.doc_id
    )
    return {
        "n": len(pages),
        "recall": sum(h for h, _ in hits) / len(pages),
        "as_rewrite": sum(w for _, w in hits) / len(pages),
        "wrong_ids": wrong,
    }


def innocents(engine: Engine, texts: list[str], seed: int) -> dict:
    tools = [(r.DEV, "medium"), (r.HELD, "medium"), (r.DEV, "no8"), (r.HELD, "no8")]
    made = []
    for k, text in enumerate(texts):
        if k % 3 == 0:
            made.append(("as written", text))
        else:
            tool, strength = tools[k % len(tools)]
            made.append((f"{tool.name} {strength}", r.rewrite(text, seed + k, tool, strength)))
    results = engine.detector.check_many([t for _, t in made])
    flagged = [
        {"how": how, "text": t[:60], "matches": [(m.doc_id, m.method, m.coverage) for m in ms]}
        for (how, t), ms in zip(made, results, strict=True)
        if ms
    ]
    rewritten = sum(1 for how, _ in made if how != "as written")
    return {
        "n": len(made),
        "rewritten": rewritten,
        "flagged": len(flagged),
        "examples": flagged[:10],
    }


def cost(engine: Engine, cases: list, rounds: int) -> dict:
    """Per-query check time with rewrite detection on and off, alternating rounds."""
    on = engine.library.detector(engine.settings)
    off = engine.library.detector(replace(engine.settings, rewrite_detection=False))
    texts = [c.text for c in cases]
    for detector in (on, off):  # warm: masters cached, tables loaded
        for text in texts:
            detector.check(text)
    times: dict[str, list[float]] = {"on": [], "off": []}
    for _ in range(rounds):
        for name, detector in (("off", off), ("on", on)):
            start = time.perf_counter()
            for text in texts:
                detector.check(text)
            times[name].append((time.perf_counter() - start) / len(texts) * 1000)
    same = 0
    recall_on = recall_off = 0
    for case in cases:
        a, b = on.check(case.text), off.check(case.text)
        verbatim = [m.to_dict() for m in a if m.method != "rewrite"]
        same += verbatim == [m.to_dict() for m in b]
        recall_on += all(any(m.doc_id == e for m in a) for e in case.expected)
        recall_off += all(any(m.doc_id == e for m in b) for e in case.expected)
    best_on, best_off = min(times["on"]), min(times["off"])
    return {
        "cases": len(cases),
        "rounds": rounds,
        "ms_per_query_on": round(statistics.median(times["on"]), 3),
        "ms_per_query_off": round(statistics.median(times["off"]), 3),
        "ratio_median": round(statistics.median(times["on"]) / statistics.median(times["off"]), 3),
        "ratio_best": round(best_on / best_off, 3),
        "verbatim_unchanged": same,
        "recall_on": recall_on / len(cases),
        "recall_off": recall_off / len(cases),
    }


def index_bytes(engine: Engine, chapters: int) -> dict:
    """Redis MEMORY USAGE of the index's tables (keys ``<prefix>ix:<table>:…``)."""
    redis = engine.runtime.redis
    prefix = engine.settings.redis_prefix + "ix:"
    sizes: dict[str, int] = {}
    for key in redis.scan_iter(match=prefix + "*", count=5000):
        table = key.decode()[len(prefix) :].split(":", 1)[0].split(".", 1)[0]
        sizes[table] = sizes.get(table, 0) + int(redis.memory_usage(key) or 0)
    rewrite = sizes.get("rw", 0)
    others = sum(v for k, v in sizes.items() if k != "rw")
    return {
        "tables": sizes,
        "rw_bytes": rewrite,
        "other_bytes": others,
        "increase": round(rewrite / others, 3) if others else None,
        "masters": chapters,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--n", type=int, default=40, help="chapters and articles per row")
    p.add_argument("--innocents", type=int, default=450)
    p.add_argument("--cases", type=int, default=10, help="disguised copies per disguise (cost)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--seed", type=int, default=39)
    p.add_argument("--cost-only", action="store_true", help="only the cost and the index bytes")
    p.add_argument("--out", type=Path, default=RESULTS / "rewrites.json")
    args = p.parse_args(argv)
    corpus = load()
    engine = Engine.open(None)
    try:
        log(f"ingest {len(corpus.masters)} masters")
        engine.ingest(corpus.masters)
        rng = random.Random(args.seed)
        chapters = rng.sample(corpus.novel_chapters, min(args.n, len(corpus.novel_chapters)))
        news = rng.sample(corpus.news_masters, min(args.n, len(corpus.news_masters)))
        sim = Simulator(corpus)
        cases = [
            c
            for c in sim.generate(args.cases, 0, seed=args.seed)
            if c.kind != "innocent" and c.expected and sim_group(c.kind) in (DISGUISE, HEAVY)
        ]
        log(f"cost: {len(cases)} disguised copies, {args.rounds} rounds")
        costs = cost(engine, cases, args.rounds)
        log(f"cost: {costs}")
        bytes_ = index_bytes(engine, len(corpus.masters))
        if args.cost_only:
            result = {"load": os.getloadavg(), "cost": costs, "index": bytes_}
            args.out.with_suffix(".cost.json").write_text(
                json.dumps(result, indent=2) + "\n", encoding="utf-8"
            )
            print(result)
            return 0
        rows = recall(engine, [("chapter", chapters), ("news", news)], args.n, args.seed)
        fillers = [
            p for i in corpus.innocents if i.kind == "nahan" for p in i.text.split("\n") if p
        ]
        part = partial(engine, chapters, fillers, args.n, args.seed)
        innocent_texts = [i.text for i in corpus.innocents]
        random.Random(args.seed).shuffle(innocent_texts)
        fp = innocents(engine, innocent_texts[: args.innocents], args.seed)
        load_avg = os.getloadavg()
    finally:
        engine.close(stop_servers=True)
    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "load": [round(x, 2) for x in load_avg],
        "recall": rows,
        "partial_40_no8": part,
        "innocents": fp,
        "cost": costs,
        "index": bytes_,
    }
    write_result(args.out, result, markdown(result))
    return 0


def sim_group(kind: str) -> str:
    from bench.simulator import CASE_TYPE

    return CASE_TYPE[kind].group


def markdown(result: dict) -> str:
    lines = [
        f"Rewritten copies (issue 39), {result['date']}, load {result['load']}",
        "",
        "| kind | strength | " + " | ".join(r.OPERATIONS) + " |",
        "|---|---|" + "---|" * len(r.OPERATIONS),
    ]
    rows = result["recall"]
    for kind in ("chapter", "news"):
        for strength in r.STRENGTHS:
            cells = []
            for op in r.OPERATIONS:
                row = next(
                    x
                    for x in rows
                    if (x["kind"], x["strength"], x["operation"]) == (kind, strength, op)
                )
                cells.append(f"{row['recall']:.2f} ({row['as_rewrite']:.2f})")
            lines.append(f"| {kind} | {strength} | " + " | ".join(cells) + " |")
    wrong = sum(x["wrong_ids"] for x in rows)
    part, fp, c, ix = result["partial_40_no8"], result["innocents"], result["cost"], result["index"]
    lines += [
        "",
        "Recall (in brackets: reported as rewrites); wrong ids in all rows: " + str(wrong),
        "",
        f"- 40 % of a chapter rewritten (no8) inside unrelated text: recall {part['recall']:.2f} "
        f"({part['as_rewrite']:.2f} as rewrites) of {part['n']}, {part['wrong_ids']} wrong ids",
        f"- innocent texts flagged: {fp['flagged']} of {fp['n']} ({fp['rewritten']} rewritten)",
        f"- check cost on {c['cases']} disguised copies: {c['ms_per_query_on']} ms a query with "
        f"rewrite detection, {c['ms_per_query_off']} without: ×{c['ratio_median']} (median of "
        f"{c['rounds']} rounds; best ×{c['ratio_best']}); verbatim matches unchanged in "
        f"{c['verbatim_unchanged']} of {c['cases']}; recall {c['recall_on']:.3f} / "
        f"{c['recall_off']:.3f}",
        f"- index: the sentence keys take {ix['rw_bytes']:,} B of Redis, the other tables "
        f"{ix['other_bytes']:,} B: +{ix['increase']:.0%} for {ix['masters']} masters",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
