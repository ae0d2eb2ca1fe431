"""Whole books on one page (issue 12): a 全本 download or page checked as one text.

Each case is a run of consecutive chapters of one novel of the master library on one page, as a
pirate site publishes a whole book, disguised or not; a case expects every chapter it holds.
Two large texts measure memory and speed: the 2 MB one is 西游记 whole (its 100 chapters with
their titles, like ``xiyouji.txt``), the 20 MB one both novels four times over (plain,
Traditional with ads, 5 % homophones, run together without titles), then other news, as one
file.

Every case is checked twice: in process (``library.detector().check``, its master cache
emptied first, so each case loads and normalises its masters as a cold check does), for chapter
recall, time and characters per second; and by ``tracker check FILE --json`` in a process of
its own, for the peak memory (the child's maximum resident set size) and the wall time of the
whole command, start-up included.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench import disguises as d
from bench.corpus import Corpus
from tracker.model import MasterDocument

HOMOPHONE_RATE = 0.05
LARGE_BYTES = 20_000_000


@dataclass(frozen=True)
class BookCase:
    name: str
    description: str
    text: str
    expected: tuple[str, ...]  # every chapter on the page


@dataclass
class BookOutcome:
    name: str
    description: str
    chars: int
    megabytes: float
    expected: int
    found: int  # expected chapters reported
    false_ids: list[str]
    seconds: float  # in process
    cli_seconds: float | None = None  # tracker check FILE --json, start-up included
    peak_rss_mb: float | None = None  # of that process
    missed: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def _titled(chapters: list[MasterDocument]) -> str:
    return "\n".join(f"{c.title}\n{c.text}" for c in chapters)


def _run_together(chapters: list[MasterDocument]) -> str:
    """No titles, no line breaks: the chapters' paragraphs as one block of text."""
    return "".join(p for c in chapters for p in d.split_paragraphs(c.text))


def _span(rng: random.Random, corpus: Corpus, size: int) -> list[MasterDocument]:
    works = sorted({c.work for c in corpus.novel_chapters})
    chapters = [c for c in corpus.novel_chapters if c.work == rng.choice(works)]
    start = rng.randrange(len(chapters) - size + 1)
    return chapters[start : start + size]


def _work(corpus: Corpus, work: str) -> list[MasterDocument]:
    return [c for c in corpus.novel_chapters if c.work == work]


def book_cases(corpus: Corpus, alphabet: d.Alphabet, seed: int, large: bool) -> list[BookCase]:
    """The whole-book cases; the 20 MB text only when ``large``."""
    made: list[BookCase] = []

    def case(name: str, description: str, make: Callable[[random.Random], tuple[str, list]]):
        rng = random.Random(f"{seed}:book:{name}")
        text, chapters = make(rng)
        made.append(BookCase(name, description, text, tuple(c.doc_id for c in chapters)))

    def span_of(size: int, disguise: Callable[[list[MasterDocument], random.Random], str]):
        def make(rng: random.Random) -> tuple[str, list]:
            chapters = _span(rng, corpus, size)
            return disguise(chapters, rng), chapters

        return make

    case("book_10", "10 chapters with their titles", span_of(10, lambda cs, rng: _titled(cs)))
    case("book_30", "30 chapters with their titles", span_of(30, lambda cs, rng: _titled(cs)))
    hlm = _work(corpus, "红楼梦")
    case("book_120", "红楼梦 whole, 120 chapters", lambda rng: (_titled(hlm), hlm))
    xyj = _work(corpus, "西游记")

    def traditional_ads(chapters: list[MasterDocument], rng: random.Random) -> str:
        text = "\n".join(f"{c.title}\n{d.with_ads(c.text, rng, c.work)}" for c in chapters)
        return d.traditional(text, rng)

    case(
        "book_traditional_ads",
        "西游记 whole (100 chapters) in Traditional, with ad lines",
        lambda rng: (traditional_ads(xyj, rng), xyj),
    )
    case(
        "book_homophones_30",
        "30 chapters, 5 % of the Han characters homophones",
        span_of(30, lambda cs, rng: d.homophones(_titled(cs), rng, alphabet, HOMOPHONE_RATE)),
    )
    case(
        "book_untitled_20",
        "20 chapters run together, no titles, no line breaks",
        span_of(20, lambda cs, rng: _run_together(cs)),
    )
    case("text_2mb", "西游记 whole as one text (2 MB)", lambda rng: (_titled(xyj), xyj))
    if large:

        def twenty_mb(rng: random.Random) -> tuple[str, list]:
            novels = corpus.novel_chapters
            parts = [
                _titled(novels),
                traditional_ads(novels, rng),
                d.homophones(_titled(novels), rng, alphabet, HOMOPHONE_RATE),
                _run_together(novels),
            ]
            size = sum(len(p.encode()) for p in parts)
            news = [i.text for i in corpus.innocents if i.kind == "news"]
            while size < LARGE_BYTES:
                piece = news[len(parts) % len(news)]
                parts.append(piece)
                size += len(piece.encode())
            return "\n".join(parts), novels

        case(
            "text_20mb",
            "both novels four times (plain, Traditional + ads, homophones, run together) "
            "and other news (20 MB)",
            twenty_mb,
        )
    return made


