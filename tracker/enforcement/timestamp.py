"""RFC 3161 time-stamps: ask a time-stamping authority (TSA) to sign the hash of a file, and check
what it signed (rfc3161-client: the request and response are DER built and parsed by the
library, not by hand).

:func:`stamp` POSTs a ``TimeStampReq`` (SHA-256 of the data, a nonce, the TSA's certificate
asked for) to ``tsa_url`` as ``application/timestamp-query`` and checks the answer before it is
kept: a granted status, a token over exactly our hash, our nonce, the signer's certificate in
the token, and, with ``tsa_ca_file``, a signature that verifies up to that CA. The whole
``TimeStampResp`` is kept, as ``timestamp.tsr``, which is what ``openssl ts -verify -in
timestamp.tsr -data manifest.json -CAfile CA`` reads.

:func:`verify_token` checks a kept response against the data it is for: the hash, and the
signature up to the trusted roots of ``ca_file`` (the TSA's CA; a Chinese trusted-timestamp
service publishes its own). Without a CA file only the hash is checked, not the signature: the
answer says so.

A TSA that is down, slow (``tsa_timeout_s``) or answers garbage raises :class:`TsaError`
naming the TSA (its password masked) and what went wrong; the caller keeps the stamp pending.
"""

from __future__ import annotations

import base64
import hashlib
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from tracker.enforcement.capture import mask_url

QUERY_TYPE = "application/timestamp-query"
REPLY_TYPE = "application/timestamp-reply"
MAX_REPLY_BYTES = 1 << 20


class TsaError(RuntimeError):
    """The TSA could not be reached, or its answer is not a valid token for our request."""


@dataclass(frozen=True)
class Token:
    """A checked time-stamp response: its DER bytes, the time the TSA signed and who signed."""

    response: bytes
    gen_time: datetime
    serial: int
    signer: str


def stamp(data: bytes, tsa_url: str, timeout: float = 30.0, ca_file: Path | None = None) -> Token:
    """A time-stamp token over ``data`` from the TSA at ``tsa_url`` (see the module doc); with
    ``ca_file`` (``tsa_ca_file``) its signature is verified up to that CA before it is kept."""
    from rfc3161_client import HashAlgorithm, TimestampRequestBuilder

    request = (
        TimestampRequestBuilder()
        .data(data)
        .hash_algorithm(HashAlgorithm.SHA256)
        .cert_request(cert_request=True)
        .nonce(nonce=True)
        .build()
    )
    where = mask_url(tsa_url)
    reply = _post(tsa_url, request.as_bytes(), timeout, where)
    try:
        roots = _roots(ca_file) if ca_file else None
        token = _checked(reply, hashlib.sha256(data).digest(), request.nonce, roots)
    except TsaError as exc:
        raise TsaError(f"TSA at {where}: {exc}") from None
    return token


def _post(url: str, body: bytes, timeout: float, where: str) -> bytes:
    parts = urlsplit(url)
    headers = {"Content-Type": QUERY_TYPE, "Accept": REPLY_TYPE}
    if parts.username is not None:  # https://user:pass@tsa.example/ : HTTP Basic
        credentials = f"{parts.username}:{parts.password or ''}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(credentials).decode()
        url = urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            reply = response.read(MAX_REPLY_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise TsaError(f"TSA at {where} answered HTTP {exc.code} {exc.reason}") from None
    except TimeoutError:
        raise TsaError(f"TSA at {where} did not answer within {timeout:g} s") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError):
            raise TsaError(f"TSA at {where} did not answer within {timeout:g} s") from None
        raise TsaError(f"TSA at {where} cannot be reached: {reason}") from None
    if len(reply) > MAX_REPLY_BYTES:
        raise TsaError(f"TSA at {where} answered more than {MAX_REPLY_BYTES} bytes")
    return reply


def _roots(ca_file: Path) -> list:
    from cryptography import x509

    try:
        return x509.load_pem_x509_certificates(Path(ca_file).read_bytes())
    except (OSError, ValueError) as exc:
        raise TsaError(f"cannot read the CA file {ca_file}: {exc}") from None


