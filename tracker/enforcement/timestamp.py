"""RFC 3161 time-stamps: ask a time-stamping authority (TSA) to sign the hash of a file, and check
what it signed (rfc3161-client builds the request, parses the answer and verifies its CMS
signature; asn1crypto re-encodes the answers its strict DER parser refuses).

:func:`stamp` POSTs a ``TimeStampReq`` (SHA-256 of the data, a nonce, the TSA's certificate
asked for) to the TSA's URL as ``application/timestamp-query`` (HTTP Basic authentication from
the URL's user info, a TLS client certificate from ``tsa_client_cert``) and checks the answer
before it is kept: a granted status (``granted`` or ``grantedWithMods``), a token over exactly
our hash and nonce, signed by a certificate with the timeStamping extended key usage (critical)
valid at the signing time, and, with ``tsa_ca_file``, a signature that verifies up to that CA.
The whole ``TimeStampResp`` is kept as the TSA sent it, as ``timestamp.tsr``, which is what
``openssl ts -verify -in timestamp.tsr -data manifest.json -CAfile CA`` reads.

**Tokens a standard verifier accepts, parsed.** rfc3161-client's parser is strict DER; real TSAs
are not all DER. ``openssl ts -reply`` with a certificate chain, Microsoft's and Bouncy
Castle-based TSAs write the token's ``certificates`` SET OF in chain order, not sorted as DER
requires (X.690 §11.6), and Java TSAs use indefinite lengths (BER). None of those bytes are
signed: CMS signs the encapsulated content and the DER of the signed attributes (RFC 5652
§5.4), and each certificate carries its own signature. An answer the parser refuses is
therefore re-encoded as DER (:func:`canonical`: asn1crypto, sets sorted, lengths definite) and
parsed again; the re-encoding cannot make a bad token verify, since every signature is still
checked over the bytes it covers. Likewise the status is outside the token: a
``grantedWithMods`` answer is checked as a token like any other (the library's verifier only
takes ``granted``). A token without certificates (the TSA ignores certReq) is checked with the
TSA's certificate from ``tsa_cert_file`` (PEM: the TSA's, then any intermediates).

:func:`verify_token` checks a kept response against the data it is for: the hash (SHA-256, -384
or -512, as the token says), and with a CA file the signature and signer up to it. Without a CA
file only the hash and the signer's key usage are checked, not the signature: the answer says so.

A TSA that is down, slow (``tsa_timeout_s``) or answers garbage, or a token that fails a check,
raises :class:`TsaError` naming the TSA (its password masked) and what went wrong; the caller
keeps the stamp pending.
"""

from __future__ import annotations

import base64
import hashlib
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from tracker.enforcement.capture import mask_url

QUERY_TYPE = "application/timestamp-query"
REPLY_TYPE = "application/timestamp-reply"
MAX_REPLY_BYTES = 1 << 20
HASHES = {
    "2.16.840.1.101.3.4.2.1": "sha256",
    "2.16.840.1.101.3.4.2.2": "sha384",
    "2.16.840.1.101.3.4.2.3": "sha512",
}
TIME_STAMPING = "1.3.6.1.5.5.7.3.8"


class TsaError(RuntimeError):
    """The TSA could not be reached, or its answer is not a valid token for our request."""


@dataclass(frozen=True)
class Tsa:
    """A time-stamping authority as configured: its URL (``user:password@`` for HTTP Basic),
    timeout, CA file, own certificate file and TLS client certificate (PEM, key included)."""

    url: str
    timeout: float = 30.0
    ca_file: str = ""
    cert_file: str = ""
    client_cert: str = ""

    @classmethod
    def of(cls, settings: Any) -> Tsa | None:
        """The TSA of ``settings``; None without ``tsa_url``."""
        if not settings.tsa_url:
            return None
        return cls(
            settings.tsa_url,
            settings.tsa_timeout_s,
            settings.tsa_ca_file,
            settings.tsa_cert_file,
            settings.tsa_client_cert,
        )

    @property
    def where(self) -> str:
        return mask_url(self.url)


@dataclass(frozen=True)
class Token:
    """A checked time-stamp response: its bytes as sent, the time the TSA signed and who."""

    response: bytes
    gen_time: datetime
    serial: int
    signer: str


