"""Read a downloaded file's text members, whatever the container, within limits.

One entry point, :func:`read_members`: the kind is told by the file's first bytes (its magic
number; the name only breaks a tie), and each text member is handed to ``on_text(name, text)``
as soon as it is inflated and decoded, so a large archive is never held whole: memory grows
with its largest member, not with the archive.

* **TXT**: any Chinese encoding, by the project's one decoder
  (:func:`tracker.text.encoding.decode_bytes`).
* **ZIP** (:mod:`zipfile`): member names without the UTF-8 flag (bit 11) are the archiver's
  code page, GBK for Chinese archivers; zipfile reads them as CP437, so their bytes are taken
  back and decoded as UTF-8, else GB18030, else Big5.
* **7z** (py7zr, pure Python), through a writer that counts what it is given.
* **RAR** (rarfile): headers and stored members are read by rarfile itself; a compressed
  member needs a system tool (``unrar``, ``unar`` or ``bsdtar``), and without one the file is
  unread, the reason naming the Debian packages that bring one.
* **EPUB**: a ZIP read by :mod:`tracker.files.epub`.
* An archive inside an archive is read one level deep; deeper ones are noted and skipped.

**Zip bombs.** A bomb is a small file that inflates without bound (42.zip: 42 kB to 4.5 PB
through nested archives; Fifield 2019, "A better zip bomb", overlapping members). Four guards,
all on the whole file, nested members included (:class:`Budget`):

1. the declared size of every member against ``max_inflated`` before anything is inflated;
2. the ratio inflated/compressed of a member above ``ratio_floor`` against ``max_ratio``
   (deflate cannot pass 1032:1; Chinese text compresses about 2-4:1, so 100:1 is no book);
3. the member count against ``max_members``;
4. a stream that counts the bytes really inflated and stops at ``max_inflated``, whatever the
   headers claim.

Every failure is :class:`Unreadable` with a short ``reason`` (``password``, ``bomb``,
``too_large``, ``broken``, ``truncated``, ``no_reader``, ``not_text``, ``empty``) and a
sentence for people.
"""

from __future__ import annotations

import io
import posixpath
import re
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO

from tracker.text.encoding import DecodeError, decode_bytes

#: Debian packages that bring a tool rarfile can read RAR archives with.
RAR_TOOLS_DEBIAN = "unrar (non-free), unar or libarchive-tools"
CHUNK = 1 << 20  # bytes inflated at a time

HTML_SUFFIXES = frozenset((".htm", ".html", ".xhtml"))
ARCHIVE_SUFFIXES = frozenset((".zip", ".7z", ".rar", ".epub"))
#: Members never worth inflating (the rest are tried: the decoder refuses binary data).
BINARY_SUFFIXES = frozenset(
    (
        *(".jpg", ".jpeg", ".png", ".gif", ".bmp", ".webp", ".ico", ".exe", ".apk", ".dll"),
        *(".pdf", ".mp3", ".mp4", ".avi", ".ttf", ".otf", ".woff", ".woff2", ".css", ".js"),
    )
)

_MAGIC = (
    (b"PK\x03\x04", "zip"),
    (b"PK\x05\x06", "zip"),  # an empty archive
    (b"7z\xbc\xaf\x27\x1c", "7z"),
    (b"Rar!\x1a\x07", "rar"),
)
_EPUB_MIMETYPE = b"mimetypeapplication/epub+zip"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

OnText = Callable[[str, str], None]


