"""The tracker under test, driven only through its public API.

A fresh library on the embedded servers (or ``--mongo-url``/``--redis-url``): database
``bench`` dropped and keys ``bench:*`` removed first. Ingest goes through
:meth:`tracker.matching.library.MasterLibrary.ingest`, checks through ``library.detector().check``,
and the ``tracker check --jsonl`` command is timed as a separate process, so changes to the engine
show up here without touching the harness. Only :func:`explain_miss` looks inside (candidates and
alignment of one expected master) and it degrades to a message if the internals change.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tracker.cli.check import DEFAULT_WORKERS
from tracker.config import Settings
from tracker.matching.library import MasterLibrary
from tracker.model import MasterDocument
from tracker.servers import services
from tracker.servers.runtime import Runtime

DB, PREFIX = "bench", "bench:"


@dataclass
class IngestStats:
    documents: int
    seconds: float
    redis_bytes: int  # used_memory delta over the ingest

    @property
    def rate(self) -> float:
        return self.documents / self.seconds if self.seconds else 0.0


class Engine:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.runtime = Runtime(settings)
        self.runtime.mongo.drop_database(DB)
        keys = list(self.runtime.redis.scan_iter(match=PREFIX + "*", count=5000))
        for start in range(0, len(keys), 5000):
            self.runtime.redis.unlink(*keys[start : start + 5000])
        self.library = MasterLibrary.from_runtime(self.runtime)
        self.detector = self.library.detector(settings)
        self.redis_baseline = self.used_memory()

    @classmethod
    def open(
        cls, data_dir: Path | None, mongo_url: str | None = None, redis_url: str | None = None
    ) -> Engine:
        settings = Settings(
            data_dir=data_dir or Path(tempfile.mkdtemp(prefix="tracker-bench-")),
            mongo_url=mongo_url,
            redis_url=redis_url,
            mongo_db=DB,
            redis_prefix=PREFIX,
        )
        return cls(settings)

    def used_memory(self) -> int:
        return int(self.runtime.redis.info("memory")["used_memory"])

    def ingest(self, docs: Iterable[MasterDocument]) -> IngestStats:
        before = self.used_memory()
        count = 0

        def counted() -> Iterable[MasterDocument]:
            nonlocal count
            for doc in docs:
                count += 1
                yield doc

        start = time.perf_counter()
        self.library.ingest(counted())
        seconds = time.perf_counter() - start
        return IngestStats(count, seconds, self.used_memory() - before)

    def check(self, text: str) -> list[dict]:
        """Matches best first, as ``tracker check --json`` prints them (evidence text cut)."""
        out = []
        for m in self.detector.check(text):
            d = m.to_dict()
            d["spans"] = [{**s, "text": s["text"][:80]} for s in d.get("spans", [])[:3]]
            out.append(d)
        return out

    def cli_jsonl(self, texts: Sequence[str]) -> dict:
        """Time ``tracker check --jsonl`` as a separate process, with the command's default
        worker processes and with one: the start-up (seconds for one line) and the mean
        milliseconds per line, (T(n lines) − T(n/2 lines)) / (n/2). The command batches its
        input, so only an amortised time per line is observable from outside; subtracting a
        run of the same mode cancels its start-up and exit exactly (one line is checked in
        the command's own process, whose exit waits for pymongo's threads, while workers exit
        at once). Each time is the best of three runs: a process's start-up moves by ±0.3 s on
        a shared machine, as much as a hundred lines take."""
        half = texts[: len(texts) // 2]
        result = {
            "startup_s": min(self._run_cli(texts[:1]) for _ in range(3)),
            "lines": len(texts),
            "workers": DEFAULT_WORKERS,
        }
        for workers, key in ((DEFAULT_WORKERS, "ms_per_line"), (1, "ms_per_line_one_process")):
            if len(half) < 1 or len(texts) - len(half) < 1:
                result[key] = 0.0
                continue
            many = min(self._run_cli(texts, workers) for _ in range(3))
            fewer = min(self._run_cli(half, workers) for _ in range(3))
            result[key] = 1000 * max(0.0, many - fewer) / (len(texts) - len(half))
        return result

    def _run_cli(self, texts: Sequence[str], workers: int = DEFAULT_WORKERS) -> float:
        settings = self.server_settings()
        env = {
            **os.environ,
            "MONGO_URL": settings.mongo_url or "",
            "REDIS_URL": settings.redis_url or "",
            "TRACKER_MONGO_DB": DB,
            "TRACKER_REDIS_PREFIX": PREFIX,
            "TRACKER_DATA_DIR": str(settings.data_dir),
        }
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as fh:
            for i, text in enumerate(texts):
                fh.write(json.dumps({"id": i, "text": text}, ensure_ascii=False) + "\n")
            path = fh.name
        code = "from tracker.cli import entry; entry()"  # as the console script runs it
        try:
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-c", code, "check", "--jsonl", path, "--workers", str(workers)],
                capture_output=True,
                env=env,
                text=True,
                check=False,
            )
            seconds = time.perf_counter() - start
        finally:
            os.unlink(path)
        answered = sum(1 for line in done.stdout.splitlines() if line.strip())
        if done.returncode != 0 or answered != len(texts):
            raise RuntimeError(
                f"tracker check --jsonl failed ({done.returncode}, {answered}/{len(texts)} "
                f"answers): {done.stderr[-500:]}"
            )
        return seconds

    def server_settings(self) -> Settings:
        return replace(
            self.settings, mongo_url=self.runtime.mongo_url, redis_url=self.runtime.redis_url
        )

    def close(self, stop_servers: bool) -> None:
        self.runtime.close()
        if stop_servers and not (self.settings.mongo_url or self.settings.redis_url):
            services.stop(self.settings)

    def explain_miss(self, text: str, doc_id: str) -> str:
        """Why ``doc_id`` was not reported: the alignment of the page with it and, when the
        index still offers ``candidates()``, its votes. Internals may change under the harness,
        so every part degrades to a note."""
        parts = []
        try:
            from tracker.matching.align import align
            from tracker.text.normalize import normalize

            doc = self.library.store.masters.find_one({"_id": doc_id}, {"n": 1})
            if doc is None:
                return "not in the library"
            master = self.library.store.by_ns([int(doc["n"])])[int(doc["n"])]
            page_tokens, master_tokens = normalize(text).tokens, normalize(master["text"]).tokens
            a = align(page_tokens, master_tokens, min_tokens=self.settings.min_span_chars)
            parts.append(
                f"aligned: coverage {a.coverage:.3f}, longest {a.longest}, "
                f"master tokens {a.master_tokens}/{len(master_tokens)}, passages {len(a.passages)}"
            )
        except Exception as exc:
            parts.append(f"(no alignment: {type(exc).__name__}: {exc})")
        try:
            n = int(doc["n"])
            cands = self._candidates(text)
            ranked = cands.ranked()
            rank = ranked.index(n) + 1 if n in ranked else None
            parts.append(
                f"candidate rank {rank} of {len(ranked)}, anchors {cands.anchor_votes.get(n, 0)},"
                f" dna {cands.dna_votes.get(n, 0)}, simhash {cands.near_duplicates.get(n, '-')}"
            )
        except Exception as exc:
            parts.append(f"(no candidate votes: {type(exc).__name__})")
        return "; ".join(parts)

    def _candidates(self, text: str):
        """The index's candidates for one page, through whichever lookup the index offers."""
        index = self.library.index
        if hasattr(index, "lookup"):  # one page's lookup
            from tracker.fingerprints.document import text_simhash
            from tracker.text.normalize import normalize

            page = normalize(text)
            return index.lookup(page.tokens, text_simhash(page))
        from tracker.fingerprints.document import fingerprint

        _, fp = fingerprint(text)
        return index.candidates(fp, self.library.store.simhashes)