def stamp(data: bytes, tsa: Tsa) -> Token:
    """A time-stamp token over ``data`` from ``tsa`` (see the module doc), checked before it
    is returned; with ``tsa.ca_file`` its signature is verified up to that CA."""
    from rfc3161_client import HashAlgorithm, TimestampRequestBuilder

    request = (
        TimestampRequestBuilder()
        .data(data)
        .hash_algorithm(HashAlgorithm.SHA256)
        .cert_request(cert_request=True)
        .nonce(nonce=True)
        .build()
    )
    reply = _post(tsa, request.as_bytes())
    try:
        roots = _certificates(Path(tsa.ca_file), "CA") if tsa.ca_file else None
        tsa_certs = _certificates(Path(tsa.cert_file), "TSA certificate") if tsa.cert_file else []
        response = parse(reply)
        _check_status(response)
        digest = hashlib.sha256(data).digest()
        if response.tst_info.nonce != request.nonce:
            raise TsaError("its token does not carry the nonce sent (a replayed answer?)")
        _check(reply, response, digest, roots, tsa_certs)
    except TsaError as exc:
        raise TsaError(f"TSA at {tsa.where}: {exc}") from None
    info = response.tst_info
    return Token(reply, info.gen_time, info.serial_number, _signer(response, tsa_certs))


def _post(tsa: Tsa, body: bytes) -> bytes:
    parts = urlsplit(tsa.url)
    headers = {"Content-Type": QUERY_TYPE, "Accept": REPLY_TYPE}
    url = tsa.url
    if parts.username is not None:  # https://user:pass@tsa.example/ : HTTP Basic
        user, password = unquote(parts.username), unquote(parts.password or "")
        credentials = f"{user}:{password}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(credentials).decode()
        url = urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    where, timeout = tsa.where, tsa.timeout
    try:
        context = _tls_context(tsa) if parts.scheme == "https" else None
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
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


def _tls_context(tsa: Tsa) -> ssl.SSLContext:
    """The system's trusted roots (``SSL_CERT_FILE`` too); the client certificate if any."""
    context = ssl.create_default_context()
    if tsa.client_cert:
        try:
            context.load_cert_chain(Path(tsa.client_cert).expanduser())
        except (OSError, ssl.SSLError) as exc:
            raise TsaError(
                f"TSA at {tsa.where}: cannot read the client certificate {tsa.client_cert}: {exc}"
            ) from None
    return context


def _certificates(path: Path, what: str) -> list:
    from cryptography import x509

    try:
        return x509.load_pem_x509_certificates(path.expanduser().read_bytes())
    except (OSError, ValueError) as exc:
        raise TsaError(f"cannot read the {what} file {path}: {exc}") from None


# ---------------------------------------------------------------------------------- parsing


def canonical(reply: bytes, *, granted: bool = False) -> bytes:
    """``reply`` re-encoded as DER by asn1crypto (BER lengths made definite, SET OF sorted:
    see the module doc); with ``granted`` its status set to ``granted``."""
    from asn1crypto import tsp

    response = tsp.TimeStampResp.load(reply)
    if granted:
        response["status"] = tsp.PKIStatusInfo({"status": "granted"})
    return response.dump(force=True)


def parse(reply: bytes) -> Any:
    """rfc3161-client's ``TimeStampResponse`` of ``reply``, re-encoded first if its strict
    parser refuses the bytes as sent; :class:`TsaError` when it is no time-stamp response."""
    from rfc3161_client import decode_timestamp_response

    try:
        return decode_timestamp_response(reply)
    except Exception:  # the parser's own error types: not DER, or not a TimeStampResp
        pass
    try:
        return decode_timestamp_response(canonical(reply))
    except Exception:
        raise TsaError("its answer is not an RFC 3161 time-stamp response") from None


def _check_status(response: Any) -> None:
    from rfc3161_client import PKIStatus

    if PKIStatus(response.status) not in (PKIStatus.GRANTED, PKIStatus.GRANTED_WITH_MODS):
        text = "; ".join(response.status_string) or f"status {response.status}"
        raise TsaError(f"it refused the request ({text})")


def _check(reply: bytes, response: Any, digest: bytes, roots: list | None, tsa_certs: list):
    """The token's hash, its signer's certificate (key usage, validity at the signing time)
    and, with ``roots``, its signature and chain up to them."""
    info = response.tst_info
    if info.message_imprint.message != digest:
        raise TsaError("its token is for another hash than the one sent")
    leaf = _leaf(response, tsa_certs)
    if leaf is None:
        raise TsaError(
            "its token does not carry the certificate it was signed with (set tsa_cert_file "
            "to the TSA's certificate)"
        )
    _check_certificate(leaf, info.gen_time)
    if roots:
        _verify(reply, response, digest, roots, tsa_certs)


