"""``tracker check [FILE | URL | -]`` and ``tracker check --jsonl FILE``.

Exit status, as a scanner's: a single text exits **1** when it copies master documents, **0**
when it copies none, **2** on an error (one line ``tracker: error: …``), an empty master
library included: with nothing to check against, no text can be called clean (as ``clamscan``
without a virus database). ``--jsonl`` exits 0 unless it failed: its answers say the rest,
malformed lines included.

Reading and checking are the checking service's (:mod:`tracker.matching.checking`); this module
is the command's options and output, and the warm checker's client side (:mod:`._warm`).

An RSS/Atom feed is checked item by item, each under the URL a crawl stores it as
(``--json``: ``{"items": [{"id", "matches"}]}``).

Output shapes are a public interface: one text prints its matches (``--json`` for JSON);
``--jsonl`` prints one ``{"id", "matches": [...]}`` object per input line, matches best first,
each ``{"doc_id", "work", "title", "score", "coverage", "method", "spans"}``; a line that cannot
be checked is answered ``{"id", "line", "error"}``, with its id whenever it could be read.
"""

from __future__ import annotations

import argparse
import gc
import io
import os
import sys
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import replace
from itertools import chain, islice
from typing import IO, TYPE_CHECKING

from tracker.cli import _warm, add_size_limit, fail, settings_help, size_limit
from tracker.cli._output import plain, print_table
from tracker.config import Settings
from tracker.reading.readers import InputError, json_loads

if TYPE_CHECKING:
    from tracker.matching.checking import Answer, CheckingService

DEFAULT_WORKERS = min(4, os.cpu_count() or 1)  # check --jsonl: one process per CPU, at most 4
FOUND = 1  # exit status of a single text that copies master documents
LONG_INPUT_BYTES = 2 << 20  # a file this large is checked in process, with a progress bar


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "check",
        help="print the master documents a text copies (exit 1: copies found, 0: none, 2: error)",
        description="Print the master documents a text copies, to standard output. Exit "
        "status: 1 when it copies some, 0 when it copies none, 2 on an error, an empty master "
        "library included (nothing to check against); with --jsonl, 0 unless the command "
        "failed.",
        epilog=settings_help(
            "min_coverage",
            "min_passage_chars",
            "min_span_chars",
            "rewrite_detection",
            "max_input_mb",
            "check_warm_s",
        ),
    )
    parser.add_argument(
        "source",
        nargs="?",
        default="-",
        help="a text or HTML file, an http(s) URL, or - for standard input (the default)",
    )
    parser.add_argument(
        "--jsonl",
        metavar="FILE",
        help='check every {"id", "text"} line of FILE (UTF-8; - for standard input)',
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=DEFAULT_WORKERS,
        metavar="N",
        help="with --jsonl: check batches in N processes (default: the CPUs, at most 4)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON for a single text")
    parser.add_argument(
        "--wide", action="store_true", help="print the table at full width, whatever the terminal"
    )
    add_size_limit(parser, "a text, file or page (with --jsonl, a line)")
    parser.set_defaults(func=run, quick_exit=True)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from tracker.matching.checking import EmptyLibrary

    # Start-up (~0.4 s of imports, connections and tables) makes long-lived objects and no
    # garbage cycles: the collector walking them again and again cost ~6 % of a one-text
    # check's CPU. It is off until start-up is over (:func:`_started`; a single text: for its
    # whole check) and as it was after, whatever happens, its frozen objects thawed (the warm
    # checker runs this command in a long-lived process, tests in theirs: what a run froze
    # would otherwise never be collected there).
    collecting, thawed = gc.isenabled(), gc.get_freeze_count() == 0
    gc.disable()
    try:
        return _run_check(args, settings)
    except EmptyLibrary as exc:
        return fail(str(exc))
    finally:
        if thawed:
            gc.unfreeze()
        if collecting:
            gc.enable()
        else:
            gc.disable()


def _started() -> None:
    """Start-up is over: what it loaded is kept out of the collector's reach (frozen: a full
    collection neither walks it nor, in a forked worker, writes to its pages, copied on
    write), and the collector runs again for what the checks make."""
    gc.freeze()
    gc.enable()


