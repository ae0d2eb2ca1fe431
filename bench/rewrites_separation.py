"""Does a measure of the alignment separate rewritten copies from independent reports of
the same release? Development data only (issue 39; never point it at the held-out set).

Each case of :func:`bench.rewrites_diagnose.cases` (the hand-written development set: copies
by hand, windows of chapters rewritten by hand, the table's no8 copies; the innocents: stories
from the same release, ``close``, ``angle``, ``wire``, ``event``, as written and through the
tools), and the tools' copies of the same masters at every strength (``tests.rewrites``, dev
and held-out tables), is checked against its own master alone as the diagnosis does. Only the
cases :func:`tracker.matching.rewrite.is_rewrite` accepts matter: the innocents flagged (what a
new rule must reject) and the copies found (what it must keep). For those, per aligned pair
``(P, M)`` of page units and master units, pooled over the pairs:

* ``wording``: the rule of main (:func:`tracker.matching.rewrite.wording`);
* ``clause order``: Kendall's tau of the shared codes' first places in ``P`` and in ``M``,
  as (concordant - discordant) / (concordant + discordant) over all pairs' code pairs (a
  rewriter is said to keep the order of clauses inside a sentence, another writer not);
* ``anchor share``: of the cosine's numerator, sum of IDF² over the shared codes, the part
  from anchors (an independent report is said to share facts, a rewrite the rest too);
* ``code bigrams``: the share of ``M``'s consecutive content-code pairs that ``P`` holds (the
  canonical n-gram overlap: phrases kept through synonym swaps and fillers);
* ``char trigrams``: the share of ``M``'s character trigrams without digits that ``P`` holds
  (the literal phrasing);
* ``swaps``: of ``M``'s wording (IDF, no anchors) that ``P`` does not repeat word for word,
  the part ``P`` holds as another word of the same code (a synonym swap), not lost;
* ``pair wording q25``: the lower quartile of the pairs' own ``wording`` (a rewriter is said
  to keep every sentence's wording, where another writer copies some fact sentences of the
  release and tells the others in words of their own: a spread the pooled share hides);
* ``quotes``: 1 when the page is still a rewrite with the text inside 「」“”"" taken out of
  both texts (every report of a release quotes the same people).

For each measure: the copies' and the innocents' range, the AUC (the chance that a copy
scores above an innocent; 0.5 is no separation, 0 or 1 a full one), and how many flagged
innocents lie beyond every found copy, on either side (what a floor or a ceiling could reject
without losing a copy), with the margin.

    python -m bench.rewrites_separation          # ~30 s of CPU, no servers

Writes ``bench/results/rewrites-separation.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import itertools
import re
import sys
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.output import write_result  # noqa: E402
from bench.rewrites import RESULTS  # noqa: E402
from bench.rewrites_diagnose import cases, step  # noqa: E402
from tests import rewrites as r  # noqa: E402
from tests import rewrites_hand as hand  # noqa: E402
from tracker.fingerprints.sentences import Sentences, sentences_of  # noqa: E402
from tracker.matching.rewrite import RewriteAlignment, wording  # noqa: E402
from tracker.text.normalize import normalize  # noqa: E402

QUOTES = re.compile(r"「[^」]*」|“[^”]*”|\"[^\"]*\"|『[^』]*』")
MEASURES = (
    "wording",
    "clause order",
    "anchor share",
    "code bigrams",
    "char trigrams",
    "swaps",
    "quotes",
    "pair wording q25",
)


def tool_copies(seed: int = 77) -> list[tuple[str, str, str, str, bool]]:
    """The development masters rewritten by the tools of :mod:`tests.rewrites` (dev and
    held-out tables), at every strength."""
    items = list(hand.news().items()) + list(hand.chapters().items())
    out = []
    for k, (key, item) in enumerate(items):
        for strength in r.STRENGTHS:
            for name, tool in (("dev", r.DEV), ("held", r.HELD)):
                text = r.rewrite(item["master"], seed + k, tool, strength)
                out.append((f"tools {name} {strength}", key, text, item["master"], True))
    return out


def _codes(s: Sentences, first: int, last: int) -> list[list[int]]:
    """The content codes of units ``first..last``, in text order, unit by unit."""
    ptr, codes = s.content_ptr, s.content_codes
    return [codes[ptr[u] : ptr[u + 1]].tolist() for u in range(first, last + 1)]


def _tau(page: list[int], master: list[int]) -> tuple[int, int]:
    """Concordant and discordant pairs of the codes both sequences hold (first places)."""
    pp, mp = {}, {}
    for i, c in enumerate(page):
        pp.setdefault(c, i)
    for i, c in enumerate(master):
        mp.setdefault(c, i)
    common = [c for c in pp if c in mp]
    signs = [
        (pp[a] - pp[b]) * (mp[a] - mp[b]) for i, a in enumerate(common) for b in common[i + 1 :]
    ]
    return sum(s > 0 for s in signs), sum(s < 0 for s in signs)


def measures(page_text: str, master_text: str, a: RewriteAlignment) -> dict[str, float]:
    """The measures of the module's docstring for one accepted alignment."""
    pn, mn = normalize(page_text), normalize(master_text)
    page, master = sentences_of(pn), sentences_of(mn)
    weight = dict(zip(master.flat.codes.tolist(), master.flat.weights.tolist(), strict=True))
    weight.update(zip(page.flat.codes.tolist(), page.flat.weights.tolist(), strict=True))
    pu, mu = page.units, master.units
    conc = disc = anchor_w = shared_w = bigrams = bigrams_kept = grams = grams_kept = 0.0
    same = swapped = lost = 0.0
    for p in a.pairs:
        pcodes, mcodes = (
            _codes(page, p.page_first, p.page_last),
            _codes(master, p.master_first, p.master_last),
        )
        pflat, mflat = list(itertools.chain(*pcodes)), list(itertools.chain(*mcodes))
        c, d = _tau(pflat, mflat)
        conc, disc = conc + c, disc + d
        anchors = set().union(*(u.anchors for u in pu[p.page_first : p.page_last + 1]))
        anchors |= set().union(*(u.anchors for u in mu[p.master_first : p.master_last + 1]))
        shared = set(pflat) & set(mflat)
        shared_w += sum(weight[x] ** 2 for x in shared)
        anchor_w += sum(weight[x] ** 2 for x in shared if x in anchors)
        page_bigrams = {b for q in pcodes for b in itertools.pairwise(q)}
        for q in mcodes:
            pairs = list(itertools.pairwise(q))
            bigrams += len(pairs)
            bigrams_kept += sum(b in page_bigrams for b in pairs)
        ptext = pn.chars[int(page.starts[p.page_first]) : int(page.ends[p.page_last])]
        mtext = mn.chars[int(master.starts[p.master_first]) : int(master.ends[p.master_last])]
        page_grams = {ptext[i : i + 3] for i in range(len(ptext) - 2)}
        master_grams = [mtext[i : i + 3] for i in range(len(mtext) - 2)]
        master_grams = [g for g in master_grams if not any(ch.isdigit() for ch in g)]
        grams += len(master_grams)
        grams_kept += sum(g in page_grams for g in master_grams)
        page_words: dict[int, set[str]] = defaultdict(set)
        for u in pu[p.page_first : p.page_last + 1]:
            for w, x in zip(u.words, u.word_codes, strict=True):
                page_words[x].add(w)
        master_words: dict[int, set[str]] = defaultdict(set)
        for u in mu[p.master_first : p.master_last + 1]:
            for w, x in zip(u.words, u.word_codes, strict=True):
                master_words[x].add(w)
        for x, words in master_words.items():
            if x in anchors:
                continue
            if x not in page_words:
                lost += weight[x]
            elif words & page_words[x]:
                same += weight[x]
            else:
                swapped += weight[x]
    quoted, _, _ = step(QUOTES.sub("", page_text), QUOTES.sub("", master_text))
    return {
        "wording": a.wording,
        "clause order": (conc - disc) / (conc + disc) if conc + disc else 1.0,
        "anchor share": anchor_w / shared_w if shared_w else 0.0,
        "code bigrams": bigrams_kept / bigrams if bigrams else 1.0,
        "char trigrams": grams_kept / grams if grams else 1.0,
        "swaps": swapped / (swapped + lost) if swapped + lost else 1.0,
        "quotes": float(quoted == "ok"),
        "pair wording q25": float(np.percentile([wording([p], page, master) for p in a.pairs], 25)),
    }


