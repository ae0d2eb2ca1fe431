"""What tells an independent report of a news event from a rewrite of the master (洗稿)?
Development data only (issue 39; never point it at the held-out set).

``events.txt`` of the hand-written development set holds longer news masters, each with an
independent report of its event by another paper (its names, places, numbers and some of its
quotes, its own structure, details and angle), some with a report in the master's order, and
ten with a rewrite by hand. On main most of those reports align as rewrites. Each case of
:func:`bench.rewrites_diagnose.cases` (all the development set's, ``events.txt``'s too) and
the tools' copies of its masters (:func:`bench.rewrites_separation.tool_copies`) is checked
against its own master alone; for the cases :func:`tracker.matching.rewrite.is_rewrite`
accepts (copies found, innocents flagged), these measures of the alignment:

* ``wording``: main's rule (:func:`tracker.matching.rewrite.wording`);
* ``density``: of the page's characters from its first aligned unit to its last, the share
  in aligned units (a rewrite is the master retold, a report interleaves its own scenes,
  people and background between the facts it shares);
* ``page share``: of the page's characters, the share aligned (diluted by any other text);
* ``quote pairs``: of the aligned master characters, the share in pairs whose two sides are
  both mostly quoted speech (「」“”""): reports of one event quote the same people word for
  word, which proves no copy;
* ``wording unquoted``: ``wording`` over the pairs that are not such quote pairs;
* ``unquoted coverage``: of the master's characters outside mostly quoted units, the share
  aligned outside quote pairs;
* ``new anchors``, ``new anchor share``: the page's anchors (names, places, numbers) from
  its first aligned unit to its last that the master lacks, and their share of its anchors
  there (a report's own facts);
* ``passage share``, ``passage pairs share``: of the aligned master characters, and of the
  pairs, the part in the longest passage (:func:`tracker.matching.rewrite.passage`).

And over the alignments whose pairs lie apart on the page (not all in the longest passage,
:func:`tracker.matching.rewrite.passage`, and not a passage by
:func:`tracker.matching.rewrite.is_passage`), the copies' least wording against the
innocents': the rule "pairs apart keep 0.66 of the wording" was measured on it
(``bench/results/rewrites-precision-h48.md``).

Per measure: each kind's range, and over the found copies against the flagged innocents the
AUC (the chance a copy scores above an innocent), and how many innocents lie below every copy
(what a floor would reject without losing one).

    python -m bench.rewrites_reports          # ~30 s of CPU, no servers

Writes ``bench/results/rewrites-reports.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
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
from bench.rewrites_separation import QUOTES, auc, tool_copies  # noqa: E402
from tests import rewrites_hand as hand  # noqa: E402
from tracker.fingerprints.sentences import Sentences, sentences_of  # noqa: E402
from tracker.matching.rewrite import RewriteAlignment, is_passage, wording  # noqa: E402
from tracker.text.normalize import NormalizedText, normalize  # noqa: E402

MEASURES = (
    "wording",
    "density",
    "page share",
    "quote pairs",
    "wording unquoted",
    "unquoted coverage",
    "new anchors",
    "new anchor share",
    "passage share",
    "passage pairs share",
)
QUOTED = 0.5  # a unit is quoted speech when this share of its characters is


def quoted_units(text: NormalizedText, units: Sentences) -> np.ndarray:
    """Whether each unit is mostly quoted speech."""
    inside = np.zeros(len(text.source), dtype=bool)
    for m in QUOTES.finditer(text.source):
        inside[m.start() : m.end()] = True
    folded = np.r_[0, np.cumsum(inside[text.char_pos])]
    share = (folded[units.ends] - folded[units.starts]) / np.maximum(units.lengths, 1)
    return share >= QUOTED


def measures(page_text: str, master_text: str, a: RewriteAlignment) -> dict[str, float]:
    pn, mn = normalize(page_text), normalize(master_text)
    page, master = sentences_of(pn), sentences_of(mn)
    pq, mq = quoted_units(pn, page), quoted_units(mn, master)
    first = min(p.page_first for p in a.pairs)
    last = max(p.page_last for p in a.pairs)
    span = int(page.lengths[first : last + 1].sum())

    def quote_pair(p) -> bool:
        return bool(mq[p.master_first : p.master_last + 1].all()) and bool(
            pq[p.page_first : p.page_last + 1].all()
        )

    plain = [p for p in a.pairs if not quote_pair(p)]
    quoted_chars = sum(
        int(master.lengths[p.master_first : p.master_last + 1].sum())
        for p in a.pairs
        if quote_pair(p)
    )
    plain_chars = sum(
        int(master.lengths[j])
        for p in plain
        for j in range(p.master_first, p.master_last + 1)
        if not mq[j]
    )
    pf = page.flat
    at = pf.gather(np.arange(first, last + 1))
    anchors = set(pf.codes[at][pf.anchor[at]].tolist())
    new = anchors - set(master.flat.codes.tolist())
    unquoted = int(master.lengths[~mq].sum())
    return {
        "wording": a.wording,
        "density": a.page_chars / span if span else 0.0,
        "page share": a.page_share,
        "quote pairs": quoted_chars / a.master_chars if a.master_chars else 0.0,
        "wording unquoted": wording(plain, page, master) if plain else 0.0,
        "unquoted coverage": plain_chars / unquoted if unquoted else 0.0,
        "new anchors": float(len(new)),
        "new anchor share": len(new) / len(anchors) if anchors else 0.0,
        "passage share": a.passage_chars / a.master_chars if a.master_chars else 0.0,
        "passage pairs share": a.passage_pairs / len(a.pairs),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--windows", type=int, default=5, help="partial windows per chapter share")
    p.add_argument("--out", type=Path, default=RESULTS / "rewrites-reports.json")
    args = p.parse_args(argv)
    events = hand.events()
    tools = tool_copies()  # the set's news and chapters
    tools += [
        (kind.replace("tools", "tools (events)"), key, text, master, True)
        for kind, key, text, master, _ in _event_tool_copies(events)
    ]
    rows = []
    for kind, key, page, master, copy in cases(args.windows) + tools:
        name, _, a = step(page, master)
        if name != "ok":
            continue
        scattered = a.passage_pairs < len(a.pairs) and not is_passage(a)
        rows.append(
            {"kind": kind, "id": key, "copy": copy, "scattered": scattered}
            | measures(page, master, a)
        )
    by_kind: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_kind[row["kind"]].append(row)
    copies = [r for r in rows if r["copy"]]
    innocents = [r for r in rows if not r["copy"]]
    summary = {}
    for m in MEASURES:
        cs, ins = [r[m] for r in copies], [r[m] for r in innocents]
        summary[m] = {
            "copies": [min(cs), float(np.median(cs)), max(cs)],
            "innocents": [min(ins), float(np.median(ins)), max(ins)] if ins else None,
            "auc": auc(cs, ins),
            "below_every_copy": sum(x < min(cs) for x in ins),
        }
    apart = {
        "copies": sorted(r["wording"] for r in copies if r["scattered"])[:5],
        "innocents": sorted(r["wording"] for r in innocents if r["scattered"]),
    }
    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "copies": len(copies),
        "innocents": len(innocents),
        "summary": summary,
        "apart": apart,
        "rows": rows,
    }
    write_result(args.out, result, markdown(result, by_kind))
    return 0


def _event_tool_copies(events: dict[str, dict[str, str]]) -> list[tuple]:
    from tests import rewrites as r

    out = []
    for k, (key, item) in enumerate(events.items()):
        for strength in r.STRENGTHS:
            for name, tool in (("dev", r.DEV), ("held", r.HELD)):
                text = r.rewrite(item["master"], 177 + k, tool, strength)
                out.append((f"tools {name} {strength}", key, text, item["master"], True))
    return out


def markdown(result: dict, by_kind: dict[str, list[dict]]) -> str:
    lines = [
        f"Independent reports against rewrites, development set, {result['date']}: "
        f"{result['copies']} copies found, {result['innocents']} innocents flagged "
        "(each case against its own master alone)",
        "",
        "| kind | n | " + " | ".join(MEASURES) + " |",
        "|---|---|" + "---|" * len(MEASURES),
    ]
    for kind, rows in sorted(by_kind.items(), key=lambda kv: (kv[1][0]["copy"], kv[0])):
        label = f"{'copy' if rows[0]['copy'] else 'innocent'}: {kind}"
        cells = [f"{min(r[m] for r in rows):.2f}–{max(r[m] for r in rows):.2f}" for m in MEASURES]
        lines.append(f"| {label} | {len(rows)} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| measure | copies min/med/max | innocents min/med/max | AUC "
        "| innocents below every copy |",
        "|---|---|---|---|---|",
    ]
    for m, s in result["summary"].items():
        c = "/".join(f"{x:.2f}" for x in s["copies"])
        i = "/".join(f"{x:.2f}" for x in s["innocents"]) if s["innocents"] else "–"
        lines.append(f"| {m} | {c} | {i} | {s['auc']:.2f} | {s['below_every_copy']} |")
    apart = result["apart"]
    least = apart["copies"][0] if apart["copies"] else float("nan")
    lines += [
        "",
        "Pairs apart on the page (not one passage, not a passage by the rule): the copies' "
        f"lowest wording {', '.join(f'{x:.3f}' for x in apart['copies'])}; "
        f"{len(apart['innocents'])} innocents, {sum(x < least for x in apart['innocents'])} "
        f"of them below every such copy (wording "
        f"{', '.join(f'{x:.2f}' for x in apart['innocents'])}).",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
