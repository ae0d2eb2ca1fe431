"""Evidence bundles: what ``tracker evidence export`` writes and ``tracker evidence verify``
checks.

A bundle is a folder a legal team can hand on, self-contained:

``manifest.json``
    What was captured and how to check it: the URL (a password in it masked), when it was
    fetched, the HTTP status, the request headers sent (cookies left out) and the response
    headers, the resolved IP address and the User-Agent, the payload's SHA-256 and length, the
    WARC file's name, SHA-256 and records (type, id, offset, length), the screenshot's when one
    was taken, the master documents the page copies with the evidence passages, and the
    tracker's version. It is made from the capture alone (no export time in it), so every
    export of a capture writes the same bytes; the first one made is kept with the capture.
``capture-ID.warc.gz``
    The page's WARC records as the crawl wrote them (a response and its request per part),
    copied byte for byte from the day's WARC file: the body exactly as served.
``screenshot.png``
    When one was taken (``evidence_screenshots``).
``timestamp.tsr``
    An RFC 3161 time-stamp response over ``manifest.json``, from ``tsa_url``: ``openssl ts
    -verify -data manifest.json -in timestamp.tsr -CAfile TSA-CA.pem`` accepts it. The first
    token obtained is kept with the capture (the earlier proof) and written by every later
    export. Without ``tsa_url`` the bundle has none; when the TSA fails the stamp is *pending*:
    ``tracker evidence stamp --pending`` (or the next export, or the scheduler's daily
    ``takedown`` job) asks again, and the next export writes it.
``README.txt``
    What the files are and how to check them (not part of the evidence).

:func:`verify_bundle` recomputes every hash, reads the WARC records (their own digests
checked), compares them with the manifest, and verifies the token over the manifest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tracker.enforcement.capture import mask_url
from tracker.enforcement.timestamp import TsaError, stamp, verify_token
from tracker.enforcement.warc import RecordError, RecordRef, parse_records, read_member
from tracker.stores.evidence import STAMPED, CaptureStore

FORMAT = "tracker-evidence-bundle/1"
MANIFEST = "manifest.json"
TOKEN = "timestamp.tsr"
SCREENSHOT = "screenshot.png"
README = "README.txt"
#: Request headers that are the crawl's session at the site, not evidence: kept in the WARC as
#: sent, left out of the manifest.
SESSION_HEADERS = frozenset({"cookie"})


class EvidenceError(RuntimeError):
    """No capture of the URL, or its records cannot be read: nothing to export."""


def warc_name(capture: dict[str, Any]) -> str:
    return f"capture-{capture['_id']}.warc.gz"


def _iso(moment: Any) -> str | None:
    if not isinstance(moment, datetime):
        return None
    utc = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return utc.isoformat(timespec="milliseconds")


def _records(capture: dict[str, Any]) -> list[RecordRef]:
    return [RecordRef.from_dict(ref) for part in capture["parts"] for ref in part["records"]]


def load_records(directory: Path, capture: dict[str, Any]) -> bytes:
    """The capture's WARC records, copied from the day's file (each a gzip member), checked:
    they read as WARC with intact digests and their payloads are the ones captured."""
    try:
        data = b"".join(read_member(directory, ref) for ref in _records(capture))
    except RecordError as exc:
        raise EvidenceError(f"the evidence of capture {capture['_id']}: {exc}") from None
    try:
        records = parse_records(data)
    except RecordError as exc:
        message = f"the WARC records of capture {capture['_id']} are damaged: {exc}"
        raise EvidenceError(message) from None
    responses = [record for record in records if record.type == "response"]
    digests = [hashlib.sha256(record.payload).hexdigest() for record in responses]
    if digests != [part["sha256"] for part in capture["parts"]]:
        raise EvidenceError(
            f"the WARC records of capture {capture['_id']} do not hold the payload captured"
        )
    return data


def manifest_bytes(capture: dict[str, Any], warc: bytes, screenshot: bytes | None) -> bytes:
    """``manifest.json`` of a capture (see the module doc), deterministic."""
    records = parse_records(warc)
    refs = _records(capture)
    offset = 0
    listed = []
    for record, ref in zip(records, refs, strict=True):
        listed.append(
            {
                "type": record.type,
                "record_id": record.record_id,
                "target_uri": record.target_uri,
                "offset": offset,
                "length": ref.length,
            }
        )
        offset += ref.length
    first = capture["parts"][0]
    manifest = {
        "format": FORMAT,
        "capture_id": capture["_id"],
        "url": mask_url(capture["url"]),
        "site": capture.get("site"),
        "fetched_at": _iso(capture["at"]),
        "status": capture["status"],
        "resolved_ip": first.get("ip"),
        "user_agent": first.get("user_agent"),
        "request_headers": {
            name: value
            for name, value in (first.get("request_headers") or {}).items()
            if name.lower() not in SESSION_HEADERS
        },
        "response_headers": first.get("response_headers") or {},
        "payload_sha256": capture["payload_sha256"],
        "payload_length": sum(int(part["length"]) for part in capture["parts"]),
        "parts": [
            {
                "url": part["url"],
                "status": part["status"],
                "fetched_at": _iso(part["at"]),
                "resolved_ip": part.get("ip"),
                "payload_sha256": part["sha256"],
                "payload_length": part["length"],
            }
            for part in capture["parts"]
        ],
        "warc": {
            "file": warc_name(capture),
            "sha256": hashlib.sha256(warc).hexdigest(),
            "bytes": len(warc),
            "records": listed,
        },
        "screenshot": (
            {
                "file": SCREENSHOT,
                "sha256": hashlib.sha256(screenshot).hexdigest(),
                "bytes": len(screenshot),
            }
            if screenshot is not None
            else None
        ),
        "matches": [
            {
                "doc_id": match.get("doc_id"),
                "work": match.get("work"),
                "title": match.get("title"),
                "score": match.get("score"),
                "coverage": match.get("coverage"),
                "spans": match.get("spans") or [],
            }
            for match in capture.get("matches") or []
        ],
        "tracker_version": capture.get("tracker_version"),
    }
    return (json.dumps(manifest, ensure_ascii=False, indent=2, sort_keys=True) + "\n").encode()


def _screenshot(directory: Path, capture: dict[str, Any]) -> bytes | None:
    shot = capture.get("screenshot")
    if not shot:
        return None
    try:
        data = (directory / shot["file"]).read_bytes()
    except OSError:
        return None  # a lost screenshot is left out; the WARC is the evidence
    return data if hashlib.sha256(data).hexdigest() == shot.get("sha256") else None


@dataclass
class Bundle:
    """The files of a capture's bundle, and the state of its stamp."""

    capture: dict[str, Any]
    files: dict[str, bytes]
    stamp_state: str  # "stamped", "pending" (the TSA failed), "none" (no TSA configured)
    stamp_error: str = ""
    gen_time: datetime | None = None

    def write(self, folder: Path) -> list[Path]:
        folder.mkdir(parents=True, exist_ok=True)
        paths = []
        for name, data in self.files.items():
            path = folder / name
            path.write_bytes(data)
            paths.append(path)
        return paths