class Unreadable(Exception):
    """A file that cannot be read: ``reason`` is a short code, the message says why."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Limits:
    """What one downloaded file may cost (see the module doc for the guards)."""

    max_bytes: int = 100 << 20  # the file as downloaded (max_download_mb)
    max_inflated: int = 1 << 30  # every member inflated, nested ones included
    max_ratio: float = 100.0  # inflated / compressed, for a member above ratio_floor
    ratio_floor: int = 1 << 20
    max_members: int = 10_000

    @classmethod
    def for_download_mb(cls, mb: int) -> Limits:
        """The limits of ``max_download_mb``: 10 times that inflated, at least 256 MiB."""
        return cls(max_bytes=mb << 20, max_inflated=max(10 * (mb << 20), 256 << 20))


@dataclass
class Budget:
    """What a file has inflated so far, against its :class:`Limits`."""

    limits: Limits
    inflated: int = 0
    members: int = 0
    notes: list[str] = field(default_factory=list)  # members skipped, and why

    def member(self, name: str, declared: int, compressed: int | None) -> None:
        """Count a member before inflating it: guards 1 to 3 (the ratio only when the
        member's compressed size is its own: see :meth:`ratio`)."""
        limits = self.limits
        self.members += 1
        if self.members > limits.max_members:
            raise Unreadable("bomb", f"more than {limits.max_members} members: a zip bomb")
        if self.inflated + declared > limits.max_inflated:
            raise Unreadable(
                "bomb",
                f"{name} would inflate to {_size(self.inflated + declared)} in all, over the "
                f"limit of {_size(limits.max_inflated)}: a zip bomb",
            )
        if compressed is not None:
            self.ratio(name, declared, compressed)

    def ratio(self, name: str, declared: int, compressed: int) -> None:
        """Guard 2 on a member, or on a whole archive whose members are compressed together
        (a solid 7z names one compressed size for a folder of members)."""
        limits = self.limits
        if declared > limits.ratio_floor and declared > limits.max_ratio * max(compressed, 1):
            raise Unreadable(
                "bomb",
                f"{name} inflates {declared / max(compressed, 1):.0f} times "
                f"(over {limits.max_ratio:g}): a zip bomb",
            )

    def take(self, count: int) -> None:
        """Count bytes really inflated: guard 4."""
        self.inflated += count
        if self.inflated > self.limits.max_inflated:
            raise Unreadable(
                "bomb",
                f"inflated past the limit of {_size(self.limits.max_inflated)}: a zip bomb",
            )


def kind_of(head: bytes, name: str = "") -> str:
    """``zip``, ``epub``, ``7z``, ``rar`` or ``text``, from a file's first bytes (60 or so)."""
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            if kind == "zip" and (head[30:58] == _EPUB_MIMETYPE or name.lower().endswith(".epub")):
                return "epub"
            return kind
    return "text"


def read_members(
    stream: IO[bytes],
    name: str,
    limits: Limits,
    on_text: OnText,
    budget: Budget | None = None,
    depth: int = 0,
) -> Budget:
    """Hand every text member of the file ``stream`` (seekable, named ``name``) to
    ``on_text(member name, text)``; a plain text file is its own one member. Returns the
    :class:`Budget` (with notes on skipped members); raises :class:`Unreadable`."""
    budget = budget or Budget(limits)
    head = stream.read(64)
    stream.seek(0)
    kind = kind_of(head, name)
    if kind == "text":
        data = stream.read(limits.max_bytes + 1)
        if len(data) > limits.max_bytes:
            raise Unreadable("too_large", f"over the limit of {_size(limits.max_bytes)}")
        on_text(name, _text(data, name))
        return budget
    reader = {"zip": _read_zip, "epub": _read_epub, "7z": _read_7z, "rar": _read_rar}[kind]
    reader(stream, name, budget, on_text, depth)
    return budget


# ------------------------------------------------------------------------------------ ZIP


def zip_member_name(info: zipfile.ZipInfo) -> str:
    """The member's name as its archiver meant it: without the UTF-8 flag, the raw bytes
    (which zipfile read as CP437) decoded as UTF-8, GB18030 or Big5, the first that fits."""
    if info.flag_bits & 0x800:
        return info.filename
    raw = info.orig_filename.encode("cp437", errors="replace")
    for encoding in ("utf-8", "gb18030", "big5"):
        try:
            return raw.decode(encoding)
        except UnicodeDecodeError:
            continue
    return info.filename


def open_zip(stream: IO[bytes], name: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(stream)
    except zipfile.BadZipFile as exc:
        raise Unreadable("truncated", f"not a whole ZIP archive ({exc}): cut short?") from None
    except (OSError, ValueError, EOFError) as exc:
        raise Unreadable("broken", f"a broken ZIP archive ({exc})") from None


def zip_members(archive: zipfile.ZipFile, budget: Budget) -> list[tuple[zipfile.ZipInfo, str]]:
    """The archive's file members and their names, after guards 1 to 3 and the password
    check (an encrypted member makes the whole file unread: it hides what it holds)."""
    members = []
    for info in archive.infolist():
        if info.is_dir():
            continue
        member = label(zip_member_name(info))
        if info.flag_bits & 0x1:
            raise Unreadable("password", f"password-protected ({member} is encrypted)")
        budget.member(member, info.file_size, info.compress_size)
        members.append((info, member))
    return members


def read_zip_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: Budget) -> bytes:
    """A member inflated through the counting stream (guard 4)."""
    member = label(zip_member_name(info))
    out = io.BytesIO()
    try:
        with archive.open(info) as fh:
            while chunk := fh.read(CHUNK):
                budget.take(len(chunk))
                out.write(chunk)
    except Unreadable:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as exc:
        raise Unreadable("broken", f"a broken member {member} ({exc})") from None
    except NotImplementedError as exc:  # a compression method zipfile does not have
        raise Unreadable("broken", f"{member}: {exc}") from None
    return out.getvalue()


def _read_zip(stream: IO[bytes], name: str, budget: Budget, on_text: OnText, depth: int) -> None:
    with open_zip(stream, name) as archive:
        for info, member in zip_members(archive, budget):
            if _wanted(member, depth, budget):
                _member(read_zip_member(archive, info, budget), member, budget, on_text, depth)


def _read_epub(stream: IO[bytes], name: str, budget: Budget, on_text: OnText, depth: int) -> None:
    from tracker.files.epub import epub_text

    with open_zip(stream, name) as archive:
        members = dict((member, info) for info, member in zip_members(archive, budget))
        text, notes = epub_text(
            members, lambda member: read_zip_member(archive, members[member], budget)
        )
    budget.notes.extend(f"{name}: {note}" for note in notes)
    on_text(name, text)


# ------------------------------------------------------------------------------------- 7z


def _read_7z(stream: IO[bytes], name: str, budget: Budget, on_text: OnText, depth: int) -> None:
    import py7zr
    from py7zr.exceptions import ArchiveError, PasswordRequired
    from py7zr.io import Py7zIO, WriterFactory

    class Counting(Py7zIO):
        """A member inflated into memory, counted as it comes (guard 4), handed on when
        py7zr closes it."""

        def __init__(self, member: str) -> None:
            self.member = member
            self.buffer = io.BytesIO()

        def write(self, data: bytes | bytearray) -> int:
            budget.take(len(data))
            return self.buffer.write(data)

        def read(self, size: int | None = None) -> bytes:
            return self.buffer.read(size)

        def seek(self, offset: int, whence: int = 0) -> int:
            return self.buffer.seek(offset, whence)

        def flush(self) -> None:
            pass

        def size(self) -> int:
            return self.buffer.getbuffer().nbytes

        def close(self) -> None:
            data, self.buffer = self.buffer.getvalue(), io.BytesIO()
            _member(data, self.member, budget, on_text, depth)

    class Members(WriterFactory):
        def create(self, filename: str) -> Py7zIO:
            return Counting(label(filename))

    try:
        with py7zr.SevenZipFile(stream, mode="r") as archive:
            if archive.needs_password():
                raise Unreadable("password", "password-protected 7z archive")
            wanted, declared = [], 0
            for info in archive.list():
                if info.is_directory:
                    continue
                member = label(info.filename)
                declared += info.uncompressed or 0
                budget.member(member, info.uncompressed or 0, None)
                if _wanted(member, depth, budget):
                    wanted.append(info.filename)
            stream.seek(0, io.SEEK_END)
            budget.ratio(name, declared, stream.tell())  # solid: one ratio for the archive
            if wanted:
                archive.extract(targets=wanted, factory=Members())
    except Unreadable:
        raise
    except PasswordRequired:
        raise Unreadable("password", "password-protected 7z archive (encrypted headers)") from None
    except (ArchiveError, EOFError, OSError, ValueError, KeyError, IndexError) as exc:
        reason = "truncated" if isinstance(exc, EOFError) else "broken"
        raise Unreadable(reason, f"a broken 7z archive ({exc or type(exc).__name__})") from None


# ------------------------------------------------------------------------------------ RAR


def _read_rar(stream: IO[bytes], name: str, budget: Budget, on_text: OnText, depth: int) -> None:
    """rarfile reads the headers, and a stored member, itself; a compressed member needs a
    tool (its RarCannotExec: the file is unread, ``no_reader``, naming the packages)."""
    import rarfile

    try:
        with rarfile.RarFile(stream) as archive:
            if archive.needs_password():
                raise Unreadable("password", "password-protected RAR archive")
            for info in archive.infolist():
                if info.is_dir():
                    continue
                member = label(info.filename)
                if info.needs_password():
                    raise Unreadable("password", f"password-protected ({member} is encrypted)")
                budget.member(member, info.file_size, info.compress_size)
                if not _wanted(member, depth, budget):
                    continue
                out = io.BytesIO()
                with archive.open(info) as fh:
                    while chunk := fh.read(CHUNK):
                        budget.take(len(chunk))
                        out.write(chunk)
                _member(out.getvalue(), member, budget, on_text, depth)
    except Unreadable:
        raise
    except rarfile.RarCannotExec:
        raise Unreadable(
            "no_reader",
            f"a compressed RAR archive, and no RAR reader is installed "
            f"(Debian: {RAR_TOOLS_DEBIAN})",
        ) from None
    except rarfile.PasswordRequired:
        raise Unreadable("password", "password-protected RAR archive") from None
    except (rarfile.Error, EOFError, OSError) as exc:
        raise Unreadable("broken", f"a broken RAR archive ({exc})") from None


# ---------------------------------------------------------------------------------- shared


def label(name: str) -> str:
    """A member's name fit to show (control characters dropped): a label, never a path."""
    return _CONTROL.sub("", name)[:300]


def _suffix(member: str) -> str:
    return posixpath.splitext(member.lower())[1]


def _wanted(member: str, depth: int, budget: Budget) -> bool:
    """Whether a member is worth inflating: a text, a web page or an archive (one level)."""
    suffix = _suffix(member)
    if suffix in ARCHIVE_SUFFIXES:
        if depth >= 1:
            budget.notes.append(f"{member}: an archive nested deeper than one level, not read")
            return False
        return True
    if suffix in BINARY_SUFFIXES:
        budget.notes.append(f"{member}: not a text, not read")
        return False
    return True


def _member(data: bytes, member: str, budget: Budget, on_text: OnText, depth: int) -> None:
    """An inflated member: an archive read one level down, else decoded and handed on."""
    if kind_of(data[:64], member) != "text" or _suffix(member) in ARCHIVE_SUFFIXES:
        if depth >= 1:
            budget.notes.append(f"{member}: an archive nested deeper than one level, not read")
            return
        inner = io.BytesIO(data)
        del data

        def named(name: str, text: str) -> None:  # "outer.zip/inner.txt": a label
            on_text(f"{member}/{name}" if name != member else member, text)

        read_members(inner, member, budget.limits, named, budget, depth + 1)
        return
    try:
        text = _text(data, member)
    except Unreadable as exc:
        budget.notes.append(f"{member}: {exc}")
        return
    if _suffix(member) in HTML_SUFFIXES:
        from tracker.files.epub import html_text

        text = html_text(data)
    on_text(member, text)


def _text(data: bytes, name: str) -> str:
    try:
        text, _ = decode_bytes(data)
    except DecodeError as exc:
        raise Unreadable("not_text", f"{name}: not a text ({exc})") from None
    if not text.strip():
        raise Unreadable("empty", f"{name}: an empty text")
    return text


def _size(count: int) -> str:
    return f"{count / (1 << 20):,.0f} MiB"
