"""``tracker check [FILE | URL | -]`` and ``tracker check --jsonl FILE``.

Output shapes are a public interface: one text prints its matches (``--json`` for JSON);
``--jsonl`` prints one ``{"id", "matches": [...]}`` object per input line, matches best first,
each ``{"doc_id", "work", "title", "score", "coverage", "method", "spans"}``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import urllib.request
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import replace
from itertools import chain, islice
from pathlib import Path

import orjson
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tracker.config import Settings
from tracker.extract import extract
from tracker.fingerprints.simhash import simhash_text
from tracker.library import MasterLibrary
from tracker.matching.detector import Detector, Match
from tracker.readers import InputError
from tracker.runtime import Runtime
from tracker.text.encoding import decode_bytes
from tracker.text.normalize import normalize

MAX_FETCH_BYTES = 10 * 1024 * 1024
DEFAULT_WORKERS = min(4, os.cpu_count() or 1)  # check --jsonl: one process per CPU, at most 4


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("check", help="print the master documents a text copies")
    parser.add_argument(
        "source",
        nargs="?",
        default="-",
        help="a text file, an http(s) URL, or - for standard input",
    )
    parser.add_argument(
        "--jsonl",
        metavar="FILE",
        help='check every {"id", "text"} line of FILE (- for standard input)',
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=DEFAULT_WORKERS,
        metavar="N",
        help="with --jsonl: check batches in N processes (default: the CPUs, at most 4)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON for a single text")
    parser.set_defaults(func=run, quick_exit=True)


def run(args: argparse.Namespace, settings: Settings) -> int:
    if args.jsonl:
        return _run_jsonl(args.jsonl, settings, args.workers)
    text = _read_source(args.source)
    runtime = Runtime(settings)
    try:
        matches = _detector(runtime, settings).check(text)
    finally:
        runtime.close()
    if args.json:
        print(_dumps({"matches": matches}))
        return 0
    if not matches:
        print("no match in the master library")
        return 0
    table = Table("doc_id", "work", "title", "score", "coverage", "method", "passages")
    for m in matches:
        table.add_row(
            escape(m.doc_id),
            escape(m.work),
            escape(m.title),
            f"{m.score:.3f}",
            f"{m.coverage:.1%}",
            m.method,
            str(len(m.spans)),
        )
    console = Console()
    console.print(table)
    for m in matches[:3]:
        for span in m.spans[:3]:
            console.print(
                f"[bold]{escape(m.doc_id)}[/] page {span['page_start']}-{span['page_end']}"
                f" ↔ master {span['master_start']}-{span['master_end']}: "
                f"{escape(span['text'][:80])}…"
            )
    return 0


JSONL_BATCH = 16  # texts checked together: one index round trip, one master fetch per batch;
# small enough that batches spread evenly over the workers

Line = tuple[int, object, str | None, str | None]  # line number, id, text, error


def _detector(runtime: Runtime, settings: Settings) -> Detector:
    return MasterLibrary.from_runtime(runtime).detector(settings)


def _run_jsonl(path: str, settings: Settings, workers: int) -> int:
    """One output line per input line, in order; malformed lines get an ``error`` object.

    Batches are checked in ``workers`` processes (jieba segmentation holds the GIL, so
    threads would not help) when the input holds more than one batch; each process keeps
    its own connections and master cache, and results are printed in input order."""
    stream = sys.stdin if path == "-" else open(path, encoding="utf-8", errors="replace")  # noqa: SIM115
    errors = 0

    def batches() -> Iterator[list[Line]]:
        nonlocal errors
        batch: list[Line] = []
        with stream:
            for lineno, line in enumerate(stream, start=1):
                if not line.strip():
                    continue
                try:
                    record = _loads(line)
                    if not isinstance(record, dict) or not isinstance(record.get("text"), str):
                        raise ValueError("expected an object with a string 'text'")
                except ValueError as exc:
                    errors += 1
                    batch.append((lineno, None, None, str(exc)))
                else:
                    batch.append((lineno, record.get("id"), record["text"], None))
                if len(batch) >= JSONL_BATCH:
                    yield batch
                    batch = []
        if batch:
            yield batch

    pending = batches()
    head = list(islice(pending, 2))
    if workers <= 1 or len(head) < 2:
        runtime = Runtime(settings)
        try:
            detector = _detector(runtime, settings)
            for batch in chain(head, pending):
                _print_batch(batch, _check_texts(_texts(batch), detector))
        finally:
            runtime.close()  # an open MongoClient makes the interpreter's exit wait 0.3-0.7 s
    else:
        runtime = Runtime(settings)  # starts the embedded servers once, for all the workers
        resolved = replace(settings, mongo_url=runtime.mongo_url, redis_url=runtime.redis_url)
        # Forked workers start at once with the tables and dictionaries loaded here; nothing
        # in this process has opened a connection or a thread yet, so nothing is shared.
        simhash_text(normalize("预热词典").chars)
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        with ProcessPoolExecutor(
            workers, mp_context=context, initializer=_start_worker, initargs=(resolved,)
        ) as pool:
            in_flight: deque[tuple[list[Line], Future[list[str]]]] = deque()
            for batch in chain(head, pending):
                in_flight.append((batch, pool.submit(_check_texts, _texts(batch))))
                while len(in_flight) > 2 * workers:  # bounded: input may be larger than memory
                    done, future = in_flight.popleft()
                    _print_batch(done, future.result())
            for done, future in in_flight:
                _print_batch(done, future.result())
    if errors:
        print(f"tracker check: skipped {errors} malformed line(s)", file=sys.stderr)
    return 0


def _texts(batch: list[Line]) -> list[str]:
    return [text for _, _, text, _ in batch if text is not None]


_WORKER_DETECTOR: Detector | None = None


def _start_worker(settings: Settings) -> None:
    global _WORKER_DETECTOR
    _WORKER_DETECTOR = _detector(Runtime(settings), settings)


def _check_texts(texts: list[str], detector: Detector | None = None) -> list[str]:
    """The JSON of each text's matches (serialised where they are found: a worker sends
    back strings, not objects)."""
    detector = detector or _WORKER_DETECTOR
    if detector is None:
        raise RuntimeError("worker not started")
    return [_dumps(matches) for matches in detector.check_many(texts)] if texts else []


def _print_batch(batch: list[Line], results: list[str]) -> None:
    answers = iter(results)
    for lineno, record_id, _, error in batch:
        if error is not None:
            print(_dumps({"id": record_id, "line": lineno, "error": error}))
        else:
            print(f'{{"id":{_dumps(record_id)},"matches":{next(answers)}}}')
    sys.stdout.flush()


def _loads(line: str) -> object:
    """orjson (a chapter-sized line in 0.1 ms, json's C decoder takes 1.3 ms); json for what
    orjson refuses but json reads, such as escaped lone surrogates."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line)


def _dumps(value: object) -> str:
    try:
        return orjson.dumps(value).decode()  # Match dataclasses natively, no asdict copy
    except TypeError:  # a lone surrogate in a page's text: only escaped can it be printed
        return json.dumps(value, default=_as_dict)


def _as_dict(value: object) -> dict:
    if isinstance(value, Match):
        return value.to_dict()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _read_source(source: str) -> str:
    if source == "-":
        return sys.stdin.read()
    if source.startswith(("http://", "https://")):
        request = urllib.request.Request(source, headers={"User-Agent": "tracker-check/0.1"})
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read(MAX_FETCH_BYTES)
            charset = response.headers.get_content_charset()
        html, _ = decode_bytes(body, charset)
        return extract(html, source).text
    path = Path(source)
    if not path.is_file():
        raise InputError(f"{source}: no such file")
    text, _ = decode_bytes(path.read_bytes())
    if path.suffix.lower() in (".html", ".htm"):
        return extract(text, None).text
    return text
