"""The hand-written development set of rewritten copies (tests/fixtures/rewrites_dev_hand/).

News articles (Xinhua style, with datelines) each with a rewrite by hand (as an LLM
paraphraser or a 伪原创 writer would make it) and two independent reports of the same event by
other writers (same names, places and numbers): ``event``, a feature with its own order,
details and quotes, and ``wire``, another paper's or agency's story written from the same
official release (so much in the same order, in its own words); more stories from the
same releases (``releases.txt``: :func:`releases`), ``close`` ones like ``wire`` and
``angle`` ones told from their own angle (lead, people, facts left out); chapter
excerpts of several genres each with a rewrite by hand; harder rewrites by hand of the news
(``news_hard.txt``: :func:`news_hard`, no run of 8 characters left: :func:`longest_run`);
chapters of other stories, never registered, to wrap partial copies in. :func:`cases` builds
the copies and the innocents the detector is measured on (``bench.rewrites_dev_hand``,
``tests/test_rewrites.py``).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

from tests import rewrites as r

ROOT = Path(__file__).resolve().parent / "fixtures" / "rewrites_dev_hand"
PARTIAL_SHARE = 0.4


def _items(name: str) -> dict[str, dict[str, str]]:
    """``# id`` items of a fixture file, each with its ``## section`` texts."""
    items: dict[str, dict[str, str]] = {}
    item: dict[str, list[str]] = {}
    section = "text"
    for line in (ROOT / name).read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
        elif line.startswith("# "):
            item = {}
            items[line[2:].strip()] = item  # type: ignore[assignment]
            section = "text"
        elif line.strip():
            item.setdefault(section, []).append(line.strip())
    return {k: {s: "\n".join(lines) for s, lines in v.items()} for k, v in items.items()}  # type: ignore[union-attr]


def news() -> dict[str, dict[str, str]]:
    """id → master, rewrite, event, wire."""
    return _items("news.txt")


def news_hard() -> dict[str, str]:
    """id → a harder rewrite by hand of the news item ``id``'s master (``news_hard.txt``:
    every sentence reworded, numbers written otherwise, no 8 characters in a row left)."""
    return {k: v["text"] for k, v in _items("news_hard.txt").items()}


def longest_run(page: str, master: str) -> str:
    """The longest run of characters ``page`` shares with ``master``, punctuation and spaces
    left out of both (so a run may cross a sentence end)."""
    a, b = (re.sub(r"[\W_]", "", t) for t in (page, master))
    best = ""
    for i in range(len(a)):
        j = i + len(best) + 1
        while j <= len(a) and a[i:j] in b:
            best, j = a[i:j], j + 1
    return best


def releases() -> dict[str, str]:
    """id → a second outlet's story written from the same release as the news item ``id``
    (``releases.txt``: same facts, names, places and numbers, its own sentences)."""
    return {k: v["text"] for k, v in _items("releases.txt").items()}


def events() -> dict[str, dict[str, str]]:
    """id → master, report, and some of close, rewrite (``events.txt``): longer news
    masters, each with an independent report of its event by another paper (same facts,
    names and numbers, some of the same quotes, its own structure, details and angle); some
    with a report written close to the master's order; ten with a rewrite by hand (洗稿)."""
    return _items("events.txt")


def chapters() -> dict[str, dict[str, str]]:
    """id → master, rewrite."""
    return _items("chapters.txt")


def fillers() -> list[str]:
    return [v["text"] for v in _items("fillers.txt").values()]


_SENTENCE = re.compile(r"[^。！？\n]+[。！？]?[”\"」』]?|\n")


def window(text: str, share: float, rng: random.Random) -> str:
    """A run of whole sentences of ``text`` holding about ``share`` of its characters."""
    pieces = [p for p in _SENTENCE.findall(text) if p]
    target = share * len(text)
    starts = [k for k in range(len(pieces)) if sum(map(len, pieces[k:])) >= target]
    start = rng.choice(starts)
    out, length = [], 0
    for piece in pieces[start:]:
        if length >= target:
            break
        out.append(piece)
        length += len(piece)
    return "".join(out).strip()


@dataclass(frozen=True)
class Case:
    kind: str
    text: str
    expected: str | None  # the master's id, None for an innocent


def master_id(kind: str, key: str) -> str:
    return f"hand-{kind}/{key}"


def masters() -> list[tuple[str, str]]:
    """(id, text) of the masters to register."""
    return (
        [(master_id("news", k), v["master"]) for k, v in news().items()]
        + [(master_id("chapter", k), v["master"]) for k, v in chapters().items()]
        + [(master_id("event", k), v["master"]) for k, v in events().items()]
    )


def innocents(name: str, told: str, seed: int, filler: str) -> list[Case]:
    """An independent report as written, rewritten by the tools (no8, medium), and joined
    with other text."""
    return [
        Case(name, told, None),
        Case(f"{name} no8", r.rewrite(told, seed, r.HELD, "no8"), None),
        Case(f"{name} medium", r.rewrite(told, seed, r.DEV, "medium"), None),
        Case(f"{name} in a page", told + "\n" + filler, None),
    ]


def cases(seed: int = 39) -> list[Case]:
    """The copies (with their master) and the innocents, by kind."""
    out: list[Case] = []
    wrap = fillers()
    for k, (key, item) in enumerate(news().items()):
        doc = master_id("news", key)
        out.append(Case("news by hand", item["rewrite"], doc))
        out.append(
            Case("news no8 (table)", r.rewrite(item["master"], seed + k, r.HELD, "no8"), doc)
        )
        for how in ("event", "wire"):
            out += innocents(f"same event ({how})", item[how], seed + k, wrap[k % len(wrap)])
    for key, text in news_hard().items():
        out.append(Case("news hard by hand", text, master_id("news", key)))
    for k, (key, told) in enumerate(releases().items()):
        name = f"same release ({'angle' if key.endswith('angle') else 'close'})"
        out += innocents(name, told, seed + k, wrap[k % len(wrap)])
    for k, (key, item) in enumerate(chapters().items()):
        doc = master_id("chapter", key)
        rng = random.Random(seed + k)
        before, after = wrap[k % len(wrap)], wrap[(k + 2) % len(wrap)]
        out.append(Case("chapter by hand", item["rewrite"], doc))
        inner = window(item["rewrite"], PARTIAL_SHARE, rng)
        out.append(Case("partial by hand", f"{before}\n{inner}\n{after}", doc))
        table = r.rewrite(item["master"], seed + k, r.HELD, "no8")
        inner = window(table, PARTIAL_SHARE, rng)
        out.append(Case("partial no8 (table)", f"{before}\n{inner}\n{after}", doc))
    out += [Case("other chapter", text, None) for text in wrap]
    for k, (key, item) in enumerate(events().items()):
        doc, filler = master_id("event", key), wrap[k % len(wrap)]
        if "rewrite" in item:
            out.append(Case(EVENT_REWRITES, item["rewrite"], doc))
        out += innocents(OWN_REPORTS, item["report"], seed + k, filler)
        if "close" in item:
            out += innocents(CLOSE_REPORTS, item["close"], seed + k, filler)
    return out


# events.txt: its rewrites by hand; its independent reports, and those told in the master's order
EVENT_REWRITES = "event news by hand"
OWN_REPORTS = "own report (events)"
CLOSE_REPORTS = "same release (close, events)"


KINDS_FOUND = ("news by hand", "news no8 (table)", "chapter by hand", "partial by hand")
KINDS_FOUND += ("partial no8 (table)", EVENT_REWRITES)
KINDS_HARD = ("news hard by hand",)
"""Copies measured by the benches, not yet held to a recall in the tests."""