def build_bundle(
    store: CaptureStore,
    directory: Path,
    capture: dict[str, Any],
    *,
    tsa_url: str = "",
    tsa_timeout: float = 30.0,
    tsa_ca_file: str = "",
    stamping: bool = True,
    clock: Callable[[], datetime] | None = None,
) -> Bundle:
    """The bundle of ``capture``; with ``stamping`` (and ``tsa_url``) a capture not stamped
    yet is stamped now and the token kept with it (without: the bundle as it stands, nothing
    stored, as the web console serves it)."""
    warc = load_records(directory, capture)
    kept = capture.get("stamp") or {}
    screenshot = _screenshot(directory, capture)
    manifest = kept.get("manifest") or manifest_bytes(capture, warc, screenshot)
    if screenshot is not None and not json.loads(manifest).get("screenshot"):
        screenshot = None  # taken after the manifest was made: not part of this evidence
    files = {MANIFEST: manifest, warc_name(capture): warc}
    if screenshot is not None:
        files[SCREENSHOT] = screenshot
    state, error, gen_time = "none", "", None
    if kept.get("state") == STAMPED:
        state, token = STAMPED, kept["token"]
    elif stamping and tsa_url:
        now = (clock or (lambda: datetime.now(UTC)))()
        try:
            stamped = stamp(
                manifest, tsa_url, tsa_timeout, Path(tsa_ca_file) if tsa_ca_file else None
            )
        except TsaError as exc:
            store.set_pending(capture["_id"], manifest, str(exc), now)
            state, error, token = "pending", str(exc), None
        else:
            if not store.set_stamped(capture["_id"], manifest, stamped.response, tsa_url, now):
                fresh = store.get(capture["_id"]) or {}
                token = (fresh.get("stamp") or {}).get("token") or stamped.response
            else:
                token = stamped.response
            state, gen_time = STAMPED, stamped.gen_time
    else:
        state = "pending" if kept.get("state") == "pending" else "none"
        error = kept.get("error", "")
        token = None
    if token is not None:
        files[TOKEN] = bytes(token)
    bundle = Bundle(capture, files, state, error, gen_time)
    files[README] = readme(bundle).encode("utf-8")
    return bundle


