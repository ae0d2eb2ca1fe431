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
``tsa-ca.pem``, ``tsa-certs.pem``
    A copy of the TSA's CA (``tsa_ca_file``), and the TSA's own certificate
    (``tsa_cert_file``) when the token carries none: what ``openssl ts -verify`` is given
    (``-CAfile``, ``-untrusted``). A court compares the CA with the one the TSA publishes.
``VERIFY.txt``
    In Chinese and English: what each file is, and how to check the hashes and the time-stamp
    with ``sha256sum`` and ``openssl ts -verify`` alone, naming the TSA (not part of the
    evidence; ``tracker evidence verify`` prints the same steps as it checks them).

:func:`verify_bundle` recomputes every hash, reads the WARC records (their own digests
checked), compares them with the manifest, and verifies the token over the manifest.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tracker.enforcement.capture import mask_url
from tracker.enforcement.timestamp import Tsa, TsaError, stamp, verify_token
from tracker.enforcement.warc import RecordError, RecordRef, parse_records, read_member
from tracker.stores.evidence import STAMPED, CaptureStore

FORMAT = "tracker-evidence-bundle/1"
MANIFEST = "manifest.json"
TOKEN = "timestamp.tsr"
SCREENSHOT = "screenshot.png"
VERIFY = "VERIFY.txt"
CA_COPY = "tsa-ca.pem"
CERTS_COPY = "tsa-certs.pem"
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
    tsa: str = ""  # the TSA that stamped it (its URL, password masked)
    signer: str = ""  # the name on the TSA's signing certificate

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
    tsa: Tsa | None = None,
    stamping: bool = True,
    clock: Callable[[], datetime] | None = None,
) -> Bundle:
    """The bundle of ``capture``; with ``stamping`` (and a ``tsa``) a capture not stamped
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
    state, error, token, stamped_by = "none", "", None, str(kept.get("tsa") or "")
    if kept.get("state") == STAMPED:
        state, token = STAMPED, kept["token"]
    elif stamping and tsa is not None:
        now = (clock or (lambda: datetime.now(UTC)))()
        try:
            stamped = stamp(manifest, tsa)
        except TsaError as exc:
            store.set_pending(capture["_id"], manifest, str(exc), now, tsa.where)
            state, error = "pending", str(exc)
        else:
            token, stamped_by = stamped.response, tsa.where
            if not store.set_stamped(capture["_id"], manifest, token, tsa.where, now):
                fresh = (store.get(capture["_id"]) or {}).get("stamp") or {}
                token = fresh.get("token") or token
                stamped_by = str(fresh.get("tsa") or stamped_by)
            state = STAMPED
    else:
        state = "pending" if kept.get("state") == "pending" else "none"
        error = kept.get("error", "")
    bundle = Bundle(capture, files, state, error, tsa=mask_url(stamped_by))
    if token is not None:
        files[TOKEN] = bytes(token)
        _describe_token(bundle, tsa)
    files[VERIFY] = verify_text(bundle).encode("utf-8")
    return bundle


def _describe_token(bundle: Bundle, tsa: Tsa | None) -> None:
    """The signing time and signer of the bundle's token; beside it the TSA's CA
    (``tsa-ca.pem``) and, for a token without certificates, the TSA's certificate
    (``tsa-certs.pem``), when the token verifies up to them (a token kept from a TSA used
    before gets no copy of today's CA)."""
    ca_file = Path(tsa.ca_file).expanduser() if tsa and tsa.ca_file else None
    cert_file = Path(tsa.cert_file).expanduser() if tsa and tsa.cert_file else None
    check = verify_token(bundle.files[TOKEN], bundle.files[MANIFEST], ca_file, cert_file)
    bundle.gen_time, bundle.signer = check.gen_time, check.signer
    if not check.chain:
        return
    copies = {CA_COPY: ca_file, CERTS_COPY: None if check.carries_certificates else cert_file}
    for name, source in copies.items():
        if source is not None:
            with contextlib.suppress(OSError):  # VERIFY.txt names the file to get from the TSA
                bundle.files[name] = source.read_bytes()


def bundle_of(
    store: CaptureStore, settings: Any, capture: dict[str, Any], *, stamping: bool = True
) -> Bundle:
    """:func:`build_bundle` with the evidence directory and the TSA of ``settings``."""
    from tracker.enforcement.warc import evidence_dir

    return build_bundle(
        store, evidence_dir(settings), capture, tsa=Tsa.of(settings), stamping=stamping
    )


def openssl_command(
    data: str = MANIFEST, token: str = TOKEN, *, ca: str = CA_COPY, untrusted: bool = False
) -> str:
    """The ``openssl ts -verify`` command line that checks ``token`` over ``data`` (with
    ``-untrusted tsa-certs.pem`` for a token without certificates)."""
    command = f"openssl ts -verify -data {data} -in {token} -CAfile {ca}"
    return command + (f" -untrusted {CERTS_COPY}" if untrusted else "")


def render_text(template: str, **context: Any) -> str:
    """The plain-text template ``templates/TEMPLATE`` rendered (text, not HTML: nothing is
    marked up, so nothing is escaped; every name must be given)."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    environment = Environment(
        loader=FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=StrictUndefined,
        keep_trailing_newline=True,
    )
    return environment.get_template(template).render(**context)


def verify_text(bundle: Bundle) -> str:
    """``VERIFY.txt``: what each file is and how to check it with ``sha256sum`` and ``openssl``
    alone, in Chinese and in English (the same steps ``tracker evidence verify`` prints), from
    the plain-text template ``templates/VERIFY.txt``."""
    manifest = json.loads(bundle.files[MANIFEST])
    hashes = [(manifest["warc"]["file"], manifest["warc"]["sha256"])]
    if manifest.get("screenshot"):
        hashes.append((manifest["screenshot"]["file"], manifest["screenshot"]["sha256"]))
    stamped = TOKEN in bundle.files
    return render_text(
        VERIFY,
        url=manifest["url"],
        fetched_at=manifest["fetched_at"],
        status=manifest["status"],
        manifest=MANIFEST,
        warc=manifest["warc"]["file"],
        screenshot=SCREENSHOT if SCREENSHOT in bundle.files else "",
        token=TOKEN if stamped else "",
        token_name=TOKEN,
        tsa=f"{bundle.signer or '?'} ({bundle.tsa or '?'})",
        when=_iso(bundle.gen_time) or "?",
        attime=int(bundle.gen_time.timestamp()) if bundle.gen_time else "?",
        ca_copy=CA_COPY if CA_COPY in bundle.files else "",
        ca_name=CA_COPY,
        certs_copy=CERTS_COPY if CERTS_COPY in bundle.files else "",
        hashes=hashes,
        openssl=openssl_command(untrusted=CERTS_COPY in bundle.files),
        pending=bundle.stamp_error if bundle.stamp_state == "pending" else "",
    )


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
    """Each check of :func:`verify_bundle`: ``(ok, what)``, in order, with the command a
    person runs to make the same check (``steps``, by check; "" for the tracker's own)."""

    checks: list[tuple[bool, str]] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)
    unstamped: bool = False  # no timestamp.tsr: intact or not, not time-stamped yet

    def add(self, ok: bool, what: str, step: str = "") -> None:
        self.checks.append((ok, what))
        self.steps.append(step)

    @property
    def ok(self) -> bool:
        return all(ok for ok, _ in self.checks)

    @property
    def state(self) -> str:
        """``intact`` (every check passed, stamped), ``altered`` (a check failed),
        ``unstamped`` (everything else intact, but no time-stamp yet)."""
        if not self.ok:
            return "altered"
        return "unstamped" if self.unstamped else "intact"


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
    warc = _check_file(folder, warc_entry, result)
    if manifest.get("screenshot"):
        _check_file(folder, manifest["screenshot"], result)
    if warc is not None:
        _check_records(warc, manifest, result)
    check_token(folder, MANIFEST, manifest_data, ca_file, result)
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
    step = f"sha256sum {name}"
    if digest != entry.get("sha256"):
        result.add(
            False,
            f"{name} differs: SHA-256 {digest}, the manifest says {entry.get('sha256')}",
            step,
        )
        return None
    result.add(True, f"{name}: SHA-256 {digest} as in the manifest ({len(data)} bytes)", step)
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


def check_token(
    folder: Path,
    data_name: str,
    data: bytes,
    ca_file: Path | None,
    result: Verification,
    token_name: str = TOKEN,
) -> None:
    """The token ``token_name`` of ``folder`` over ``data`` (the file ``data_name``), as
    ``openssl ts -verify`` checks it; a token without certificates is checked with the
    bundle's ``tsa-certs.pem``."""
    try:
        token = (folder / token_name).read_bytes()
    except OSError:
        result.unstamped = True
        return
    certs = folder / CERTS_COPY
    cert_file = certs if certs.is_file() else None
    step = openssl_command(
        data_name, token_name, ca=str(ca_file or "CA"), untrusted=cert_file is not None
    )
    check = verify_token(token, data, ca_file, cert_file)
    if check.ok:
        when = _iso(check.gen_time) or "?"
        what = f"{token_name}: {check.hash_name} of {data_name}, stamped {when} by "
        result.add(True, what + f"{check.signer or '?'}; {check.message}", step)
    else:
        result.add(False, f"{token_name}: {check.message}", step)
