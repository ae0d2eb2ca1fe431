"""A capture as a WACZ file (Webrecorder's Web Archive Collection Zipped, 1.1.1): what
``tracker evidence export URL --out DIR --format wacz`` writes, for ReplayWeb.page and the other
WACZ tools. The ZIP is made by Webrecorder's own py-wacz (``wacz create``, warcio underneath),
never laid out by hand:

``capture-ID.wacz``
    ``archive/capture-ID.warc.gz`` (the capture's WARC records, as in the directory bundle), the
    CDXJ index, ``pages/pages.jsonl`` (the page), ``datapackage.json`` (every file's SHA-256)
    and ``datapackage-digest.json`` (the SHA-256 of ``datapackage.json``). Its ``logs/`` carry
    the capture's own evidence: ``manifest.json`` and, once stamped, its ``timestamp.tsr``
    (the earlier proof), so the WACZ's digests cover them too.
``datapackage-digest.json``, ``datapackage-digest.tsr``
    A copy of the WACZ's digest file and an RFC 3161 token over it from ``tsa_url``, taken at
    export (a WACZ records when it was made, so each export is a new file and a new token):
    ``openssl ts -verify -data datapackage-digest.json -in datapackage-digest.tsr -CAfile CA``.
``tsa-ca.pem``, ``tsa-certs.pem``, ``VERIFY.txt``
    As in the directory bundle (:mod:`tracker.enforcement.bundle`).

:func:`verify_wacz` checks such a folder: ``wacz validate`` (py-wacz: every file's hash, the
datapackage's), the digest copy against the WACZ's, the token over it, and the capture's own
manifest and token inside.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tracker.enforcement.bundle import (
    CA_COPY,
    CERTS_COPY,
    MANIFEST,
    TOKEN,
    VERIFY,
    Bundle,
    Verification,
    check_token,
    openssl_command,
    render_text,
    warc_name,
)
from tracker.enforcement.timestamp import Token, Tsa, TsaError, stamp, verify_token

DIGEST = "datapackage-digest.json"
DIGEST_TOKEN = "datapackage-digest.tsr"
LOGS = "logs"


class WaczError(RuntimeError):
    """py-wacz could not make or read the WACZ."""


def wacz_name(capture: dict) -> str:
    return f"capture-{capture['_id']}.wacz"


def _wacz(*args: str) -> tuple[int, str]:
    """py-wacz's command line, in this process, its chatter kept (shown only on failure)."""
    from wacz.main import main

    said = io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse
            code = int(exc.code or 1)
        except Exception as exc:  # py-wacz raises what its readers raise: a damaged file
            print(f"{type(exc).__name__}: {exc}")
            code = 1
    return int(code or 0), said.getvalue()


@dataclass
class WaczExport:
    """What :func:`write_wacz` wrote, and the state of its token."""

    paths: list[Path]
    stamped: bool
    error: str = ""


def write_wacz(bundle: Bundle, folder: Path, tsa: Tsa | None) -> WaczExport:
    """The WACZ of ``bundle``'s capture and its token in ``folder`` (see the module doc)."""
    capture = bundle.capture
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / wacz_name(capture)
    manifest = json.loads(bundle.files[MANIFEST])
    with tempfile.TemporaryDirectory(prefix="tracker-wacz-") as tmp:
        warc = Path(tmp) / warc_name(capture)
        warc.write_bytes(bundle.files[warc_name(capture)])
        logs = Path(tmp) / LOGS
        logs.mkdir()
        for name in (MANIFEST, TOKEN):
            if name in bundle.files:
                (logs / name).write_bytes(bundle.files[name])
        code, said = _wacz(
            *("create", "-o", str(out), str(warc), "--detect-pages"),
            *("--url", manifest["url"], "--title", f"Evidence of {manifest['url']}"),
            *("--desc", f"tracker capture {capture['_id']}, fetched {manifest['fetched_at']}"),
            *("-l", str(logs)),
        )
    if code != 0:
        raise WaczError(f"py-wacz could not write {out}: {said.strip()[-500:]}")
    with zipfile.ZipFile(out) as archive:
        digest = archive.read(DIGEST)
    files = {DIGEST: digest}
    token, error = None, ""
    if tsa is not None:
        try:
            token = stamp(digest, tsa)
            files[DIGEST_TOKEN] = token.response
        except TsaError as exc:
            error = str(exc)
    else:
        error = "no time-stamping authority is configured (tsa_url)"
    for name in (CA_COPY, CERTS_COPY):
        if name in bundle.files:
            files[name] = bundle.files[name]
    files[VERIFY] = _verify_text(bundle, out.name, files, token, tsa, error).encode("utf-8")
    paths = [out]
    for name, data in files.items():
        (folder / name).write_bytes(data)
        paths.append(folder / name)
    return WaczExport(paths, token is not None, error)


