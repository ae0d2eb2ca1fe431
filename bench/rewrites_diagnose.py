"""Why a rewritten copy of the hand-written development set is missed: the failing step, per
copy (issue 39). Development data only (tests/fixtures/rewrites_dev_hand/): never point it at
the held-out set.

Each copy is checked against its own master alone, without servers, step by step as
:mod:`tracker.matching.rewrites` does: the sentence keys (``votes``: page units naming one of
the master's keys, ``MIN_VOTES`` make a candidate), the alignment (pairs, coverage,
passage) and :func:`tracker.matching.rewrite.is_rewrite`. (Without the verbatim stage's
index, a ``no-candidate`` of one vote here may be a candidate in the detector: with an anchor
shared, a master named by one key is aligned, and found only as a partial
passage, :func:`tracker.matching.rewrite.is_partial_passage`.) A miss is named by its first
failing step: ``no-candidate``, ``few-pairs``, ``few-chars``, ``wording`` (the aligned
sentences keep the master's facts, not enough of its other words), ``anchors`` (no pair keeps
the master's names and numbers), ``coverage/passage``. The innocents (independent reports of the
same events) are counted the same way, as flagged when every step passes. With
``--windows N``, also N random windows of 30, 40 and 50 % of each chapter's hand rewrite
between two other chapters (more partial copies than the set's ten, from the same texts).

``--out`` writes each copy missed with its sentence keys' fates (:func:`lost_keys`).

    python -m bench.rewrites_diagnose [-v] [--windows 20] [--out missed.json]  # ~15 s, no servers
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests import rewrites as r  # noqa: E402
from tests import rewrites_hand as hand  # noqa: E402
from tracker.fingerprints.sentences import (  # noqa: E402
    MIN_KEY_CODES,
    master_keys,
    pair_key,
    query_keys,
    sentences_of,
)
from tracker.matching import rewrite as rw  # noqa: E402
from tracker.matching.rewrites import MIN_VOTES, local_votes, near_hits  # noqa: E402
from tracker.text.normalize import normalize  # noqa: E402

SEED = 39


def step(page_text: str, master_text: str) -> tuple[str, int, rw.RewriteAlignment]:
    """The first failing step of ``page_text`` as a copy of ``master_text`` (``ok`` if none),
    with the votes and the alignment."""
    page, master = sentences_of(normalize(page_text)), sentences_of(normalize(master_text))
    filed = master_keys(master)
    keys, units = query_keys(page)
    hits = units[np.isin(keys, filed)]
    votes = local_votes(hits)
    among = near_hits(np.sort(hits), len(page.units)) if len(hits) else None
    a = rw.align_sentences(page, master, among)
    a = replace(a, page_total=sum(u.chars for u in page.units))
    return ("no-candidate" if votes < MIN_VOTES else failing(a)), votes, a


def failing(a: rw.RewriteAlignment) -> str:
    """The first test of :func:`~tracker.matching.rewrite.is_rewrite` the alignment ``a``
    fails (``ok`` if none)."""
    if rw.is_rewrite(a):
        return "ok"
    if len(a.pairs) < rw.MIN_PAIRS:
        return "few-pairs"
    if a.master_chars < rw.MIN_REWRITE_CHARS:
        return "few-chars"
    if a.wording < rw.MIN_WORDING:
        return "wording"
    if not a.anchored and (a.conflicts or a.anchored_units >= rw.MIN_ANCHORED_UNITS):
        return "anchors"
    return "coverage/passage"


def lost_keys(page_text: str, master_text: str) -> list[dict]:
    """The master's sentence keys (every unit's, unsampled) and how each fares on the page:
    ``hit`` (a page unit names it), ``word gone`` (one of its two words has no code on the
    page: renamed, written otherwise, or a synonym the thesaurus lacks), ``apart`` (both
    codes are on the page, never among one unit's ``QUERY_RAREST`` rarest)."""
    page, master = sentences_of(normalize(page_text)), sentences_of(normalize(master_text))
    looked_up = set(query_keys(page)[0].tolist())
    on_page = {c for u in page.units for c in u.codes}
    rows = []
    for unit in master.units:
        if len(unit.codes) < MIN_KEY_CODES:
            continue
        word = dict(zip(unit.word_codes, unit.words, strict=True))
        pair = unit.codes[:2]
        gone = [word[c] for c in pair if c not in on_page]
        fate = "hit" if pair_key(*pair) in looked_up else "word gone" if gone else "apart"
        rows.append({"words": [word[c] for c in pair], "fate": fate, "gone": gone})
    return rows


def cases(windows: int) -> list[tuple[str, str, str, str, bool]]:
    """(kind, id, page, master, is a copy) of the set, as tests.rewrites_hand builds it."""
    out = []
    wrap = hand.fillers()
    for k, (key, item) in enumerate(hand.news().items()):
        out.append(("news by hand", key, item["rewrite"], item["master"], True))
        table = r.rewrite(item["master"], SEED + k, r.HELD, "no8")
        out.append(("news no8 (table)", key, table, item["master"], True))
        for how in ("event", "wire"):
            told, name = item[how], f"same event ({how})"
            out.append((name, key, told, item["master"], False))
            no8 = r.rewrite(told, SEED + k, r.HELD, "no8")
            out.append((f"{name} no8", key, no8, item["master"], False))
            medium = r.rewrite(told, SEED + k, r.DEV, "medium")
            out.append((f"{name} medium", key, medium, item["master"], False))
            page = told + "\n" + wrap[k % len(wrap)]
            out.append((f"{name} in a page", key, page, item["master"], False))
    news = hand.news()
    for key, text in hand.news_hard().items():
        out.append(("news hard by hand", key, text, news[key]["master"], True))
    for k, (key, told) in enumerate(hand.releases().items()):
        master = news[key.split()[0]]["master"]
        name = f"same release ({'angle' if key.endswith('angle') else 'close'})"
        out.append((name, key, told, master, False))
        out.append((f"{name} no8", key, r.rewrite(told, SEED + k, r.HELD, "no8"), master, False))
        medium = r.rewrite(told, SEED + k, r.DEV, "medium")
        out.append((f"{name} medium", key, medium, master, False))
    for k, (key, item) in enumerate(hand.events().items()):
        master = item["master"]
        if "rewrite" in item:
            out.append((hand.EVENT_REWRITES, key, item["rewrite"], master, True))
        for name, how in ((hand.OWN_REPORTS, "report"), (hand.CLOSE_REPORTS, "close")):
            if how in item:
                told = item[how]
                out.append((name, key, told, master, False))
                no8 = r.rewrite(told, SEED + k, r.HELD, "no8")
                out.append((f"{name} no8", key, no8, master, False))
                medium = r.rewrite(told, SEED + k, r.DEV, "medium")
                out.append((f"{name} medium", key, medium, master, False))
                page = told + "\n" + wrap[k % len(wrap)]
                out.append((f"{name} in a page", key, page, master, False))
    for k, (key, item) in enumerate(hand.chapters().items()):
        out.append(("chapter by hand", key, item["rewrite"], item["master"], True))
        for w in range(windows):
            for share in (0.3, 0.4, 0.5):
                rng = random.Random(1000 * w + k)
                before, after = wrap[(k + w) % len(wrap)], wrap[(k + w + 2) % len(wrap)]
                inner = hand.window(item["rewrite"], share, rng)
                page = f"{before}\n{inner}\n{after}"
                out.append((f"window {share:.0%} by hand", key, page, item["master"], True))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("-v", action="store_true", help="every copy missed and innocent flagged")
    p.add_argument("--windows", type=int, default=10, help="partial windows per chapter share")
    p.add_argument("--out", type=Path, help="the copies missed, with their keys' fates (JSON)")
    args = p.parse_args(argv)
    n, ok, steps = Counter(), Counter(), Counter()
    missed = []
    for kind, key, page, master, copy in cases(args.windows):
        name, votes, a = step(page, master)
        n[kind] += 1
        ok[kind] += name == "ok"
        steps[kind, name] += 1
        if copy and name != "ok" and args.out:
            keys = lost_keys(page, master)
            missed.append(
                {
                    "kind": kind,
                    "id": key,
                    "step": name,
                    "votes": votes,
                    "pairs": len(a.pairs),
                    "coverage": round(a.coverage, 3),
                    "master_chars": a.master_chars,
                    "wording": round(a.wording, 3),
                    "keys": dict(Counter(k["fate"] for k in keys)),
                    "words_gone": [w for k in keys for w in k["gone"]],
                }
            )
        if args.v and (name == "ok") != copy:
            print(
                f"{'MISS' if copy else 'FLAG'} {kind} {key}: {name}, votes {votes}, "
                f"pairs {len(a.pairs)}, coverage {a.coverage:.2f}, master chars "
                f"{a.master_chars}, passage {a.passage_pairs} pairs / {a.passage_chars} chars, "
                f"wording {a.wording:.2f}"
            )
    for kind in n:
        fails = {s: c for (k, s), c in steps.items() if k == kind and s != "ok"}
        print(f"{kind:30s} passing {ok[kind]:3d} of {n[kind]:3d}  {fails}")
    if args.out:
        args.out.write_text(json.dumps(missed, ensure_ascii=False, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
