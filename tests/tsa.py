"""A local RFC 3161 time-stamping authority for the tests: ``openssl ts -reply`` behind an HTTP
server on 127.0.0.1 speaking ``application/timestamp-query``.

:func:`make_pki` makes a CA and a TSA certificate it signs (extendedKeyUsage timeStamping,
critical, as RFC 3161 requires); :class:`LocalTsa` answers each POSTed query with ``openssl ts
-reply``. Its ``mode`` makes it misbehave: ``down`` (HTTP 503), ``garbage`` (200 with bytes that
are no response), ``slow`` (answers after ``delay`` seconds).
"""

from __future__ import annotations

import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from tracker.demo.server import LoopbackServer

TSA_CONFIG = """
[ req ]
distinguished_name = dn
prompt = no
[ dn ]
CN = placeholder
[ ca_ext ]
basicConstraints = critical, CA:true
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[ tsa_ext ]
basicConstraints = critical, CA:false
keyUsage = critical, digitalSignature, nonRepudiation
extendedKeyUsage = critical, timeStamping
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[ tsa ]
default_tsa = tsa_config
[ tsa_config ]
dir = {dir}
serial = $dir/serial
crypto_device = builtin
signer_cert = $dir/tsa.crt
certs = $dir/tsa.crt
signer_key = $dir/tsa.key
signer_digest = sha256
default_policy = 1.2.3.4.1
other_policies = 1.2.3.4.5
digests = sha256, sha384, sha512
accuracy = secs:1
ordering = yes
tsa_name = yes
ess_cert_id_chain = no
ess_cert_id_alg = sha256
"""


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_pki(folder: Path) -> Path:
    """A CA (``ca.crt``) and a TSA key and certificate (``tsa.key``, ``tsa.crt``) in
    ``folder``, with the ``openssl ts`` configuration (``tsa.cnf``); returns the CA's path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tsa.cnf").write_text(TSA_CONFIG.format(dir=folder), encoding="utf-8")
    (folder / "serial").write_text("01\n", encoding="ascii")
    config = "tsa.cnf"
    _openssl("genrsa", "-out", "ca.key", "2048", cwd=folder)
    _openssl(
        *("req", "-new", "-x509", "-key", "ca.key", "-out", "ca.crt", "-days", "30"),
        *("-config", config, "-extensions", "ca_ext", "-subj", "/CN=Tracker Test Root CA"),
        cwd=folder,
    )
    _openssl("genrsa", "-out", "tsa.key", "2048", cwd=folder)
    _openssl(
        *("req", "-new", "-key", "tsa.key", "-out", "tsa.csr", "-config", config),
        *("-subj", "/CN=Tracker Test TSA"),
        cwd=folder,
    )
    _openssl(
        *("x509", "-req", "-in", "tsa.csr", "-CA", "ca.crt", "-CAkey", "ca.key"),
        *("-CAcreateserial", "-out", "tsa.crt", "-days", "30"),
        *("-extfile", config, "-extensions", "tsa_ext"),
        cwd=folder,
    )
    return folder / "ca.crt"


class LocalTsa(LoopbackServer):
    """``openssl ts -reply`` at ``self.url`` (see the module doc)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.ca_file = make_pki(folder)
        self.mode = "ok"
        self.delay = 0.0
        self.queries = 0
        self._lock = threading.Lock()
        tsa = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                query = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with tsa._lock:
                    tsa.queries += 1
                status, kind, body = tsa.answer(query, self.headers.get("Content-Type", ""))
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass  # the client gave up (a slow answer)

            def log_message(self, format: str, *args: object) -> None:
                pass

        super().__init__(Handler, name="test-tsa")

    def answer(self, query: bytes, content_type: str) -> tuple[int, str, bytes]:
        if self.mode == "down":
            return 503, "text/plain", b"maintenance"
        if self.mode == "garbage":
            return 200, "application/timestamp-reply", b"\x30\x03\x02\x01\x07 not a token"
        if self.mode == "slow":
            time.sleep(self.delay)
        if content_type != "application/timestamp-query":
            return 415, "text/plain", b"send application/timestamp-query"
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
                return 400, "text/plain", result.stderr
            return 200, "application/timestamp-reply", (Path(tmp) / "r.tsr").read_bytes()


def openssl_verify(data: Path, tsr: Path, ca_file: Path) -> subprocess.CompletedProcess:
    """``openssl ts -verify -data DATA -in TSR -CAfile CA``, as a legal user would run it."""
    return subprocess.run(
        [
            *("openssl", "ts", "-verify", "-data", str(data), "-in", str(tsr)),
            *("-CAfile", str(ca_file)),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