def auc(copies: list[float], innocents: list[float]) -> float:
    """The chance that a copy scores above an innocent (ties count a half)."""
    x, y = np.array(copies)[:, None], np.array(innocents)[None, :]
    return float(((x > y) + 0.5 * (x == y)).mean())


def separation(copies: list[dict], innocents: list[dict]) -> dict[str, dict]:
    out = {}
    for m in MEASURES:
        c, i = [x[m] for x in copies], [x[m] for x in innocents]
        out[m] = {
            "copies": [round(min(c), 3), round(float(np.median(c)), 3), round(max(c), 3)],
            "innocents": [round(min(i), 3), round(float(np.median(i)), 3), round(max(i), 3)],
            "auc": round(auc(c, i), 3),
            # innocents a floor (below the least copy) or a ceiling (above the most) rejects
            "below_every_copy": sum(v < min(c) for v in i),
            "above_every_copy": sum(v > max(c) for v in i),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--windows", type=int, default=5, help="partial windows per chapter share")
    p.add_argument("--out", type=Path, default=RESULTS / "rewrites-separation.json")
    args = p.parse_args(argv)
    by_kind: dict[tuple[bool, str], list[dict]] = defaultdict(list)
    for kind, _key, page, master, copy in cases(args.windows) + tool_copies():
        name, _, a = step(page, master)
        if name == "ok":  # found copies, flagged innocents
            by_kind[copy, kind].append(measures(page, master, a))
    copies = [m for (copy, _), ms in by_kind.items() if copy for m in ms]
    innocents = [m for (copy, _), ms in by_kind.items() if not copy for m in ms]
    by_hand = [m for (copy, kind), ms in by_kind.items() if copy and "hand" in kind for m in ms]
    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "kinds": {
            f"{'copy' if copy else 'innocent'}: {kind}": {
                "n": len(ms),
                **{
                    m: [round(min(x[m] for x in ms), 2), round(max(x[m] for x in ms), 2)]
                    for m in MEASURES
                },
            }
            for (copy, kind), ms in sorted(by_kind.items())
        },
        "all copies vs flagged innocents": separation(copies, innocents),
        "copies by hand vs flagged innocents": separation(by_hand, innocents),
        "n": {"copies": len(copies), "by hand": len(by_hand), "innocents": len(innocents)},
    }
    write_result(args.out, result, markdown(result))
    return 0


