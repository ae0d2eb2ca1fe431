"""The check's start-up: ``tracker check`` in its own process (warm checker off), timed in
alternated rounds against an older revision of the code (exported with ``git archive``), on
the same private servers and library (the demo's masters):

* **base**: the revision given;
* **cache warm**: this tree, the rewrite lexicon's tables read from the user's cache
  (:func:`tracker.fingerprints.lexicon.lexicon_tables`);
* **lexicon cache empty**: this tree, the lexicon's cache removed before each run (the first
  check on a machine; the other tables' caches kept).

``--kind rewrite`` checks one chapter with half its sentences reversed (no verbatim copy: the
rewrite stage, its lexicon loaded, runs); ``--kind jsonl`` a 600-line ``--jsonl`` batch of
12-sentence excerpts, 30 % of their sentences reversed. Every run's output must equal the
first's, and all three rows' must agree. CPU is the command's and its workers' (user +
system), not the servers'.

    python -m bench.check_startup --baseline-rev 303957c --runs 9
    python -m bench.check_startup --baseline-rev 303957c --runs 5 --kind jsonl
"""

from __future__ import annotations

import argparse
import io
import json
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from bench.cli_latency import check_env
from tracker.config import Settings
from tracker.demo import master_documents
from tracker.matching.library import MasterLibrary
from tracker.servers import services
from tracker.servers.runtime import Runtime

ROOT = Path(__file__).resolve().parents[1]
CODE = "import sys; from tracker.cli import entry; sys.argv[0] = 'tracker'; entry()"


def run(command: list[str], env: dict[str, str], cwd: Path) -> tuple[int, bytes, float, float]:
    """Exit status, output, wall and CPU seconds (the children's user + system time)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, cwd=cwd, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done.returncode, done.stdout, wall, cpu


def reversed_some(sentences: list[str], rate: float, rng: random.Random) -> str:
    return "。".join(s[::-1] if rng.random() < rate else s for s in sentences)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-rev", required=True)
    parser.add_argument("--runs", type=int, default=9, help="alternated rounds (median kept)")
    parser.add_argument("--kind", choices=("rewrite", "jsonl"), default="rewrite")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tracker-bench-startup-") as tmp:
        tmp_path = Path(tmp)
        base = replace(Settings.load(), data_dir=tmp_path / "data")
        settings = replace(base, mongo_db="bench_startup", redis_prefix="bench-startup:")
        runtime = Runtime(settings)
        documents = master_documents()
        MasterLibrary.from_runtime(runtime).ingest(documents)
        rng = random.Random(1)
        if args.kind == "rewrite":
            target = tmp_path / "chapter.txt"
            text = reversed_some(documents[3].text.split("。"), 0.5, rng)
            target.write_text(text, encoding="utf-8")
            check = ["check", str(target)]
        else:
            lines = []
            for i in range(600):
                sentences = documents[i % len(documents)].text.split("。")
                start = rng.randrange(max(1, len(sentences) - 12))
                text = reversed_some(sentences[start : start + 12], 0.3, rng)
                lines.append(json.dumps({"id": str(i), "text": text}, ensure_ascii=False))
            target = tmp_path / "queries.jsonl"
            target.write_text("\n".join(lines) + "\n", encoding="utf-8")
            check = ["check", "--jsonl", str(target)]
        cache = tmp_path / "cache"
        env = {**check_env(runtime, settings), "TRACKER_CHECK_WARM_S": "0"}
        env["XDG_CACHE_HOME"] = str(cache)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached, as an installed package's
        old = tmp_path / "old"
        old.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", args.baseline_rev], capture_output=True, check=True
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(old, filter="data")
        command = [sys.executable, "-c", CODE, *check]
        new_env = {**env, "PYTHONPATH": str(ROOT)}
        run(command, new_env, ROOT)  # fills the cache
        if not any((cache / "tracker").glob("lexicon-*")):
            raise SystemExit("the check loaded no lexicon: nothing to time")
        rows: dict[str, list[tuple[float, float]]] = {
            f"base ({args.baseline_rev})": [],
            "this tree, cache warm": [],
            "this tree, lexicon cache empty": [],
        }
        outputs: dict[str, tuple[int, bytes]] = {}
        for round_ in range(args.runs + 1):  # round 0: a warm-up, not timed
            for name in rows:
                env_, cwd = (
                    (new_env, ROOT)
                    if name.startswith("this")
                    else (
                        {**env, "PYTHONPATH": str(old)},
                        old,
                    )
                )
                if name.endswith("empty"):
                    fresh = Path(tempfile.mkdtemp(dir=tmp_path)) / "cache"
                    shutil.copytree(cache, fresh, ignore=shutil.ignore_patterns("lexicon-*"))
                    env_ = {**env_, "XDG_CACHE_HOME": str(fresh)}
                status, out, wall, cpu = run(command, env_, cwd)
                if outputs.setdefault(name, (status, out)) != (status, out):
                    raise SystemExit(f"{name}: another answer than its first run's")
                if round_:
                    rows[name].append((wall, cpu))
        if len(set(outputs.values())) != 1:
            raise SystemExit("the rows' answers differ")
        runtime.close()
        services.stop(replace(base, mongo_url=None, redis_url=None))
    print(f"{' '.join(check[:-1])} ({len(documents)} masters), identical answers in every run")
    print(f"| command (median of {args.runs} alternated rounds) | CPU s | wall s |")
    print("|---|---:|---:|")
    for name, times in rows.items():
        cpu = statistics.median(c for _, c in times)
        print(f"| {name} | {cpu:.3f} | {statistics.median(w for w, _ in times):.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
