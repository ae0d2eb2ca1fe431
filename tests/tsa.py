"""Local RFC 3161 time-stamping authorities for the tests: ``openssl ts -reply`` behind an HTTP(S)
server on 127.0.0.1 speaking ``application/timestamp-query``.

Each :class:`LocalTsa` has a PKI of its own (:func:`make_pki`, built with ``cryptography``: a
root CA, an intermediate CA when ``chain``, a TSA certificate with extendedKeyUsage
timeStamping, critical, as RFC 3161 requires) and answers as one kind of real TSA does, by its
:class:`Profile`:

* ``chain``: the token carries the TSA's certificate, the intermediate and the root *in chain
  order*, as openssl writes a ``certs`` file (a SET OF that is not DER-sorted);
* ``key`` ``ec`` (ECDSA P-256) or ``rsa``; ``digest`` the signer's digest; ``tsa_name``;
* ``certs`` ``none``: a token without certificates (the TSA ignores certReq);
* ``user``/``password``: HTTP Basic authentication; ``client_ca``: HTTPS with client
  certificates;
* ``ber``: the answer re-encoded with indefinite lengths (BER) and its certificates in reverse;
* ``granted_with_mods``: the status ``grantedWithMods`` (it is outside the signed token).

``mode`` makes it misbehave: ``down`` (HTTP 503), ``garbage`` (200 with bytes that are no
response), ``slow`` (answers after ``delay`` seconds), ``truncated`` (half the answer),
``other-hash`` and ``other-nonce`` (a valid token for another hash or nonce than asked),
``no-eku`` (the token's certificate swapped for one of the same key and serial without the
timeStamping key usage). ``expired`` in the profile signs with a certificate that has expired.
The post-processing is done with asn1crypto and asn1crypto.parser, not the code under test.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import os
import ssl
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tracker.demo.server import LoopbackServer

TSA_CONFIG = """
[ tsa ]
default_tsa = tsa_config
[ tsa_config ]
dir = {dir}
serial = $dir/serial
crypto_device = builtin
signer_cert = $dir/tsa.crt
{certs}
signer_key = $dir/tsa.key
signer_digest = {digest}
default_policy = 1.2.3.4.1
other_policies = 1.2.3.4.5
digests = sha256, sha384, sha512
accuracy = secs:1
ordering = yes
tsa_name = {tsa_name}
ess_cert_id_chain = {ess_chain}
ess_cert_id_alg = sha256
"""


@dataclass(frozen=True)
class Profile:
    """How a TSA signs and what it asks of its clients (see the module doc)."""

    name: str = "signer-only"
    key: str = "rsa"
    digest: str = "sha256"
    chain: bool = False
    tsa_name: bool = False
    certs: str = "signer"  # "signer", "chain" (with chain=True), "none"
    user: str = ""
    password: str = ""
    client_ca: bool = False
    ber: bool = False
    granted_with_mods: bool = False
    expired: bool = False


#: The five kinds of TSA of the issue, and the others a standard verifier accepts.
PROFILES = {
    "chain": Profile("chain", chain=True, certs="chain", tsa_name=True),
    "ecdsa": Profile("ecdsa", key="ec"),
    "sha512-named": Profile("sha512-named", digest="sha512", tsa_name=True),
    "basic-auth": Profile("basic-auth", user="tracker", password="s3cret pass"),
    "signer-only": Profile("signer-only"),
    "ber": Profile("ber", chain=True, certs="chain", ber=True),
    "no-certs": Profile("no-certs", certs="none", digest="sha384"),
    "granted-with-mods": Profile("granted-with-mods", granted_with_mods=True),
    "client-cert": Profile("client-cert", key="ec", client_ca=True),
}


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _key(kind: str):
    if kind == "ec":
        return ec.generate_private_key(ec.SECP256R1())
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _pem(path: Path, *certificates: x509.Certificate) -> Path:
    path.write_bytes(b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certificates))
    return path


def _write_key(path: Path, key) -> Path:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return path


def _certificate(
    subject, key, issuer, issuer_key, *, ca: bool, serial: int | None = None,
    eku: list | None = None, san: list | None = None, days: tuple = (-1, 30),
):  # fmt: skip
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(serial or x509.random_serial_number())
        .not_valid_before(now + dt.timedelta(days=days[0]))
        .not_valid_after(now + dt.timedelta(days=days[1]))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
    )
    if ca:
        usage = dict(key_cert_sign=True, crl_sign=True, digital_signature=False)
    else:
        usage = dict(key_cert_sign=False, crl_sign=False, digital_signature=True)
    builder = builder.add_extension(
        x509.KeyUsage(content_commitment=not ca, key_encipherment=False, data_encipherment=False,
                      key_agreement=False, encipher_only=False, decipher_only=False, **usage),
        critical=True,
    )  # fmt: skip
    if eku:
        builder = builder.add_extension(x509.ExtendedKeyUsage(eku), critical=True)
    if san:
        builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


@dataclass(frozen=True)
class Pki:
    ca_file: Path  # the root, what a user gives as -CAfile / --ca-file
    tsa_cert: Path  # the TSA's own certificate (tsa_cert_file)
    chain_file: Path  # TSA, intermediate (when any), root: chain order


def make_pki(folder: Path, profile: Profile = Profile()) -> Pki:
    """A root CA, an intermediate (``profile.chain``) and a TSA key and certificate in
    ``folder``, with the ``openssl ts`` configuration ``tsa.cnf``, and ``tsa-noeku.crt``: the
    TSA's certificate again (same key, issuer and serial) without the timeStamping usage."""
    folder.mkdir(parents=True, exist_ok=True)
    root_key = _key(profile.key)
    root = _certificate(_name(f"Test Root CA {profile.name}"), root_key,
                        _name(f"Test Root CA {profile.name}"), root_key, ca=True)  # fmt: skip
    issuer, issuer_key, chain = root, root_key, [root]
    if profile.chain:
        inter_key = _key(profile.key)
        inter = _certificate(_name(f"Test Intermediate CA {profile.name}"), inter_key,
                             root.subject, root_key, ca=True)  # fmt: skip
        issuer, issuer_key, chain = inter, inter_key, [inter, root]
    tsa_key = _key(profile.key)
    serial = x509.random_serial_number()
    days = (-30, -1) if profile.expired else (-1, 30)
    subject = _name(f"Test TSA {profile.name}")
    tsa = _certificate(subject, tsa_key, issuer.subject, issuer_key, ca=False, serial=serial,
                       eku=[ExtendedKeyUsageOID.TIME_STAMPING], days=days)  # fmt: skip
    noeku = _certificate(subject, tsa_key, issuer.subject, issuer_key, ca=False, serial=serial,
                         eku=[ExtendedKeyUsageOID.CODE_SIGNING])  # fmt: skip
    _write_key(folder / "tsa.key", tsa_key)
    _pem(folder / "tsa.crt", tsa)
    _pem(folder / "tsa-noeku.crt", noeku)
    _pem(folder / "ca.crt", root)
    chain_file = _pem(folder / "chain.pem", tsa, *chain)
    _pem(folder / "issuers.pem", *chain)  # openssl's certs: those after the signer's own
    (folder / "serial").write_text("01\n", encoding="ascii")
    (folder / "tsa.cnf").write_text(
        TSA_CONFIG.format(
            dir=folder,
            certs="certs = $dir/issuers.pem" if profile.certs == "chain" else "",
            digest=profile.digest,
            tsa_name="yes" if profile.tsa_name else "no",
            ess_chain="yes" if profile.certs == "chain" else "no",
        ),
        encoding="utf-8",
    )
    return Pki(folder / "ca.crt", folder / "tsa.crt", chain_file)


