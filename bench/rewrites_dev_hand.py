"""Rewritten copies (洗稿, issue 39) on the hand-written development set
(tests/fixtures/rewrites_dev_hand/, loaded by :mod:`tests.rewrites_hand`).

The hand set's masters (news articles, chapter excerpts) are registered beside the detection
benchmark's (``bench.corpus``, when it is there: ``--no-corpus`` leaves it out), on fresh
embedded servers; then, per kind, the share of the copies whose master is reported (news and
chapters rewritten by hand, news rewritten harder by hand (``news_hard.txt``), rewritten 40 %
of a chapter between two other chapters, by hand and with a swap table down to no 8-character
run; the news rewritten with the table) and the
innocents flagged (independent reports of the same events, as written, rewritten by the
tools, joined with other text; chapters of other stories). Any match on an innocent, or of
another master on a copy, is counted.

    python -m bench.rewrites_dev_hand            # ~2 min
    python -m bench.rewrites_dev_hand --windows 10   # and 300 windows of 30-50 % of a chapter

``--windows N`` adds, per chapter and share, N random windows of 30, 40 and 50 % of its hand
rewrite between two other texts (those of :mod:`bench.rewrites_diagnose`), through the whole
detector (its diagnosis of a miss has no verbatim stage).

Writes ``bench/results/rewrites-dev-hand.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.engine import Engine  # noqa: E402
from bench.output import write_result  # noqa: E402
from bench.rewrites import RESULTS, log  # noqa: E402
from tests import rewrites_hand as hand  # noqa: E402
from tracker.model import MasterDocument  # noqa: E402


def windows(n: int) -> list[hand.Case]:
    """The diagnosis's windows of the chapters' hand rewrites, as cases of the detector."""
    from bench.rewrites_diagnose import cases as diagnosed

    return [
        hand.Case(kind, page, hand.master_id("chapter", key))
        for kind, key, page, _, _ in diagnosed(n)
        if kind.startswith("window")
    ]


def measure(detector, cases: list[hand.Case]) -> dict:
    """Per kind: n, found (copies: their master reported), flagged (innocents: any match),
    as_rewrite, wrong ids; the innocents flagged and the copies missed, named."""
    results = detector.check_many([c.text for c in cases])
    n, found, rewrite, wrong, flagged = Counter(), Counter(), Counter(), Counter(), Counter()
    named, missed = [], []
    for case, matches in zip(cases, results, strict=True):
        n[case.kind] += 1
        if case.expected is None:
            if matches:
                flagged[case.kind] += 1
                named.append([case.kind, [(m.doc_id, m.method, m.coverage) for m in matches]])
            continue
        hit = [m for m in matches if m.doc_id == case.expected]
        found[case.kind] += bool(hit)
        if not hit:
            missed.append([case.kind, case.expected])
        rewrite[case.kind] += any(m.method == "rewrite" for m in hit)
        wrong[case.kind] += sum(m.doc_id != case.expected for m in matches)
    kinds = {}
    for kind in n:
        copies = kind in hand.KINDS_FOUND + hand.KINDS_HARD or kind.startswith("window")
        kinds[kind] = {
            "n": n[kind],
            "recall" if copies else "flagged": (found[kind] if copies else flagged[kind]) / n[kind],
            "as_rewrite": rewrite[kind] / n[kind] if copies else None,
            "wrong_ids": wrong[kind],
        }
    return {"kinds": kinds, "innocents_flagged": named, "copies_missed": missed}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--no-corpus", action="store_true", help="only the hand set's masters")
    p.add_argument("--seed", type=int, default=39)
    p.add_argument("--out", type=Path, default=RESULTS / "rewrites-dev-hand.json")
    p.add_argument("--windows", type=int, default=0, help="windows per chapter and share")
    args = p.parse_args(argv)
    masters = [MasterDocument(doc, "hand", doc, text) for doc, text in hand.masters()]
    if not args.no_corpus:
        from bench.corpus import load

        try:
            masters += load().masters
        except FileNotFoundError as e:
            log(f"{e}: the hand set's masters only")
    engine = Engine.open(None)
    try:
        log(f"ingest {len(masters)} masters")
        engine.ingest(masters)
        cases = hand.cases(args.seed) + (windows(args.windows) if args.windows else [])
        result = measure(engine.detector, cases)
        load_avg = os.getloadavg()
    finally:
        engine.close(stop_servers=True)
    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "load": [round(x, 2) for x in load_avg],
        "masters": len(masters),
        **result,
    }
    write_result(args.out, result, markdown(result))
    return 0


def markdown(result: dict) -> str:
    lines = [
        f"Rewritten copies, hand-written development set, {result['date']}, load "
        f"{result['load']}, {result['masters']} masters",
        "",
        "| kind | n | recall (as rewrite) / innocents flagged | wrong ids |",
        "|---|---|---|---|",
    ]
    for kind, row in result["kinds"].items():
        if "recall" in row:
            cell = f"recall {row['recall']:.2f} ({row['as_rewrite']:.2f})"
        else:
            cell = f"flagged {round(row['flagged'] * row['n'])} of {row['n']}"
        lines.append(f"| {kind} | {row['n']} | {cell} | {row['wrong_ids']} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
