"""The evidence's WARC files (ISO 28500:2017, WARC/1.1, written and read by warcio).

Layout: ``<evidence_dir>/warc/YYYY-MM-DD/tracker-<UTC time>-<host>-<pid>-<n>.warc.gz``, one file
per UTC day per crawl process, opened with a ``warcinfo`` record. Each page part is a
``response`` record and its ``request`` record (``WARC-Concurrent-To`` the response), each its own
gzip member, so a record can be read by its offset and length alone, as export does, without
scanning the file.

Why a crash cannot corrupt a file: records are appended with one ``write`` per batch of pages to
a file no other process writes, then ``fsync``'ed before :meth:`EvidenceWriter.write` returns,
and the crawl stores a page's match (naming the records' offsets) only after that. A process
killed mid-write leaves at most a torn member at the end of its own file, after the last records
any stored match names; the next process writes a new file. Digests are SHA-256
(``WARC-Block-Digest``, ``WARC-Payload-Digest``, base32 as WARC tools write them).
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import socket
import threading
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders, StatusAndHeadersParser
from warcio.utils import Digester
from warcio.warcwriter import WARCWriter

import tracker
from tracker.enforcement.capture import Exchange, mask_url

WARC_VERSION = "WARC/1.1"

#: zlib's default level (gzip's), not warcio's 9: on the saved real news pages (116 KB of HTML
#: on average) a third less CPU (2.0 against 3.1 ms a page) for 0.7 % more bytes; on the
#: bench's chapter pages (12 KB) both cost the same. Levels 1–3 would halve the CPU again but
#: make the files 10–16 % larger.
GZIP_LEVEL = 6


def evidence_dir(settings: Any) -> Path:
    """Where the evidence lives: ``evidence_dir``, else ``<data_dir>/evidence``. A crawl fleet
    shares it (a network file system) with the machines that export."""
    return (
        Path(settings.evidence_dir).expanduser()
        if settings.evidence_dir
        else (Path(settings.data_dir) / "evidence")
    )


@dataclass(frozen=True)
class RecordRef:
    """Where one record is: its file (relative to the evidence directory), offset and length
    in bytes (the gzip member), with its WARC-Record-ID and type."""

    file: str
    offset: int
    length: int
    record_id: str
    type: str

    def to_dict(self) -> dict[str, Any]:
        # Its fields named one by one: ``dataclasses.asdict`` recurses and copies (~40 µs a
        # reference against ~1.5), and a crawl's evidence stage makes two of every page's.
        return {
            "file": self.file,
            "offset": self.offset,
            "length": self.length,
            "record_id": self.record_id,
            "type": self.type,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RecordRef:
        return cls(
            str(data["file"]),
            int(data["offset"]),
            int(data["length"]),
            str(data["record_id"]),
            str(data["type"]),
        )


class _Sha256Writer(WARCWriter):
    """warcio's writer with SHA-256 digests (it uses SHA-1 by default)."""

    @staticmethod
    def _create_digester() -> Digester:
        return Digester("sha256")


def sha256_base32(data: bytes) -> str:
    """A digest as WARC headers write it: ``sha256:BASE32``."""
    return _base32(hashlib.sha256(data).digest())


def _base32(digest: bytes) -> str:
    return "sha256:" + base64.b32encode(digest).decode("ascii")


def warc_date(at: float) -> str:
    """WARC-Date with microseconds (WARC/1.1 allows fractions of a second)."""
    moment = datetime.fromtimestamp(at, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class _GzipMember:
    """One gzip member at :data:`GZIP_LEVEL` written to ``out`` (warcio's ``GzippingWrapper``
    at another level): warcio writes a record through it and ``flush`` ends the member."""

    def __init__(self, out: io.BytesIO) -> None:
        self.out = out
        self.compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, zlib.MAX_WBITS + 16)

    def write(self, data: bytes) -> None:
        self.out.write(self.compressor.compress(data))

    def flush(self) -> None:
        self.out.write(self.compressor.flush())


