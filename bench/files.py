"""Download files read as books (issue 35): files per minute, and the peak memory while a
100 MB archive is read.

``python -m bench.files [--mb 100] [--books 40]``

* **Files per minute**: ``--books`` whole books (40 chapters of ~3,000 characters, ~120k
  characters, as TXT-download sites serve a novel's first volumes) as a GBK TXT, a ZIP with a
  GBK member name, a 7z and an EPUB, each read and split into chapters by
  :func:`tracker.files.books.read_book_file` (the file stage's work before matching).
* **Files per minute, matched**: the same files, every chapter also matched against a library
  holding the book (``--matched-books`` of each kind; embedded servers in a temporary data
  directory), as :mod:`pipelines.files` matches them.
* **Peak memory**: a ZIP of ``--mb`` MB (members of ~1.3 MB of GBK text that barely
  compress) read from disk in a fresh process, the reader against the baseline of reading
  the same archive held whole (the file and every member in memory first, as
  ``ZipFile.read`` in a loop would): the peak resident size (``VmHWM``, reset through
  ``/proc/self/clear_refs``) above the resident size before reading, both in the same run.

Writes ``bench/results/files.json`` and ``files.md``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from bench.output import write_result

RESULTS = Path(__file__).parent / "results"


def _book(seed: int, chapters: int = 40, chars: int = 3000) -> str:
    """A book of random common characters (cheap to make, compresses ~1.3:1 in GBK)."""
    rng = random.Random(seed)
    common = [chr(c) for c in range(0x4E00, 0x9FA5) if _gbk(chr(c))][:3500]
    parts = [f"《测速书{seed}》\n"]
    for n in range(1, chapters + 1):
        body = "".join(rng.choices(common, k=chars))
        lines = "\n".join(body[i : i + 60] + "。" for i in range(0, chars, 60))
        parts.append(f"第{n}章 第{n}回\n\n{lines}\n")
    return "\n".join(parts)


def _gbk(char: str) -> bool:
    try:
        char.encode("gbk")
    except UnicodeEncodeError:
        return False
    return True


def files_per_minute(books: int) -> dict:
    from tests.files_site import epub, gbk_zip, seven_zip
    from tracker.files.archives import Limits
    from tracker.files.books import read_book_file
    from tracker.model import MasterDocument

    text = _book(1)
    data = text.encode("gbk")
    chapters = [
        MasterDocument(f"b/{k}", "b", f"第{k}章", part)
        for k, part in enumerate(text.split("\n第")[1:], start=1)
    ]
    files = {
        "txt": data,
        "zip": gbk_zip({"测速书.txt": data}),
        "7z": seven_zip({"测速书.txt": data}),
        "epub": epub("测速书", chapters),
    }
    result = {}
    for kind, body in files.items():
        found = []
        start = time.perf_counter()
        for _ in range(books):
            found.clear()
            read_book_file(io.BytesIO(body), f"测速书.{kind}", Limits(), found.extend)
        elapsed = time.perf_counter() - start
        result[kind] = {
            "files": books,
            "bytes": len(body),
            "chapters": len(found),
            "seconds": round(elapsed, 3),
            "files_per_minute": round(60 * books / elapsed, 1),
        }
    return result


def files_per_minute_matched(books: int) -> dict:
    """As :func:`files_per_minute`, every chapter also matched (as the file stage does it:
    ``CHAPTER_BATCH`` chapters a call of the detector) against a library holding the book,
    on embedded servers in a temporary data directory."""
    from tests.files_site import epub, gbk_zip, seven_zip
    from tracker.config import Settings
    from tracker.files.archives import Limits
    from tracker.files.books import read_book_file
    from tracker.matching.library import MasterLibrary
    from tracker.model import MasterDocument
    from tracker.servers import services
    from tracker.servers.runtime import Runtime
    from tracker.text.chapters import split_book

    text = _book(2)
    data = text.encode("gbk")
    masters = [
        MasterDocument(f"测速书/{c.number:04d}", "测速书", c.title, c.text)
        for c in split_book(text).chapters
    ]
    files = {
        "txt": data,
        "zip": gbk_zip({"测速书.txt": data}),
        "7z": seven_zip({"测速书.txt": data}),
        "epub": epub("测速书", masters),
    }
    result = {}
    with tempfile.TemporaryDirectory(prefix="tracker-bench-files-") as tmp:
        settings = Settings(data_dir=Path(tmp))
        runtime = Runtime(settings)
        try:
            library = MasterLibrary.from_runtime(runtime)
            library.ingest(masters)
            detector = library.detector(settings)
            detector.check_many([masters[0].text])  # the index's tables loaded
            matched: set[str] = set()

            def match(chapters: list) -> None:
                for found in detector.check_many([c.text for c in chapters]):
                    matched.update(m.doc_id for m in found)

            for kind, body in files.items():
                start = time.perf_counter()
                for _ in range(books):
                    matched.clear()
                    read_book_file(io.BytesIO(body), f"测速书.{kind}", Limits(), match)
                elapsed = time.perf_counter() - start
                result[kind] = {
                    "files": books,
                    "chapters_matched": len(matched),
                    "seconds": round(elapsed, 3),
                    "files_per_minute": round(60 * books / elapsed, 1),
                }
        finally:
            runtime.close()
            services.stop(settings)
    return result


def build_archive(path: Path, mb: int) -> dict:
    """A ZIP of about ``mb`` MB: members of ~4 MB of GBK text (each a different book)."""
    written, members, seed = 0, 0, 100
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        while written < mb << 20:
            archive.writestr(f"第{members + 1}卷.txt", _book(seed, 40, 16_000).encode("gbk"))
            written = archive.fp.tell()
            members += 1
            seed += 1
    return {"bytes": path.stat().st_size, "members": members}


def _measure(path: str, mode: str) -> dict:
    """In a fresh process: the peak resident size above the size before reading."""
    import tracker.text.chapters  # noqa: F401  loaded before the baseline, as in a crawl
    from tracker.files.archives import Limits
    from tracker.files.books import read_book_file

    Path("/proc/self/clear_refs").write_text("5")  # the peak (VmHWM) starts again from here
    before = _status("VmRSS")
    start = time.perf_counter()
    chapters = [0]

    def count(batch: list) -> None:
        chapters[0] += len(batch)

    limits = Limits.for_download_mb(1 + (os.path.getsize(path) >> 20))
    if mode == "streamed":
        with open(path, "rb") as fh:
            read_book_file(fh, "bench.zip", limits, count)
    else:  # held whole: the file and every member in memory, then split
        from tracker.text.chapters import split_book
        from tracker.text.encoding import decode_bytes

        data = Path(path).read_bytes()
        archive = zipfile.ZipFile(io.BytesIO(data))
        texts = [decode_bytes(archive.read(info))[0] for info in archive.infolist()]
        chapters[0] = sum(len(split_book(text).chapters) for text in texts)
    peak = _status("VmHWM")
    return {
        "mode": mode,
        "peak_mb_above_start": round((peak - before) / 1024, 1),
        "seconds": round(time.perf_counter() - start, 2),
        "chapters": chapters[0],
    }


def _status(field: str) -> int:
    """A size from /proc/self/status, in kB (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def peak_memory(mb: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.zip"
        archive = build_archive(path, mb)
        runs = {}
        for mode in ("streamed", "whole"):
            out = subprocess.run(
                [sys.executable, "-m", "bench.files", "--measure", str(path), mode],
                check=True,
                capture_output=True,
                text=True,
                env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)},
            ).stdout
            runs[mode] = json.loads(out.strip().splitlines()[-1])
    return {"archive": archive, **runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--books", type=int, default=40)
    parser.add_argument("--matched-books", type=int, default=10)
    parser.add_argument("--measure", nargs=2, metavar=("PATH", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(_measure(*args.measure)))
        return
    load = os.getloadavg()
    speed = files_per_minute(args.books)
    matched = files_per_minute_matched(args.matched_books)
    memory = peak_memory(args.mb)
    result = {
        "load": [round(x, 2) for x in load],
        "files": speed,
        "files_matched": matched,
        "memory": memory,
    }
    rows = "\n".join(
        f"| {kind} | {r['bytes']:,} | {r['chapters']} | {r['files_per_minute']:,} "
        f"| {matched[kind]['files_per_minute']:,} ({matched[kind]['chapters_matched']} of "
        f"{r['chapters']} chapters) |"
        for kind, r in speed.items()
    )
    streamed, whole = memory["streamed"], memory["whole"]
    ratio = whole["peak_mb_above_start"] / max(streamed["peak_mb_above_start"], 0.1)
    markdown = (
        f"Load average at start: {load[0]:.2f} (2 cores, shared).\n\n"
        "| File | Bytes | Chapters | Files per minute, read and split | Read, split and matched |\n"
        "|---|---|---|---|---|\n"
        f"{rows}\n\n"
        f"A {memory['archive']['bytes'] / (1 << 20):.0f} MB ZIP "
        f"({memory['archive']['members']} members, {streamed['chapters']:,} chapters) read from "
        f"disk: peak memory {streamed['peak_mb_above_start']} MB above the process's start "
        f"streamed ({streamed['seconds']} s), {whole['peak_mb_above_start']} MB held whole "
        f"({whole['seconds']} s): {ratio:.1f} times less.\n"
    )
    write_result(RESULTS / "files.json", result, markdown)


if __name__ == "__main__":
    main()
