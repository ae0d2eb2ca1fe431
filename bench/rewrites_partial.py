"""Why a partial rewritten copy of the development set is missed, through the whole detector
(issue 39). Development data only (tests/fixtures/rewrites_dev_hand/): never point it at the
held-out set.

:mod:`bench.rewrites_diagnose` checks each copy against its own master alone, without
servers, so it cannot see what the detector adds or takes away: the verbatim stage's anchors
(a master named by one sentence key is a candidate when they name it too), the other
candidates (:func:`tracker.matching.rewrite.own_pairs` takes out the pairs another master
aligns as well), the bound on the pairs from the unit sketch, the page's units inside a
verbatim copy. This runs the detector (the hand set's masters beside the benchmark's corpus,
on fresh embedded servers, as :mod:`bench.rewrites_dev_hand`) over the partial copies
(``partial by hand``, ``partial no8 (table)`` and ``--windows N`` windows of 30, 40 and 50 %
of each chapter's hand rewrite between two other chapters), and for each copy whose master is
not reported replays the rewrite stage's steps for that master, naming the first that fails:

- ``no-candidate``: fewer than ``MIN_VOTES`` of its sentence keys near one another, and not
  named by the verbatim stage's anchors (or named, with no key at all);
- ``not-ranked``: a candidate, but outranked (``MAX_CANDIDATES``, ``RELATIVE_VOTES``);
- ``bound``: its unit sketch bounds its pairs below what it needs (``least_pairs``);
- ``few-pairs``, ``few-chars``, ``wording``, ``anchors``, ``coverage/passage``: its
  alignment, after :func:`own_pairs`, fails :func:`is_rewrite` at that test;
- ``partial-only``: a rewrite, but named by one key and not a partial passage.

Each miss also gets its alignment over all the page's units (``among`` every unit outside the
verbatim copies: what a perfect candidate stage would give) and that alignment's first failing
test, so that a candidate miss that would still fail at the alignment is told from one that
would be found.

    BENCH_CORPUS=/work/shared/corpus python -m bench.rewrites_partial --windows 10 \\
        --out bench/results/rewrites-partial.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.engine import Engine  # noqa: E402
from bench.rewrites import log  # noqa: E402
from bench.rewrites_diagnose import failing  # noqa: E402
from tests import rewrites_hand as hand  # noqa: E402
from tracker.model import MasterDocument  # noqa: E402

PARTIAL_KINDS = ("partial by hand", "partial no8 (table)")


def described(a) -> dict:
    return {
        "pairs": len(a.pairs),
        "coverage": round(a.coverage, 3),
        "master_chars": a.master_chars,
        "passage_pairs": a.passage_pairs,
        "passage_chars": a.passage_chars,
        "wording": round(a.wording, 3),
        "anchored": a.anchored,
        "anchored_units": a.anchored_units,
        "conflicts": a.conflicts,
    }


def trace(engine: Engine, text: str, doc_id: str) -> dict:
    """The rewrite stage's steps for the master ``doc_id`` on the page ``text``, replayed."""
    import numpy as np

    from tracker.fingerprints.sentences import query_keys, sentences_of
    from tracker.matching import rewrite as rw
    from tracker.matching import rewrites as rs
    from tracker.matching.detector import versions_by_simhash

    detector = engine.detector
    seen: dict = {}
    original = rs.find_rewrites

    def spy(index, masters, pages, words, skip, covered=None, named=None):
        seen.update(pages=pages, words=words, skip=skip, covered=covered, named=named)
        return original(index, masters, pages, words, skip, covered, named)

    rs_detector = sys.modules[type(detector).__module__]
    rs_detector.find_rewrites = spy
    try:
        detector.check_many([text])
    finally:
        rs_detector.find_rewrites = original
    row = engine.library.store.masters.find_one({"_id": doc_id}, {"n": 1})
    n = int(row["n"])
    if not seen:
        return {"step": "no-rewrite-stage (page covered verbatim)"}
    page = seen["pages"][0]
    words = seen["words"][0]
    skip = seen["skip"][0]
    mask = (seen["covered"] or [None])[0]
    named = (seen["named"] or [set()])[0]
    if n in skip:
        return {"step": "verbatim (found)"}
    units = sentences_of(page, words)
    free = rs.open_units(units, mask)
    if not rs.worth_looking(units, free):
        free = free[:0]
    query = query_keys(units, free)
    every = detector.index.sentence_candidates([query], least=1)[0]
    hits = detector.index.sentence_candidates([query], also=[named])[0]
    near = hits.get(n, np.zeros(0, dtype=np.int64))
    out: dict = {
        "units": len(units),
        "key_hits": len(every.get(n, [])),
        "votes": rs.local_votes(np.asarray(every.get(n, []))),
        "named_by_anchors": n in named,
    }
    masters = detector.masters
    cached = masters.get([n], shingled=False)[n]
    msent = rs.master_sentences(cached)
    whole = rw.align_sentences(units, msent, free)
    whole = replace(whole, page_total=int(units.lengths[free].sum()))
    out["perfect_candidate"] = {"step": failing(whole), **described(whole)}
    out["perfect_partial_only"] = rw.is_partial_passage(whole)
    chosen = rs.ranked(hits, skip, named)
    if n not in hits:
        out["step"] = "no-candidate"
        return out
    if n not in chosen:
        out["step"] = "not-ranked"
        out["ranked"] = chosen
        return out
    bounds = rs.pair_bounds(masters, [units], [chosen], [skip], [hits], [free])[0]
    least = rs.least_pairs(near)
    out["named_once"] = rs.named_once(near)
    out["bound"] = bounds.get(n)
    if not rs.could_pair(bounds.get(n), least):
        out["step"] = "bound"
        return out
    loaded = masters.get(chosen, shingled=False)
    sentences = {d: rs.master_sentences(m) for d, m in loaded.items()}
    alignments = {
        d: rw.align_sentences(units, sentences[d], rs.near_hits(hits[d], len(units), free))
        for d in chosen
    }
    alone = replace(alignments[n], page_total=int(units.lengths[free].sum()))
    own = rw.own_pairs(
        alignments, units, sentences, versions_by_simhash({d: loaded[d].meta for d in chosen})
    )[n]
    own = replace(own, page_total=int(units.lengths[free].sum()))
    out["alignment"] = described(alone)
    out["own_pairs"] = described(own)
    out["others"] = [d for d in chosen if d != n]
    step = failing(own)
    if step == "ok" and out["named_once"] and not rw.is_partial_passage(own):
        step = "partial-only"
    if step != "ok" and failing(alone) == "ok":
        step += " (own_pairs)"
    out["step"] = step
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--windows", type=int, default=10, help="windows per chapter and share")
    p.add_argument("--no-corpus", action="store_true", help="only the hand set's masters")
    p.add_argument("--seed", type=int, default=39)
    p.add_argument("--out", type=Path, help="the copies missed, each with its trace (JSON)")
    args = p.parse_args(argv)
    from bench.rewrites_diagnose import cases as diagnosed

    masters = [MasterDocument(doc, "hand", doc, text) for doc, text in hand.masters()]
    if not args.no_corpus:
        from bench.corpus import load

        masters += load().masters
    cases = [c for c in hand.cases(args.seed) if c.kind in PARTIAL_KINDS]
    cases += [
        hand.Case(kind, page, hand.master_id("chapter", key))
        for kind, key, page, _, _ in diagnosed(args.windows)
        if kind.startswith("window")
    ]
    engine = Engine.open(None)
    missed, n, found = [], Counter(), Counter()
    try:
        log(f"ingest {len(masters)} masters")
        engine.ingest(masters)
        results = engine.detector.check_many([c.text for c in cases])
        for k, (case, matches) in enumerate(zip(cases, results, strict=True)):
            n[case.kind] += 1
            if any(m.doc_id == case.expected for m in matches):
                found[case.kind] += 1
                continue
            t = trace(engine, case.text, case.expected)
            missed.append({"kind": case.kind, "case": k, "master": case.expected, **t})
        load_avg = os.getloadavg()
    finally:
        engine.close(stop_servers=True)
    steps = Counter((m["kind"], m["step"]) for m in missed)
    for kind in n:
        fails = {s: c for (k, s), c in steps.items() if k == kind}
        print(f"{kind:22s} found {found[kind]:3d} of {n[kind]:3d}  {fails}")
    if args.out:
        result = {"load": [round(x, 2) for x in load_avg], "n": n, "found": found, "missed": missed}
        args.out.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