def _check_certificate(certificate: Any, when: datetime) -> None:
    from cryptography import x509

    try:
        usage = certificate.extensions.get_extension_for_class(x509.ExtendedKeyUsage)
    except x509.ExtensionNotFound:
        usage = None
    if usage is None or not any(oid.dotted_string == TIME_STAMPING for oid in usage.value):
        raise TsaError(
            f"its signing certificate ({certificate.subject.rfc4514_string()}) lacks the "
            "timeStamping extended key usage"
        )
    if not usage.critical:
        raise TsaError("its signing certificate's extended key usage is not critical")
    moment = when if when.tzinfo else when.replace(tzinfo=UTC)
    if not certificate.not_valid_before_utc <= moment <= certificate.not_valid_after_utc:
        raise TsaError(
            f"its signing certificate was not valid when it signed ({moment:%Y-%m-%d %H:%M} UTC; "
            f"valid {certificate.not_valid_before_utc:%Y-%m-%d} to "
            f"{certificate.not_valid_after_utc:%Y-%m-%d})"
        )


def _signer(response: Any, tsa_certs: list) -> str:
    certificate = _leaf(response, tsa_certs)
    return certificate.subject.rfc4514_string() if certificate is not None else ""


def _leaf(response: Any, tsa_certs: list) -> Any | None:
    """The certificate of the token's signer: among the token's certificates, else the
    configured TSA certificate (its issuer and serial those the token names)."""
    import cryptography.x509

    signed = response.signed_data
    infos = list(signed.signer_infos)
    if len(infos) != 1:
        return None
    info = infos[0]
    try:
        carried = [cryptography.x509.load_der_x509_certificate(c) for c in signed.certificates]
    except ValueError as exc:
        raise TsaError(f"its token carries a certificate that does not read: {exc}") from None
    for certificate in carried or tsa_certs[:1]:
        if certificate.issuer == info.issuer and certificate.serial_number == info.serial_number:
            return certificate
    return None


def _verify(reply: bytes, response: Any, digest: bytes, roots: list, tsa_certs: list) -> None:
    """rfc3161-client's verifier: the token's signature, its signer's certificate
    (timeStamping, critical; the configured one if any) and its chain up to ``roots`` at the
    signing time, and the hash it signed."""
    from rfc3161_client import PKIStatus, VerificationError, VerifierBuilder

    if PKIStatus(response.status) != PKIStatus.GRANTED:  # checked: only the token is verified
        response = parse(canonical(reply, granted=True))
    builder = VerifierBuilder()
    for root in roots:
        builder = builder.add_root_certificate(root)
    if tsa_certs:
        builder = builder.tsa_certificate(tsa_certs[0])
        for intermediate in tsa_certs[1:]:
            builder = builder.add_intermediate_certificate(intermediate)
    try:
        builder.build().verify(response, digest)
    except (VerificationError, ValueError) as exc:
        raise TsaError(f"its token does not verify up to the CA: {exc}") from None


# -------------------------------------------------------------------------------- verifying


@dataclass(frozen=True)
class TokenCheck:
    """What :func:`verify_token` found: ``ok``, the signing time and signer, and whether the
    signer was checked up to a trusted CA (``chain``) or only against its own certificate."""

    ok: bool
    message: str
    gen_time: datetime | None = None
    signer: str = ""
    chain: bool = False
    hash_name: str = ""
    carries_certificates: bool = True


def verify_token(
    reply: bytes, data: bytes, ca_file: Path | None = None, cert_file: Path | None = None
) -> TokenCheck:
    """Whether ``reply`` (a kept ``timestamp.tsr``) is a valid token over ``data``: its hash
    and its signer's key usage always; with ``ca_file``, its signature and signer up to that
    CA. ``cert_file``: the TSA's certificate, for a token that carries none."""
    try:
        response = parse(reply)
        _check_status(response)
        tsa_certs = _certificates(cert_file, "TSA certificate") if cert_file else []
        signer = _signer(response, tsa_certs)
    except TsaError as exc:
        return TokenCheck(False, str(exc))  # "its answer is not …": the file's, as named
    info = response.tst_info
    carries = bool(list(response.signed_data.certificates))
    algorithm = info.message_imprint.hash_algorithm.dotted_string
    if algorithm not in HASHES:
        return TokenCheck(False, f"the token's hash algorithm {algorithm} is not supported")
    name = HASHES[algorithm]
    digest = hashlib.new(name, data).digest()
    found = dict(gen_time=info.gen_time, signer=signer, hash_name=name,
                 carries_certificates=carries)  # fmt: skip
    if info.message_imprint.message != digest:
        message = "the token is for other data: manifest.json was changed after it was stamped"
        return TokenCheck(False, message, **found)
    try:
        if ca_file is None:
            _check(reply, response, digest, None, tsa_certs)
            return TokenCheck(
                True,
                "over this manifest; its signature NOT checked (give --ca-file, the TSA's CA)",
                **found,
            )
        _check(reply, response, digest, _certificates(ca_file, "CA"), tsa_certs)
    except TsaError as exc:
        return TokenCheck(False, str(exc).replace("its token", "the token"), **found)
    return TokenCheck(True, "verified up to the CA", chain=True, **found)
