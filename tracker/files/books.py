"""A downloaded file read as books: each text member split into chapters as ``tracker
ingest`` splits a book (:func:`tracker.text.chapters.split_book`), the chapters handed on a
batch at a time so that a large archive is matched as it is read, never held whole."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO

from tracker.files.archives import Limits, Unreadable, kind_of, read_members

CHAPTER_BATCH = 32  # chapters matched together (one index round trip)


@dataclass(frozen=True)
class FileChapter:
    member: str  # the member (or file) it was read from
    number: int  # its place in the member, from 1
    title: str
    text: str


@dataclass
class FileReading:
    """What reading a file found: its identity and what it held."""

    name: str
    size: int
    sha256: str
    kind: str  # text, zip, epub, 7z, rar
    members: list[str] = field(default_factory=list)  # the text members read
    chapters: int = 0
    notes: list[str] = field(default_factory=list)  # members skipped, package gaps…

    def summary(self) -> dict:
        """What the report and the console show of the file (stored with its page)."""
        return {
            "name": self.name,
            "size": self.size,
            "sha256": self.sha256,
            "kind": self.kind,
            "members": self.members[:100],
            "chapters": self.chapters,
            "notes": self.notes[:50],
        }


def sha256_of(stream: IO[bytes]) -> tuple[str, int]:
    """The SHA-256 (hex) and size of a seekable stream, read a chunk at a time."""
    digest, size = hashlib.sha256(), 0
    stream.seek(0)
    while chunk := stream.read(1 << 20):
        digest.update(chunk)
        size += len(chunk)
    stream.seek(0)
    return digest.hexdigest(), size


def read_book_file(
    stream: IO[bytes],
    name: str,
    limits: Limits,
    on_chapters: Callable[[list[FileChapter]], None],
    batch: int = CHAPTER_BATCH,
) -> FileReading:
    """Read the file ``stream`` (named ``name``) and hand its chapters to ``on_chapters``,
    ``batch`` at a time; raises :class:`tracker.files.archives.Unreadable`."""
    from tracker.text.chapters import split_book

    sha256, size = sha256_of(stream)
    reading = FileReading(name, size, sha256, kind_of(stream.read(64), name))
    stream.seek(0)
    pending: list[FileChapter] = []

    def on_text(member: str, text: str) -> None:
        book = split_book(text)
        if not book.chapters:
            reading.notes.append(f"{member}: no text")
            return
        reading.members.append(member)
        for chapter in book.chapters:
            pending.append(FileChapter(member, chapter.number, chapter.title, chapter.text))
            reading.chapters += 1
            if len(pending) >= batch:
                on_chapters(pending[:])
                pending.clear()

    budget = read_members(stream, name, limits, on_text)
    if pending:
        on_chapters(pending)
    reading.notes.extend(budget.notes)
    if not reading.chapters:
        raise Unreadable("empty", "no text member: " + ("; ".join(budget.notes[:5]) or "empty"))
    return reading