class _Records:
    """Records written one after another into one buffer by one warcio writer, each its own
    gzip member; :meth:`add` returns the offsets of the member it wrote."""

    def __init__(self) -> None:
        self.buffer = io.BytesIO()
        # warcio's own gzip is level 9: each record goes through a member of ours instead
        self.writer = _Sha256Writer(self.buffer, gzip=False, warc_version=WARC_VERSION)

    def add(self, record: Any) -> tuple[int, int]:
        start = self.buffer.tell()
        self.writer.out = _GzipMember(self.buffer)
        self.writer.write_record(record)
        return start, self.buffer.tell()


def _add_exchange(
    records: _Records, exchange: Exchange
) -> tuple[tuple[int, int], tuple[int, int], str, str]:
    """Write ``exchange``'s response and request records; their spans and ids."""
    writer = records.writer
    uri = mask_url(exchange.url)
    status = f"{exchange.status} {_reason(exchange.status)}".strip()
    response_headers = StatusAndHeaders(
        status, list(exchange.response_headers), protocol=exchange.protocol
    )
    warc_headers = {"WARC-Date": warc_date(exchange.at)}
    if exchange.ip:
        warc_headers["WARC-IP-Address"] = exchange.ip
    response_id = StatusAndHeadersParser.make_warc_id()
    # The headers in the order warcio writes them; the payload digest the exchange's own
    # (computed once, and read again for the capture document), not warcio's second hash.
    own = {
        "WARC-Type": "response",
        "WARC-Record-ID": response_id,
        "WARC-Target-URI": uri,
        "WARC-Payload-Digest": _base32(exchange.digest),
    }
    response = writer.create_warc_record(
        uri,
        "response",
        payload=io.BytesIO(exchange.body),
        length=len(exchange.body),
        http_headers=response_headers,
        warc_headers_dict={**warc_headers, **own},
    )
    response_span = records.add(response)

    path = _request_target(exchange.url)
    request_headers = StatusAndHeaders(
        f"{exchange.method} {path} {exchange.protocol}",
        list(exchange.request_headers),
        is_http_request=True,
    )
    request = writer.create_warc_record(
        uri,
        "request",
        payload=io.BytesIO(b""),
        length=0,
        http_headers=request_headers,
        warc_headers_dict={**warc_headers, "WARC-Concurrent-To": response_id},
    )
    request_span = records.add(request)
    request_id = request.rec_headers.get_header("WARC-Record-ID")
    return response_span, request_span, response_id, request_id


