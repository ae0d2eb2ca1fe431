"""Where a warm check's CPU goes, stage by stage (issue 40): the CPU time of the thread each
stage runs in (``time.thread_time``), measured by wrapping the stages' functions (not changing
them), so that the jieba thread's cutting and the I/O threads' decoding count where they run.
cProfile (``bench.check_profile --profile``) charges its own cost to every call, and a stage
of many small numpy calls looks 2-3× its size there; a wrapper costs ~1 µs a call.

One process, one worker, as ``tracker check --jsonl`` sends batches to a worker: the first
batch of 16 queries warms it (tables, dictionaries, the lexicon's first words), then the
others are checked in batches of 16. Prints the process's CPU a query and each stage's
(inclusive: a stage called inside another counts in both), and the calls.

    BENCH_CORPUS=… MONGO_URL=mongodb://127.0.0.1:27550/ REDIS_URL=redis://127.0.0.1:26550/0 \\
    TRACKER_MONGO_DB=scale TRACKER_REDIS_PREFIX=scale: \\
        python -m bench.check_stages /tmp/h50-lib/work/queries-1-600.jsonl

The query file is the one ``bench.library_scale`` writes in its ``--work``.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import sys
import time
from collections import Counter
from collections.abc import Callable

import orjson

from tracker.cli.check import JSONL_BATCH as BATCH  # the batches --jsonl checks

# (module, attribute): the stages, each wrapped where it is defined and, when another module
# imported it by name, there too (``also``)
STAGES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("tracker.matching.detector", "Detector._check_locked", ()),
    ("tracker.matching.detector", "Detector._lookup", ()),
    ("tracker.matching.detector", "Detector._align", ()),
    ("tracker.matching.detector", "MasterCache.load", ()),
    ("tracker.matching.detector", "MasterCache.get", ()),
    ("tracker.matching.detector", "MasterCache.unit_sketches", ()),
    ("tracker.text.normalize", "normalize", ("tracker.matching.detector",)),
    ("tracker.fingerprints.simhash", "segment_lines", ("tracker.matching.detector",)),
    ("tracker.fingerprints.simhash", "simhash_segmented", ("tracker.matching.detector",)),
    ("tracker.index.master_index", "MasterIndex.plan_many", ()),
    ("tracker.index.master_index", "MasterIndex.fetch", ()),
    ("tracker.index.master_index", "MasterIndex.candidates", ()),
    ("tracker.index.master_index", "MasterIndex.sentence_candidates", ()),
    ("tracker.index.sentence_index", "SentenceIndex.hits", ()),
    ("tracker.index.storage", "RedisStorage.get", ()),
    ("tracker.matching.align", "Shingles.of", ()),
    ("tracker.matching.rewrites", "find_rewrites", ("tracker.matching.detector",)),
    ("tracker.fingerprints.sentences", "sentences_many", ("tracker.matching.rewrites",)),
    ("tracker.fingerprints.sentences", "sentences_of", ("tracker.matching.rewrites",)),
    ("tracker.matching.rewrites", "masters_sentences", ()),
    ("tracker.matching.rewrites", "query_keys", ()),
    ("tracker.matching.rewrites", "ranked", ()),
    ("tracker.matching.rewrites", "pair_bounds", ()),
    ("tracker.matching.rewrite_bound", "most_pairs_of", ("tracker.matching.rewrites",)),
    ("tracker.matching.rewrites", "rewrites_of", ()),
)


class Stages:
    """Thread CPU seconds and calls of each wrapped function."""

    def __init__(self) -> None:
        self.spent: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()

    def wrap(self, module: str, attribute: str, also: tuple[str, ...]) -> None:
        owner: object = importlib.import_module(module)
        name = attribute
        if "." in attribute:
            cls, name = attribute.split(".")
            owner = getattr(owner, cls)
        original = getattr(owner, name, None)
        if original is None:
            return  # not in this code (another tree's)
        wrapped = self._timed(attribute, original)
        setattr(owner, name, wrapped)
        for other in also:
            if getattr(sys.modules[other], name, None) is original:
                setattr(sys.modules[other], name, wrapped)

    def _timed(self, label: str, function: Callable) -> Callable:
        @functools.wraps(function)
        def timed(*args, **kwargs):
            started = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                self.spent[label] += time.thread_time() - started
                self.calls[label] += 1

        return timed

    def clear(self) -> None:
        self.spent.clear()
        self.calls.clear()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("queries", help="a JSONL file of {id, text}")
    args = parser.parse_args(argv)
    from tracker.config import Settings
    from tracker.matching.checking import CheckingService

    stages = Stages()
    for module, attribute, also in STAGES:
        stages.wrap(module, attribute, also)
    with open(args.queries, "rb") as fh:
        texts = [orjson.loads(line)["text"] for line in fh if line.strip()]
    service = CheckingService(Settings.load())
    service.check_texts(texts[:BATCH])  # warms the worker
    stages.clear()
    started = time.process_time()
    for at in range(BATCH, len(texts), BATCH):
        service.check_texts(texts[at : at + BATCH])
    n = max(1, len(texts) - BATCH)
    print(f"process CPU {1000 * (time.process_time() - started) / n:.2f} ms a query ({n} queries)")
    print("stage (thread CPU, inclusive): ms a query, calls")
    for label, spent in stages.spent.most_common():
        print(f"  {label:40s} {1000 * spent / n:6.3f}  {stages.calls[label]}")
    service.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