def bundle_of(
    store: CaptureStore, settings: Any, capture: dict[str, Any], *, stamping: bool = True
) -> Bundle:
    """:func:`build_bundle` with the evidence directory and the TSA of ``settings``."""
    from tracker.enforcement.warc import evidence_dir

    return build_bundle(
        store,
        evidence_dir(settings),
        capture,
        tsa_url=settings.tsa_url,
        tsa_timeout=settings.tsa_timeout_s,
        tsa_ca_file=settings.tsa_ca_file,
        stamping=stamping,
    )


def readme(bundle: Bundle) -> str:
    capture = bundle.capture
    lines = [
        "Evidence bundle written by tracker",
        "",
        f"Page: {mask_url(capture['url'])}",
        f"Fetched: {_iso(capture['at'])} (HTTP {capture['status']})",
        f"Payload SHA-256: {capture['payload_sha256']}",
        "",
        f"{MANIFEST}: what was captured, with the SHA-256 of every other file.",
        f"{warc_name(capture)}: the HTTP request and response as WARC records (ISO 28500).",
    ]
    if SCREENSHOT in bundle.files:
        lines.append(f"{SCREENSHOT}: the page as captured, rendered offline.")
    if bundle.stamp_state == STAMPED:
        lines += [
            f"{TOKEN}: an RFC 3161 time-stamp over {MANIFEST}. Check it with:",
            f"  openssl ts -verify -data {MANIFEST} -in {TOKEN} -CAfile TSA-CA.pem",
        ]
    elif bundle.stamp_state == "pending":
        lines.append(
            f"No {TOKEN} yet: the time-stamping authority failed ({bundle.stamp_error}); "
            "`tracker evidence stamp --pending`, then export again."
        )
    else:
        lines.append(f"No {TOKEN}: no time-stamping authority is configured (tsa_url).")
    lines += [
        "",
        "Check the whole bundle: tracker evidence verify THIS-FOLDER --ca-file TSA-CA.pem",
        "",
    ]
    return "\n".join(lines)


def find_capture(store: CaptureStore, url: str, capture_id: str | None = None) -> dict[str, Any]:
    """The capture to export: ``capture_id``'s, else the newest of ``url``."""
    capture = store.get(capture_id) if capture_id else store.latest(url)
    if capture is None or (capture_id and capture.get("url") != url):
        what = f"capture {capture_id} of {url}" if capture_id else url
        raise EvidenceError(
            f"no evidence captured for {what}: pages are captured when a crawl finds them "
            "copying a master (`tracker evidence list URL` shows a page's captures)"
        )
    return capture


@dataclass
class StampSummary:
    stamped: int = 0
    pending: int = 0
    lines: list[str] = field(default_factory=list)


def stamp_captures(
    store: CaptureStore, settings: Any, captures: list[dict[str, Any]] | None = None
) -> StampSummary:
    """Stamp ``captures`` (default: every capture whose stamp is pending) with ``tsa_url``;
    what failed stays pending. Each capture's records are read and checked first."""
    summary = StampSummary()
    for capture in store.pending() if captures is None else captures:
        try:
            bundle = bundle_of(store, settings, capture)
        except EvidenceError as exc:
            summary.pending += 1
            summary.lines.append(f"{mask_url(capture['url'])}: {exc}")
            continue
        if bundle.stamp_state == STAMPED:
            summary.stamped += 1
            summary.lines.append(f"{mask_url(capture['url'])}: stamped")
        else:
            summary.pending += 1
            summary.lines.append(f"{mask_url(capture['url'])}: pending: {bundle.stamp_error}")
    return summary


# -------------------------------------------------------------------------------- verifying


@dataclass
class Verification:
    """Each check of :func:`verify_bundle`: ``(ok, what)``, in order."""

    checks: list[tuple[bool, str]] = field(default_factory=list)

    def add(self, ok: bool, what: str) -> None:
        self.checks.append((ok, what))

    @property
    def ok(self) -> bool:
        return all(ok for ok, _ in self.checks)