def _request_target(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


@lru_cache(maxsize=64)
def _reason(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


class EvidenceWriter:
    """The crawl process's WARC writer: thread-safe, one file per UTC day (see the module doc).

    :meth:`write` appends the records of a batch of pages and syncs them; it returns, for each
    page, the references of its records in the order response, request per part."""

    def __init__(self, directory: Path, *, clock: Any = None) -> None:
        self.directory = Path(directory)
        self.clock = clock or (lambda: datetime.now(UTC))
        self._lock = threading.Lock()
        self._day: str | None = None
        self._fd: int | None = None
        self._file: str = ""
        self._offset = 0
        self._serial = 0
        self.records = 0
        self.bytes = 0

    def write(self, pages: list[list[Exchange]]) -> list[list[RecordRef]]:
        """Append the records of ``pages`` (each a list of exchanges), synced to disk."""
        records = _Records()
        built = [[_add_exchange(records, exchange) for exchange in page] for page in pages]
        data = records.buffer.getvalue()
        with self._lock:
            self._open(self.clock().strftime("%Y-%m-%d"))
            refs: list[list[RecordRef]] = []
            offset = self._offset
            for page in built:
                page_refs = []
                for response_span, request_span, response_id, request_id in page:
                    for (start, end), record_id, kind in (
                        (response_span, response_id, "response"),
                        (request_span, request_id, "request"),
                    ):
                        ref = RecordRef(self._file, offset + start, end - start, record_id, kind)
                        page_refs.append(ref)
                refs.append(page_refs)
            self._append(data)
            self.records += sum(len(r) for r in refs)
            return refs

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def _open(self, day: str) -> None:
        if self._fd is not None and day == self._day:
            return
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        folder = self.directory / "warc" / day
        folder.mkdir(parents=True, exist_ok=True)
        stamp = self.clock().strftime("%Y%m%dT%H%M%S")
        host = socket.gethostname().replace("-", "_") or "host"
        while True:
            self._serial += 1
            name = f"tracker-{stamp}-{host}-{os.getpid()}-{self._serial}.warc.gz"
            try:
                flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL
                fd = os.open(folder / name, flags, 0o640)
                break
            except FileExistsError:
                continue
        self._fd, self._day, self._offset = fd, day, 0
        self._file = f"warc/{day}/{name}"
        _sync_directory(folder)
        self._append(_warcinfo(name))

    def _append(self, data: bytes) -> None:
        assert self._fd is not None
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        os.fsync(self._fd)
        self._offset += len(data)
        self.bytes += len(data)


def _warcinfo(name: str) -> bytes:
    records = _Records()
    info = {
        "software": f"tracker/{tracker.__version__} (warcio)",
        "format": "WARC File Format 1.1",
        "conformsTo": "https://iso.org/standard/68004.html",
        "hostname": socket.gethostname(),
        "description": "evidence of pages found to copy a master library",
    }
    records.add(records.writer.create_warcinfo_record(name, info))
    return records.buffer.getvalue()


def _sync_directory(folder: Path) -> None:
    """Make a new file's directory entry durable (a synced file in a lost entry is lost)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# ------------------------------------------------------------------------------------ reading


class RecordError(ValueError):
    """A record is missing or does not read as WARC where its reference says."""


def read_member(directory: Path, ref: RecordRef) -> bytes:
    """The bytes of the gzip member ``ref`` names (its record, compressed)."""
    path = Path(directory) / ref.file
    try:
        with path.open("rb") as fh:
            fh.seek(ref.offset)
            data = fh.read(ref.length)
    except FileNotFoundError:
        raise RecordError(f"WARC file {path} is missing") from None
    except OSError as exc:
        raise RecordError(f"cannot read WARC file {path}: {exc.strerror or exc}") from None
    if len(data) != ref.length:
        raise RecordError(f"WARC file {path} is shorter than the record at offset {ref.offset}")
    return data


@dataclass(frozen=True)
class ParsedRecord:
    """A record read back: its type, WARC headers, HTTP status and headers, payload."""

    type: str
    record_id: str
    target_uri: str
    warc_headers: dict[str, str]
    status: int | None
    http_headers: list[tuple[str, str]]
    payload: bytes
    offset: int
    length: int


def parse_records(data: bytes) -> list[ParsedRecord]:
    """Every record in ``data`` (a WARC file's bytes), with their digests checked against the
    ``WARC-Block-Digest`` and ``WARC-Payload-Digest`` headers (a mismatch raises
    :class:`RecordError`)."""
    records = []
    try:
        iterator = ArchiveIterator(io.BytesIO(data), check_digests="raise")
        for record in iterator:
            payload = record.raw_stream.read()  # as stored: not decoded
            http = record.http_headers
            status = None
            if http is not None and record.rec_type == "response":
                status = int(http.get_statuscode() or 0)
            records.append(
                ParsedRecord(
                    type=record.rec_type,
                    record_id=record.rec_headers.get_header("WARC-Record-ID") or "",
                    target_uri=record.rec_headers.get_header("WARC-Target-URI") or "",
                    warc_headers=dict(record.rec_headers.headers),
                    status=status,
                    http_headers=list(http.headers) if http is not None else [],
                    payload=payload,
                    offset=iterator.get_record_offset(),
                    length=iterator.get_record_length(),
                )
            )
    except RecordError:
        raise
    except Exception as exc:  # warcio raises many kinds: a torn or altered file
        raise RecordError(f"not a valid WARC: {exc}") from None
    return records