def _verify_text(
    bundle: Bundle,
    wacz: str,
    files: dict[str, bytes],
    token: Token | None,
    tsa: Tsa | None,
    error: str,
) -> str:
    when = token.gen_time.isoformat(timespec="seconds") if token else "?"
    return render_text(
        "VERIFY-wacz.txt",
        url=json.loads(bundle.files[MANIFEST])["url"],
        wacz=wacz,
        digest=DIGEST,
        token=DIGEST_TOKEN if token else "",
        token_name=DIGEST_TOKEN,
        tsa=f"{token.signer if token else '?'} ({tsa.where if tsa else '?'})",
        when=when,
        inner_openssl=openssl_command(
            f"{LOGS}/{MANIFEST}", f"{LOGS}/{TOKEN}", untrusted=CERTS_COPY in files
        ),
        error=error,
        openssl=openssl_command(DIGEST, DIGEST_TOKEN, untrusted=CERTS_COPY in files),
        ca_name=CA_COPY,
        ca_copy=CA_COPY if CA_COPY in files else "",
        inner_token=TOKEN in bundle.files,
        manifest=MANIFEST,
        inner=TOKEN,
        logs=LOGS,
    )


def find_wacz(folder: Path) -> Path | None:
    """The WACZ of an export folder, if it is one."""
    found = sorted(folder.glob("capture-*.wacz"))
    return found[0] if len(found) == 1 else None


def verify_wacz(folder: Path, wacz: Path, ca_file: Path | None) -> Verification:
    """Check a ``--format wacz`` export folder (see the module doc)."""
    result = Verification()
    code, said = _wacz("validate", "-f", str(wacz))
    result.add(
        code == 0,
        f"{wacz.name}: " + ("a valid WACZ, every file's hash as listed" if code == 0 else
                            said.strip().splitlines()[-1] if said.strip() else "invalid"),
        f"wacz validate -f {wacz.name}",
    )  # fmt: skip
    try:
        with zipfile.ZipFile(wacz) as archive:
            inside = {name: archive.read(name) for name in (DIGEST, f"{LOGS}/{MANIFEST}")}
            inner = f"{LOGS}/{TOKEN}"
            token = archive.read(inner) if inner in archive.namelist() else None
    except (OSError, KeyError, zipfile.BadZipFile) as exc:
        result.add(False, f"{wacz.name}: cannot be read as a WACZ of tracker ({exc})")
        return result
    try:
        copy = (folder / DIGEST).read_bytes()
    except OSError:
        copy = None
    same = copy is not None and copy == inside[DIGEST]
    result.add(
        same,
        f"{DIGEST}: the same as in {wacz.name}" if same else f"{DIGEST} is missing or differs "
        f"from the one in {wacz.name}",
        f"unzip -p {wacz.name} {DIGEST} | sha256sum; sha256sum {DIGEST}",
    )  # fmt: skip
    if copy is not None:
        check_token(folder, DIGEST, copy, ca_file, result, DIGEST_TOKEN)
    if token is not None:
        certs = folder / CERTS_COPY
        check = verify_token(
            token, inside[f"{LOGS}/{MANIFEST}"], ca_file, certs if certs.is_file() else None
        )
        digest = hashlib.sha256(inside[f"{LOGS}/{MANIFEST}"]).hexdigest()
        result.add(
            check.ok,
            f"{LOGS}/{TOKEN}, the capture's own: {check.message} ({MANIFEST} SHA-256 {digest})",
            f"unzip {wacz.name} {LOGS}/{MANIFEST} {LOGS}/{TOKEN}; "
            + openssl_command(f"{LOGS}/{MANIFEST}", f"{LOGS}/{TOKEN}", ca=str(ca_file or "CA"),
                              untrusted=certs.is_file()),
        )  # fmt: skip
    return result