def _checked(reply: bytes, digest: bytes, nonce: int | None, roots: list | None) -> Token:
    """``reply`` parsed and checked against our request (see :func:`stamp`)."""
    from rfc3161_client import PKIStatus, decode_timestamp_response

    try:
        response = decode_timestamp_response(reply)
    except Exception:  # the parser's own error types: not a TimeStampResp
        raise TsaError("its answer is not an RFC 3161 time-stamp response") from None
    if PKIStatus(response.status) not in (PKIStatus.GRANTED, PKIStatus.GRANTED_WITH_MODS):
        text = "; ".join(response.status_string) or f"status {response.status}"
        raise TsaError(f"it refused the request ({text})")
    info = response.tst_info
    if info.message_imprint.message != digest:
        raise TsaError("its token is for another hash than the one sent")
    if nonce is not None and info.nonce != nonce:
        raise TsaError("its token does not carry the nonce sent (a replayed answer?)")
    if _leaf(response) is None:
        raise TsaError("its token does not carry the certificate it was signed with")
    if roots:
        _verify(response, digest, roots)
    return _token(reply, response)


def _token(reply: bytes, response: object) -> Token:
    info = response.tst_info  # type: ignore[attr-defined]
    return Token(reply, info.gen_time, info.serial_number, _signer(response))


def _signer(response: object) -> str:

    certificate = _leaf(response)
    if certificate is None:
        return ""
    return certificate.subject.rfc4514_string()


def _leaf(response: object) -> object | None:
    """The certificate of the token's signer, when the token carries it."""
    import cryptography.x509

    signed = response.signed_data  # type: ignore[attr-defined]
    infos = list(signed.signer_infos)
    certificates = [cryptography.x509.load_der_x509_certificate(c) for c in signed.certificates]
    if len(infos) != 1:
        return None
    info = infos[0]
    for certificate in certificates:
        if certificate.issuer == info.issuer and certificate.serial_number == info.serial_number:
            return certificate
    return None


def _verify(response: object, digest: bytes, roots: list) -> None:
    """The token's signature, its signer's certificate (timeStamping, critical) and its chain
    up to ``roots``, and the hash it signed."""
    from rfc3161_client import VerificationError, VerifierBuilder

    builder = VerifierBuilder()
    for root in roots:
        builder = builder.add_root_certificate(root)
    try:
        builder.build().verify(response, digest)
    except (VerificationError, ValueError) as exc:
        raise TsaError(f"its token does not verify: {exc}") from None


@dataclass(frozen=True)
class TokenCheck:
    """What :func:`verify_token` found: ``ok``, the signing time and signer, and whether the
    signer was checked up to a trusted CA (``chain``) or only against its own certificate."""

    ok: bool
    message: str
    gen_time: datetime | None = None
    signer: str = ""
    chain: bool = False


def verify_token(reply: bytes, data: bytes, ca_file: Path | None = None) -> TokenCheck:
    """Whether ``reply`` (a kept ``timestamp.tsr``) is a valid token over ``data``: its hash
    always; with ``ca_file``, its signature and signer up to that CA."""
    from rfc3161_client import decode_timestamp_response

    try:
        response = decode_timestamp_response(reply)
    except Exception:
        return TokenCheck(False, "timestamp.tsr is not an RFC 3161 time-stamp response")
    info = response.tst_info
    algorithm = info.message_imprint.hash_algorithm.dotted_string
    hashes = {"2.16.840.1.101.3.4.2.1": "sha256", "2.16.840.1.101.3.4.2.3": "sha512"}
    if algorithm not in hashes:
        return TokenCheck(False, f"the token's hash algorithm {algorithm} is not supported")
    digest = hashlib.new(hashes[algorithm], data).digest()
    if info.message_imprint.message != digest:
        return TokenCheck(
            False, "the token is for other data: manifest.json was changed after it was stamped"
        )
    if ca_file is None:
        return TokenCheck(
            True,
            "over this manifest; its signature NOT checked (give --ca-file, the TSA's CA)",
            info.gen_time,
            _signer(response),
        )
    try:
        _verify(response, digest, _roots(ca_file))
    except TsaError as exc:
        return TokenCheck(False, str(exc).replace("its token", "the token"))
    return TokenCheck(True, "verified up to the CA", info.gen_time, _signer(response), True)