def _run_check(args: argparse.Namespace, settings: Settings) -> int:
    max_bytes = size_limit(args, settings)
    if args.jsonl:
        return _run_jsonl(args.jsonl, settings, args.workers, max_bytes)
    if args.source == "-" and sys.stdin.isatty():
        raise InputError(
            "nothing to check: give a file or a URL, or pipe a text in (… | tracker check)"
        )
    # The warm checker runs this command with its own service (tracker.cli._warm.serve).
    service: CheckingService | None = getattr(args, "checker", None)
    cold = service is None
    long_file = (
        args.source != "-"
        and os.path.isfile(args.source)
        and (os.path.getsize(args.source) > LONG_INPUT_BYTES)
    )
    if cold and _warm.enabled(settings) and not (long_file and sys.stderr.isatty()):
        stdin = sys.stdin.buffer.read(max_bytes + 1) if args.source == "-" else None
        code = _warm.ask(settings, args.argv, stdin)
        if code is not None:
            return code
        if stdin is not None:  # not answered: read what was read again, here
            sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    if service is None:
        from tracker.matching.checking import CheckingService

        service = CheckingService(settings)
    try:
        answer = service.check(service.read(args.source, max_bytes), progress=_progress())
    finally:
        if cold:
            service.close()  # an open MongoClient makes the interpreter's exit wait
    if cold and _warm.enabled(settings):
        _warm.start(settings, args.config)  # later checks: answered by a warm process
    _print_answer(answer, args)
    return FOUND if answer.copied else 0


def _print_answer(answer: Answer, args: argparse.Namespace) -> None:
    if args.json:
        print(answer.to_json())
    elif not answer.feed:
        _print_matches(answer.found[0], args)
    else:  # a feed: its items one by one
        for name, matches in zip(answer.names, answer.found, strict=True):
            print(f"\n{plain(name)}")
            _print_matches(matches, args)