def markdown(result: dict) -> str:
    n = result["n"]
    lines = [
        f"Separation of found copies from flagged innocents, development set, {result['date']}: "
        f"{n['copies']} copies found ({n['by hand']} by hand), {n['innocents']} innocents flagged",
        "",
        "| kind | n | " + " | ".join(MEASURES) + " |",
        "|---|---|" + "---|" * len(MEASURES),
    ]
    for kind, row in result["kinds"].items():
        cells = " | ".join(f"{row[m][0]:.2f}–{row[m][1]:.2f}" for m in MEASURES)
        lines.append(f"| {kind} | {row['n']} | {cells} |")
    for group in ("all copies vs flagged innocents", "copies by hand vs flagged innocents"):
        lines += [
            "",
            f"**{group}**",
            "",
            "| measure | copies min/med/max | innocents min/med/max | AUC | innocents below every "
            "copy | above every copy |",
            "|---|---|---|---|---|---|",
        ]
        for m, s in result[group].items():
            c, i = (
                "/".join(f"{v:.2f}" for v in s["copies"]),
                "/".join(f"{v:.2f}" for v in s["innocents"]),
            )
            lines.append(
                f"| {m} | {c} | {i} | {s['auc']:.2f} | {s['below_every_copy']} | "
                f"{s['above_every_copy']} |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
