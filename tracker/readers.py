"""Read master documents from files: ``.txt`` books split into chapters, ``.jsonl`` records,
and directories of those."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

from tracker.model import MasterDocument
from tracker.text.chapters import split_chapters
from tracker.text.encoding import DecodeError, decode_bytes

SUPPORTED = (".txt", ".jsonl")
MAX_FILE_BYTES = 512 * 1024 * 1024


class InputError(ValueError):
    """A master file is malformed; the message names the file (and line)."""


def iter_files(paths: list[str | os.PathLike]) -> Iterator[Path]:
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                if child.is_file() and child.suffix.lower() in SUPPORTED:
                    yield child
        elif path.is_file():
            if path.suffix.lower() not in SUPPORTED:
                raise InputError(f"{path}: unsupported file type (expected .txt or .jsonl)")
            yield path
        else:
            raise InputError(f"{path}: no such file or directory")


def read_documents(path: Path) -> Iterator[MasterDocument]:
    if path.stat().st_size > MAX_FILE_BYTES:
        raise InputError(f"{path}: larger than {MAX_FILE_BYTES >> 20} MiB")
    if path.suffix.lower() == ".jsonl":
        yield from read_jsonl(path)
    else:
        yield from read_book(path)


def read_book(path: Path, work: str | None = None) -> Iterator[MasterDocument]:
    try:
        text, _ = decode_bytes(path.read_bytes())
    except DecodeError as exc:
        raise InputError(f"{path}: {exc}") from None
    work = work or path.stem
    chapters = split_chapters(text)
    if not chapters:
        raise InputError(f"{path}: empty text")
    for chapter in chapters:
        yield MasterDocument(
            doc_id=f"{work}/{chapter.number:04d}",
            work=work,
            title=chapter.title,
            text=chapter.text,
            source=str(path),
        )


def read_jsonl(path: Path) -> Iterator[MasterDocument]:
    try:
        raw_text, _ = decode_bytes(path.read_bytes())
    except DecodeError as exc:
        raise InputError(f"{path}: {exc}") from None
    for lineno, line in enumerate(raw_text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{lineno}: invalid JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise InputError(f"{path}:{lineno}: expected a JSON object")
        missing = [k for k in ("id", "text") if not record.get(k)]
        if missing:
            raise InputError(f"{path}:{lineno}: missing or empty field(s): {', '.join(missing)}")
        if not isinstance(record["text"], str):
            raise InputError(f"{path}:{lineno}: field 'text' must be a string")
        doc_id = str(record["id"])
        yield MasterDocument(
            doc_id=doc_id,
            work=str(record.get("work") or doc_id),
            title=str(record.get("title") or doc_id),
            text=record["text"],
            source=f"{path}:{lineno}",
        )