def _progress():
    """A progress bar on standard error for a long text's check, on a terminal only."""
    if not sys.stderr.isatty():
        return None
    shown: dict = {}

    def update(done: int, total: int) -> None:
        if "bar" not in shown:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TaskProgressColumn, TimeRemainingColumn

            bar = Progress(
                "checking",
                BarColumn(),
                TaskProgressColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            bar.start()
            shown["bar"], shown["task"] = bar, bar.add_task("check", total=total)
        shown["bar"].update(shown["task"], completed=done, total=total)
        if done >= total:
            shown["bar"].stop()

    return update


def _print_matches(matches: list, args: argparse.Namespace) -> None:
    if matches:
        _print_table(matches, args.wide)
    else:
        print("no match in the master library")


def _print_table(matches: list, wide: bool) -> None:
    """The matches, best first, then the first passages of the best three."""
    print_table(
        ("doc_id", "work", "title", "score", "coverage", "method", "passages"),
        (
            (
                m.doc_id,
                m.work,
                m.title,
                f"{m.score:.3f}",
                f"{m.coverage:.1%}",
                m.method,
                len(m.spans),
            )
            for m in matches
        ),
        wide=wide,
        numeric=("score", "coverage", "passages"),
    )
    for m in matches[:3]:
        for span in m.spans[:3]:
            print(
                f"{plain(m.doc_id)} page {span['page_start']}-{span['page_end']}"
                f" ↔ master {span['master_start']}-{span['master_end']}: "
                f"{plain(span['text'][:80])}…"
            )


JSONL_BATCH = 32  # texts checked together: one index round trip, one master fetch per batch;
# a batch's fixed costs (its round trips, thread hand-offs, the batch-wide array operations)
# shared by 32 texts, not 16 (h51: -6 % of the command's CPU, 600 queries, 2 workers); small
# enough that batches spread evenly over the workers (a 600-line file: 19 batches)

Line = tuple[int, object, str | None, str | None]  # line number, id, text, error


def _open_jsonl(path: str) -> IO[bytes]:
    if path == "-":
        return sys.stdin.buffer
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read it ({exc.strerror or exc})") from None


def parse_line(raw: bytes, lineno: int, max_bytes: int) -> Line:
    """One ``--jsonl`` line as (line number, id, text, error): invalid UTF-8 and JSON, a
    missing text and an oversized line are errors, and the id is kept whenever it can be
    read."""
    if len(raw) > max_bytes:
        return lineno, None, None, f"line larger than the input limit of {max_bytes >> 20} MiB"
    try:
        line = raw.decode("utf-8")
        error = None
    except UnicodeDecodeError as exc:
        line = raw.decode("utf-8", errors="replace")
        error = f"invalid UTF-8 at byte {exc.start} (--jsonl input is UTF-8)"
    try:
        record = json_loads(line)
    except ValueError as exc:
        return lineno, None, None, error or f"invalid JSON ({getattr(exc, 'msg', exc)})"
    record_id = record.get("id") if isinstance(record, dict) else None
    if isinstance(record_id, str) and "\ufffd" in record_id and error:
        record_id = None  # the id itself holds the bad bytes
    if error is None:
        if not isinstance(record, dict):
            error = "expected a JSON object"
        elif not isinstance(record.get("text"), str):
            error = "expected a string 'text'"
        elif not record["text"].strip():
            error = "empty text"
    if error is not None:
        return lineno, record_id, None, error
    return lineno, record_id, record["text"], None


def _run_jsonl(path: str, settings: Settings, workers: int, max_bytes: int) -> int:
    """One output line per input line, in order; malformed lines get an ``error`` object.

    Batches are checked in ``workers`` processes (jieba segmentation holds the GIL, so
    threads would not help) when the input holds more than one batch; each process keeps
    its own connections and master cache, and results are printed in input order."""
    from tracker.batching import batches

    stream = _open_jsonl(path)
    errors = 0

    def lines() -> Iterator[Line]:
        nonlocal errors
        with stream:
            for lineno, raw in enumerate(stream, start=1):
                if raw.strip():
                    line = parse_line(raw, lineno, max_bytes)
                    errors += line[3] is not None
                    yield line

    pending = batches(lines(), JSONL_BATCH)
    head = list(islice(pending, 2))
    from tracker.matching.checking import CheckingService

    # Starts the embedded servers once, for all the workers, and refuses an empty library
    # before any line is answered.
    service = CheckingService(settings)
    try:
        service.ensure_masters()
        if workers <= 1 or len(head) < 2:
            _started()
            for batch in chain(head, pending):
                _print_batch(batch, _check_texts(_texts(batch), service))
            return _said(errors)
        runtime = service.runtime
        resolved = replace(settings, mongo_url=runtime.mongo_url, redis_url=runtime.redis_url)
    finally:
        service.close()  # an open MongoClient makes the interpreter's exit wait 0.3-0.7 s
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from tracker.fingerprints.simhash import simhash_text
    from tracker.text.normalize import normalize

    # Forked workers start at once with the tables and dictionaries loaded here; the
    # connections of this process are closed, so nothing is shared.
    simhash_text(normalize("预热词典").chars)
    # numpy.ma: numpy loads it on the first np.unique (~12 ms); loaded here, not in each worker.
    import numpy.ma  # noqa: F401

    if settings.rewrite_detection:  # its lexicon (~0.5 s), loaded once, not in every worker
        from tracker.fingerprints.lexicon import lexicon

        lexicon()
    _started()  # the workers are forked with everything loaded so far frozen
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
    return _said(errors)


def _said(errors: int) -> int:
    if errors:
        print(f"tracker check: {errors} line(s) not checked, see their errors", file=sys.stderr)
    return 0


def _texts(batch: list[Line]) -> list[str]:
    return [text for _, _, text, _ in batch if text is not None]


_WORKER_SERVICE: CheckingService | None = None  # in a --jsonl worker process: its own


def _start_worker(settings: Settings) -> None:
    from tracker.matching.checking import CheckingService

    global _WORKER_SERVICE
    # The parent ensured the indexes when it opened the library, just before forking.
    _WORKER_SERVICE = CheckingService(settings, indexes_ensured=True)


def _check_texts(texts: list[str], service: CheckingService | None = None) -> list[str]:
    """The JSON of each text's matches (serialised where they are found: a worker sends
    back strings, not objects)."""
    from tracker.matching.checking import dumps

    service = service or _WORKER_SERVICE
    if service is None:
        raise RuntimeError("worker not started")
    return [dumps(matches) for matches in service.check_texts(texts)]


def _print_batch(batch: list[Line], results: list[str]) -> None:
    from tracker.matching.checking import dumps

    answers = iter(results)
    for lineno, record_id, _, error in batch:
        if error is not None:
            print(dumps({"id": record_id, "line": lineno, "error": error}))
        else:
            print(f'{{"id":{dumps(record_id)},"matches":{next(answers)}}}')
    sys.stdout.flush()