def make_client_pki(folder: Path) -> tuple[Path, Path, Path, Path]:
    """For HTTPS with client certificates: (server CA, server cert+key PEM, client CA, client
    cert+key PEM), the server's for 127.0.0.1."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    loopback = [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    for role, san in (("server", loopback), ("client", None)):
        ca_key = _key("ec")
        ca = _certificate(_name(f"Test {role} CA"), ca_key, _name(f"Test {role} CA"), ca_key,
                          ca=True)  # fmt: skip
        key = _key("ec")
        usage = (
            ExtendedKeyUsageOID.SERVER_AUTH if role == "server" else ExtendedKeyUsageOID.CLIENT_AUTH
        )
        cert = _certificate(_name(f"127.0.0.1 {role}"), key, ca.subject, ca_key, ca=False,
                            eku=[usage], san=san)  # fmt: skip
        both = folder / f"{role}.pem"
        _pem(both, cert)
        both.write_bytes(both.read_bytes() + _write_key(folder / f"{role}.key", key).read_bytes())
        paths += [_pem(folder / f"{role}-ca.crt", ca), both]
    return tuple(paths)  # type: ignore[return-value]


class _TlsServer(ThreadingHTTPServer):
    context: ssl.SSLContext

    def get_request(self):
        sock, address = super().get_request()
        return self.context.wrap_socket(sock, server_side=True), address


class LocalTsa(LoopbackServer):
    """``openssl ts -reply`` at ``self.url`` (see the module doc)."""

    def __init__(self, folder: Path, profile: Profile | str = "signer-only") -> None:
        self.profile = PROFILES[profile] if isinstance(profile, str) else profile
        self.folder = folder
        self.pki = make_pki(folder, self.profile)
        self.ca_file = self.pki.ca_file
        self.mode = "ok"
        self.delay = 0.0
        self.queries = 0
        self.last_query = b""
        self._lock = threading.Lock()
        tsa = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                query = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with tsa._lock:
                    tsa.queries += 1
                if not tsa.authorised(self.headers.get("Authorization", "")):
                    status, kind, body = 401, "text/plain", b"log in"
                else:
                    status, kind, body = tsa.answer(query, self.headers.get("Content-Type", ""))
                try:
                    self.send_response(status)
                    if status == 401:
                        self.send_header("WWW-Authenticate", 'Basic realm="tsa"')
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass  # the client gave up (a slow answer)

            def log_message(self, format: str, *args: object) -> None:
                pass

        server_class: type[ThreadingHTTPServer] = ThreadingHTTPServer
        if self.profile.client_ca:
            server_ca, server_pem, client_ca, client_pem = make_client_pki(folder / "tls")
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(server_pem)
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(client_ca)
            self.server_ca, self.client_cert = server_ca, client_pem
            server_class = type("TlsServer", (_TlsServer,), {"context": context})
        super().__init__(Handler, server_class, name=f"test-tsa-{self.profile.name}")
        if self.profile.client_ca:
            self.url = self.url.replace("http://", "https://")
        self.plain_url = self.url
        if self.profile.user:
            self.url = self.url.replace(
                "://", f"://{self.profile.user}:{self.profile.password.replace(' ', '%20')}@"
            )

    def authorised(self, header: str) -> bool:
        if not self.profile.user:
            return True
        expected = f"{self.profile.user}:{self.profile.password}".encode()
        return header == "Basic " + base64.b64encode(expected).decode()

    def answer(self, query: bytes, content_type: str) -> tuple[int, str, bytes]:
        if self.mode == "down":
            return 503, "text/plain", b"maintenance"
        if self.mode == "garbage":
            return 200, "application/timestamp-reply", b"\x30\x03\x02\x01\x07 not a token"
        if self.mode == "slow":
            time.sleep(self.delay)
        if content_type != "application/timestamp-query":
            return 415, "text/plain", b"send application/timestamp-query"
        self.last_query = query
        query = _query_as_signed(query, self.mode, self.profile)
        status, reply = self.sign(query)
        if status != 200:
            return status, "text/plain", reply
        reply = _reply_as_sent(reply, self.mode, self.profile, self.folder)
        return 200, "application/timestamp-reply", reply

    def sign(self, query: bytes) -> tuple[int, bytes]:
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "q.tsq").write_bytes(query)
            result = subprocess.run(
                [
                    *("openssl", "ts", "-reply", "-config", str(self.folder / "tsa.cnf")),
                    *("-queryfile", "q.tsq", "-out", "r.tsr"),
                ],
                cwd=tmp,
                capture_output=True,
                check=False,
            )
            if result.returncode != 0:
                return 400, result.stderr
            return 200, (Path(tmp) / "r.tsr").read_bytes()


def _query_as_signed(query: bytes, mode: str, profile: Profile) -> bytes:
    """The query the TSA signs: the one asked, or another hash/nonce (a misbehaving TSA), or
    without certReq (a TSA that never includes certificates)."""
    if mode not in ("other-hash", "other-nonce") and profile.certs != "none":
        return query
    from asn1crypto import tsp

    request = tsp.TimeStampReq.load(query)
    if mode == "other-hash":
        imprint = request["message_imprint"]
        imprint["hashed_message"] = bytes(32 - len(b"other")) + b"other"
    if mode == "other-nonce":
        request["nonce"] = int(request["nonce"].native or 0) + 1
    if profile.certs == "none":
        request["cert_req"] = False
    return request.dump(force=True)


def _reply_as_sent(reply: bytes, mode: str, profile: Profile, folder: Path) -> bytes:
    if profile.granted_with_mods or mode == "no-eku":
        from asn1crypto import tsp
        from asn1crypto import x509 as asn1_x509

        response = tsp.TimeStampResp.load(reply)
        if profile.granted_with_mods:
            response["status"]["status"] = "granted_with_mods"
        if mode == "no-eku":
            pem = (folder / "tsa-noeku.crt").read_bytes()
            der = x509.load_pem_x509_certificate(pem).public_bytes(serialization.Encoding.DER)
            signed = response["time_stamp_token"]["content"]
            signed["certificates"] = [asn1_x509.Certificate.load(der)]
        reply = response.dump(force=False)
    if profile.ber:
        reply = _as_ber(reply)
    if mode == "truncated":
        reply = reply[: len(reply) // 2]
    return reply


def _as_ber(reply: bytes) -> bytes:
    """``reply`` with indefinite lengths for TimeStampResp, ContentInfo, its [0], SignedData and
    the certificate set, whose certificates are put in reverse order: BER, as Java and .NET
    TSAs write it. The certificates and the signed attributes keep their DER bytes."""
    from asn1crypto import parser

    def tlv(data: bytes) -> list[tuple]:
        found, rest = [], data
        while rest:
            size = parser.peek(rest)
            _, _, _, header, content, _ = parser.parse(rest[:size], strict=True)
            found.append((header, content))
            rest = rest[size:]
        return found

    def indefinite(header: bytes, parts: list[bytes]) -> bytes:
        return header[:1] + b"\x80" + b"".join(parts) + b"\x00\x00"

    ((resp_header, resp),) = tlv(reply)
    status, token = tlv(resp)
    ci_header, ci = token
    oid, explicit = tlv(ci)
    ((sd_header, sd),) = tlv(explicit[1])
    fields = []
    for header, content in tlv(sd):
        if header[0] == 0xA0:  # certificates [0] IMPLICIT SET OF
            certificates = [h + c for h, c in tlv(content)][::-1]
            fields.append(indefinite(header, certificates))
        else:
            fields.append(header + content)
    signed = indefinite(sd_header, fields)
    content_info = indefinite(ci_header, [oid[0] + oid[1], indefinite(explicit[0], [signed])])
    return indefinite(resp_header, [status[0] + status[1], content_info])


def openssl_verify(data: Path, tsr: Path, ca_file: Path, untrusted: Path | None = None):
    """``openssl ts -verify -data DATA -in TSR -CAfile CA``, as a legal user would run it."""
    return subprocess.run(
        [
            *("openssl", "ts", "-verify", "-data", str(data), "-in", str(tsr)),
            *("-CAfile", str(ca_file)),
            *(("-untrusted", str(untrusted)) if untrusted else ()),
        ],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "OPENSSL_CONF": "/dev/null"},
    )
