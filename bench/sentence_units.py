"""What building a text's sentence units costs, per chapter, cold and warm, for this code and
others side by side (:func:`tracker.fingerprints.sentences.sentences_of`).

The chapters are ``bench.library_scale``'s synthetic ones (corpus sentences with their words
shuffled: a large vocabulary), cut by jieba beforehand as a check gets them (a master's
stored cuts, a page's words cut once for all fingerprints), so only the units are timed:

* **cold**: the first pass over the chapters with a fresh lexicon cache, as a new
  ``tracker check --jsonl`` worker meets them (the lexicon's tables already loaded);
* **warm**: the next passes over the same chapters, every word seen before.

Each code (``--tree DIR``: a checkout or exported revision, beside this one) runs in its own
process, the codes alternated round by round; the figure is the median over rounds, in CPU
ms a chapter (``time.process_time``).

    python -m bench.sentence_units --chapters 300 --rounds 3 --tree /work/wt/base
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench import corpus as bench_corpus
from bench.output import worker_json
from bench.scale import sentence_pool, synthetic_chapters


def worker(path: Path, warm_passes: int) -> dict:
    """Time this process's code on the chapters in ``path`` (one text a line)."""
    from tracker.fingerprints.lexicon import Lexicon, lexicon
    from tracker.fingerprints.sentences import sentences_of
    from tracker.fingerprints.simhash import cut_lines
    from tracker.text.normalize import normalize

    texts = [normalize(json.loads(line)) for line in path.read_text("utf-8").splitlines()]
    words = [cut_lines(t.lines()) for t in texts]
    lexicon()  # the tables, loaded once a process (start-up, not timed)
    lex = Lexicon()  # an empty cache of canonical words, as in a fresh worker
    started = time.process_time()
    units = sum(len(sentences_of(t, w, lex)) for t, w in zip(texts, words, strict=True))
    cold = time.process_time() - started
    warm = []
    for _ in range(warm_passes):
        started = time.process_time()
        for t, w in zip(texts, words, strict=True):
            sentences_of(t, w, lex)
        warm.append(time.process_time() - started)
    n = len(texts)
    return {
        "chapters": n,
        "units": units,
        "chars": sum(len(t.chars) for t in texts),
        "cold_ms": 1000 * cold / n,
        "warm_ms": 1000 * min(warm) / n,
    }


def run(tree: Path, path: Path, warm_passes: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return worker_json(
        [
            sys.executable,
            "-m",
            "bench.sentence_units",
            "--worker",
            str(path),
            "--warm-passes",
            str(warm_passes),
        ],
        env,
        tree,
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--chapters", type=int, default=300)
    p.add_argument("--chars", type=int, default=1500)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--warm-passes", type=int, default=3)
    p.add_argument("--tree", type=Path, action="append", default=[], help="other code to time")
    p.add_argument("--out", type=Path, help="write the figures here (JSON)")
    p.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.warm_passes)))
        return 0
    pool = sentence_pool(
        d.text for d in bench_corpus.load(bench_corpus.default_corpus_dir()).masters
    )
    chapters = synthetic_chapters(args.chapters, pool, seed=args.seed, chars=args.chars)
    trees = [Path.cwd(), *[t.resolve() for t in args.tree]]
    runs: dict[str, list[dict]] = {str(t): [] for t in trees}
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "chapters.jsonl"
        path.write_text("".join(json.dumps(d.text) + "\n" for d in chapters), "utf-8")
        for r in range(args.rounds):
            for tree in trees if r % 2 == 0 else trees[::-1]:
                runs[str(tree)].append(run(tree, path, args.warm_passes))
                print(f"round {r + 1} {tree}: {runs[str(tree)][-1]}", file=sys.stderr)
    result = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load": os.getloadavg(),
        "chapters": args.chapters,
        "chars": args.chars,
        "rounds": args.rounds,
        "codes": {
            tree: {
                "cold_ms": statistics.median(x["cold_ms"] for x in xs),
                "warm_ms": statistics.median(x["warm_ms"] for x in xs),
                "units": xs[0]["units"],
                "runs": xs,
            }
            for tree, xs in runs.items()
        },
    }
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
