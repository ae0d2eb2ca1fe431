"""How long the command line takes to answer, end to end, as a user runs it.

A warm ``tracker check FILE`` of one chapter (servers running, caches built, files in the OS
cache) is timed as a new process each time, the way a user or a script runs it: checking in its
own process, and answered by the warm checker the first check leaves (``tracker.cli._warm``),
next to
baselines measured in the same run: the interpreter starting (``python -c pass``) and, with
``--baseline-rev REV``, the same command from an older revision of the code (exported with
``git archive``, run on the same servers and library). Also timed: an input error (a missing
file: nothing but start-up) and an unreachable MongoDB (the servers' timeout).

    python bench/cli_latency.py                      # ~1 minute
    python bench/cli_latency.py --baseline-rev d35d922 --runs 9

The library is 红楼梦 and 西游记 split into chapters when the development corpus is at
``../shared/corpus`` (220 masters), else the demo's sample. The machine's other load shows in
every row alike, hence the ratios.
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from tracker.config import Settings
from tracker.matching.library import MasterLibrary
from tracker.model import MasterDocument
from tracker.servers import services
from tracker.servers.runtime import Runtime

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("BENCH_CORPUS", ROOT.parent / "shared" / "corpus"))


def masters() -> list[MasterDocument]:
    from tracker.reading.readers import read_book

    books = [CORPUS / name for name in ("hongloumeng.txt", "xiyouji.txt")]
    if all(book.is_file() for book in books):
        return [doc for book in books for doc in read_book(book)]
    from tracker.demo import master_documents

    return master_documents()


def timed(
    command: list[str], env: dict[str, str], runs: int, expect: int, cwd: Path | None = None
) -> list[tuple[float, float]]:
    """(wall, CPU) seconds of ``runs`` runs after one warm-up, CPU being the process's user +
    system time (less sensitive than wall time to the machine's other load); each run must
    exit with ``expect``."""
    times = []
    for i in range(runs + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, check=False, cwd=cwd)
        elapsed = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != expect:
            raise SystemExit(f"{command}: exit {done.returncode}: {done.stderr.decode()[-800:]}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if i:
            times.append((elapsed, cpu))
    return times


def check_env(runtime: Runtime, settings: Settings) -> dict[str, str]:
    """The environment of a ``tracker`` command that uses ``runtime``'s servers and library."""
    return {
        **os.environ,
        "MONGO_URL": runtime.mongo_url,
        "REDIS_URL": runtime.redis_url,
        "TRACKER_MONGO_DB": settings.mongo_db,
        "TRACKER_REDIS_PREFIX": settings.redis_prefix,
        "TRACKER_DATA_DIR": str(settings.data_dir),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs per row (median kept)")
    parser.add_argument("--baseline-rev", help="also time `tracker check` of this git revision")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="tracker-bench-cli-") as tmp:
        tmp_path = Path(tmp)
        base = Settings.load()
        embedded = not (base.mongo_url and base.redis_url)
        if embedded:
            base = replace(base, data_dir=tmp_path / "data")
        settings = replace(base, mongo_db="bench_cli", redis_prefix="bench-cli:")
        runtime = Runtime(settings)
        runtime.mongo.drop_database(settings.mongo_db)
        documents = masters()
        MasterLibrary.from_runtime(runtime).ingest(documents)
        page = tmp_path / "chapter.txt"
        page.write_text(
            "最新章节 笔趣阁\n" + documents[2].text + "\n本章完，请记住本站域名", encoding="utf-8"
        )
        env = check_env(runtime, settings)
        tracker = [str(Path(sys.executable).with_name("tracker"))]
        if not Path(tracker[0]).exists():
            tracker = [sys.executable, "-m", "tracker.cli"]
        rows: dict[str, list[tuple[float, float]]] = {
            "python -c pass (interpreter start)": timed(
                [sys.executable, "-c", "pass"], env, args.runs, 0
            ),
            "tracker check MISSING-FILE (input error)": timed(
                [*tracker, "check", str(tmp_path / "missing.txt")], env, args.runs, 2
            ),
            f"tracker check CHAPTER ({len(documents)} masters, a copy found), in its own "
            "process (warm checker off)": timed(
                [*tracker, "check", str(page)], {**env, "TRACKER_CHECK_WARM_S": "0"}, args.runs, 1
            ),
        }
        # The first check leaves a warm checker behind (tracker.cli._warm); once it listens,
        # later checks are answered by it. CPU is the client's: the checker's is not counted.
        subprocess.run([*tracker, "check", str(page)], env=env, capture_output=True, check=False)
        from tracker.cli import _warm

        listening = _warm.socket_path(replace(settings, check_warm_s=600))
        deadline = time.monotonic() + 120
        while not listening.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        rows["the same, answered by the warm checker (client CPU)"] = timed(
            [*tracker, "check", str(page)], env, args.runs, 1
        )
        if args.baseline_rev:
            old = tmp_path / "old"
            old.mkdir()
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", args.baseline_rev],
                capture_output=True,
                check=True,
            ).stdout
            with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
                tar.extractall(old, filter="data")
            old_env = {**env, "PYTHONPATH": str(old)}
            code = "import sys; from tracker.cli import entry; sys.argv[0] = 'tracker'; entry()"
            old_check = [sys.executable, "-c", code, "check", str(page)]
            # Run from the exported tree: the current directory comes first on sys.path. Its
            # first check leaves its own warm checker (a revision that has one): waited for, so
            # that the row compares warm with warm.
            sockets = set(listening.parent.glob("check-*.sock"))
            found = 0 if _exits_zero(old_check, old_env, old) else 1
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not (
                set(listening.parent.glob("check-*.sock")) - sockets
            ):
                time.sleep(0.1)
            rows[f"the same, revision {args.baseline_rev}"] = timed(
                old_check, old_env, args.runs, found, cwd=old
            )
        unreachable = {**env, "MONGO_URL": "mongodb://127.0.0.1:1/x"}
        rows["tracker check CHAPTER, MongoDB unreachable"] = timed(
            [*tracker, "check", str(page)], unreachable, 1, 2
        )
        _warm.stop_all(settings)
        runtime.mongo.drop_database(settings.mongo_db)
        for key in runtime.redis.scan_iter(match=settings.redis_prefix + "*"):
            runtime.redis.delete(key)
        runtime.close()
        if embedded:
            services.stop(replace(base, mongo_url=None, redis_url=None))

    start = statistics.median(wall for wall, _ in next(iter(rows.values())))
    print(f"| command (median of {args.runs} warm runs) | wall s | CPU s | wall vs interpreter |")
    print("|---|---:|---:|---:|")
    for name, times in rows.items():
        wall = statistics.median(w for w, _ in times)
        cpu = statistics.median(c for _, c in times)
        print(f"| {name} | {wall:.2f} | {cpu:.2f} | {wall / start:.1f}x |")
    return 0


def _exits_zero(command: list[str], env: dict[str, str], cwd: Path) -> bool:
    """Whether an older ``tracker check`` says "found" with exit status 0 (before issue 13)."""
    done = subprocess.run(command, env=env, capture_output=True, check=False, cwd=cwd)
    return done.returncode == 0


if __name__ == "__main__":
    sys.exit(main())