class BundleError(RuntimeError):
    """Not a bundle: no readable manifest."""


def verify_bundle(folder: Path, ca_file: Path | None = None) -> Verification:
    """Check a bundle (see the module doc); a :class:`BundleError` when it is not one."""
    result = Verification()
    try:
        manifest_data = (folder / MANIFEST).read_bytes()
    except FileNotFoundError:
        raise BundleError(f"{folder}: no {MANIFEST}: not an evidence bundle") from None
    except OSError as exc:
        raise BundleError(f"{folder / MANIFEST}: cannot read it ({exc.strerror or exc})") from None
    try:
        manifest = json.loads(manifest_data)
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise ValueError("not a tracker bundle manifest")
        warc_entry = manifest["warc"]
    except (ValueError, KeyError, TypeError) as exc:
        result.add(False, f"{MANIFEST} does not read as a bundle manifest: {exc}")
        return result
    _check_token(folder, manifest_data, ca_file, result)
    warc = _check_file(folder, warc_entry, result)
    if manifest.get("screenshot"):
        _check_file(folder, manifest["screenshot"], result)
    if warc is not None:
        _check_records(warc, manifest, result)
    return result


def _check_file(folder: Path, entry: dict[str, Any], result: Verification) -> bytes | None:
    name = str(entry.get("file", ""))
    if not name or Path(name).name != name:
        result.add(False, f"the manifest names a file outside the bundle: {name!r}")
        return None
    try:
        data = (folder / name).read_bytes()
    except OSError:
        result.add(False, f"{name} is missing")
        return None
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry.get("sha256"):
        result.add(
            False, f"{name} differs: SHA-256 {digest}, the manifest says {entry.get('sha256')}"
        )
        return None
    result.add(True, f"{name}: SHA-256 {digest} as in the manifest ({len(data)} bytes)")
    return data


def _check_records(warc: bytes, manifest: dict[str, Any], result: Verification) -> None:
    try:
        records = parse_records(warc)
    except RecordError as exc:
        result.add(False, f"{manifest['warc']['file']}: {exc}")
        return
    listed = manifest["warc"].get("records") or []
    found = [(r.type, r.record_id, r.target_uri) for r in records]
    expected = [(r.get("type"), r.get("record_id"), r.get("target_uri")) for r in listed]
    if found != expected:
        result.add(False, "the WARC's records are not the ones the manifest lists")
        return
    result.add(True, f"{len(records)} WARC records, their block and payload digests intact")
    responses = [r for r in records if r.type == "response"]
    parts = manifest.get("parts") or []
    if len(responses) != len(parts):
        result.add(False, f"{len(responses)} responses in the WARC, {len(parts)} parts listed")
        return
    for record, part in zip(responses, parts, strict=True):
        digest = hashlib.sha256(record.payload).hexdigest()
        if digest != part.get("payload_sha256"):
            result.add(False, f"the payload of {record.target_uri} differs from the manifest's")
        elif record.status != part.get("status"):
            result.add(
                False,
                f"{record.target_uri}: HTTP {record.status} in the WARC, "
                f"{part.get('status')} in the manifest",
            )
        elif record.target_uri != part.get("url"):
            result.add(
                False, f"the WARC's response is for {record.target_uri}, not {part.get('url')}"
            )
        else:
            result.add(True, f"{record.target_uri}: HTTP {record.status}, payload SHA-256 {digest}")
    whole = hashlib.sha256()
    for record in responses:
        whole.update(record.payload)
    total = responses[0].payload if len(responses) == 1 else None
    expected_digest = hashlib.sha256(total).hexdigest() if total is not None else whole.hexdigest()
    if expected_digest != manifest.get("payload_sha256"):
        result.add(False, "the payload SHA-256 of the manifest is not the WARC's")


def _check_token(folder: Path, manifest: bytes, ca_file: Path | None, result: Verification) -> None:
    try:
        token = (folder / TOKEN).read_bytes()
    except OSError:
        result.add(False, f"no {TOKEN}: the bundle is not time-stamped")
        return
    check = verify_token(token, manifest, ca_file)
    if check.ok:
        when = check.gen_time.isoformat() if check.gen_time else "?"
        result.add(True, f"{TOKEN}: stamped {when} by {check.signer or '?'}; {check.message}")
    else:
        result.add(False, f"{TOKEN}: {check.message}")