def check_books(cases: list[BookCase], engine, cli: bool = True) -> list[BookOutcome]:
    """Check each case in process and, when ``cli``, with ``tracker check FILE --json``."""
    outcomes = []
    for case in cases:
        engine.detector.masters.clear()
        start = time.perf_counter()
        found = [m.doc_id for m in engine.detector.check(case.text)]
        seconds = time.perf_counter() - start
        expected = set(case.expected)
        outcome = BookOutcome(
            case.name,
            case.description,
            len(case.text),
            len(case.text.encode()) / 1e6,
            len(expected),
            len(expected & set(found)),
            sorted(set(found) - expected),
            seconds,
            missed=sorted(expected - set(found)),
        )
        if cli:
            try:
                outcome.cli_seconds, outcome.peak_rss_mb, cli_found = _run_cli(engine, case.text)
            except (RuntimeError, ValueError, KeyError) as exc:  # the run goes on without it
                outcome.missed.append(f"(tracker check failed: {exc})")
            else:
                if set(cli_found) != set(found):
                    outcome.missed.append(f"(the command found {len(cli_found)}, not {len(found)})")
        outcomes.append(outcome)
    return outcomes


# Starts the command and reports its peak RSS. Linux keeps a process's peak across exec, and a
# child forked from the harness starts with the harness's (hundreds of MB): so the command is
# started by this small process, and wait4 on it reads the command's own peak.
_LAUNCHER = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(child.pid, 0)
with open(sys.argv[1], "w") as fh:
    fh.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def _run_cli(engine, text: str) -> tuple[float, float, list[str]]:
    """``tracker check FILE --json`` in a process of its own: wall seconds (start-up
    included), peak RSS in MB and the ids it reported."""
    settings = engine.server_settings()
    env = {
        **os.environ,
        "MONGO_URL": settings.mongo_url or "",
        "REDIS_URL": settings.redis_url or "",
        "TRACKER_MONGO_DB": settings.mongo_db,
        "TRACKER_REDIS_PREFIX": settings.redis_prefix,
        "TRACKER_DATA_DIR": str(settings.data_dir),
        # Measured in its own process: a warm checker would answer it, and the peak would be
        # the client's.
        "TRACKER_CHECK_WARM_S": "0",
    }
    with tempfile.TemporaryDirectory(prefix="tracker-book-") as tmp:
        path, peak = Path(tmp) / "book.txt", Path(tmp) / "peak"
        path.write_text(text, encoding="utf-8")
        # As the console script runs it.
        cli = [sys.executable, "-c", "from tracker.cli import entry; entry()"]
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", _LAUNCHER, str(peak), *cli, "check", str(path), "--json"],
            capture_output=True,
            env=env,
            check=False,
        )
        seconds = time.perf_counter() - start
        if done.returncode not in (0, 1):  # 1: copies found (a scanner's exit status)
            raise RuntimeError(f"tracker check failed ({done.returncode}): {done.stderr[-500:]!r}")
        peak_kb = int(peak.read_text())
    matches = json.loads(done.stdout)["matches"]
    return seconds, peak_kb / 1024, [m["doc_id"] for m in matches]
