"""A local SMTP server for the tests (aiosmtpd on 127.0.0.1): it offers STARTTLS with a
certificate of a test CA (clients trust it through ``SSL_CERT_FILE``), takes a login, and
keeps every message it accepts (parsed with the standard library's current policy, and
raw). ``mode``: ``ok``, ``reject`` (554 to the mail's data),
``garbage`` (the port answers bytes that are not SMTP), ``down`` (nothing listens)."""

from __future__ import annotations

import contextlib
import socket
import ssl
import subprocess
import threading
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

USER, PASSWORD = "tracker", "s3cret pass"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def make_certificate(folder: Path) -> tuple[Path, Path, Path]:
    """A CA and a server certificate for 127.0.0.1 signed by it: (ca, cert, key)."""
    folder.mkdir(parents=True, exist_ok=True)

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
            "ca.crt", "-days", "30", "-subj", "/CN=Tracker Test Mail CA",
            "-addext", "basicConstraints=critical,CA:true",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out",
            "server.csr", "-subj", "/CN=127.0.0.1")  # fmt: skip
    (folder / "ext.cnf").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"
    )
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "server.crt", "-days", "30",
            "-extfile", "ext.cnf")  # fmt: skip
    return folder / "ca.crt", folder / "server.crt", folder / "server.key"


class LocalSmtp:
    def __init__(self, folder: Path) -> None:
        self.ca_file, cert, key = make_certificate(folder)
        self.messages: list[EmailMessage] = []
        self.envelopes: list[tuple[str, list[str]]] = []
        self.raw: list[bytes] = []  # each message as it came over the wire
        self.mode = "ok"
        self.logins: list[str] = []
        self.port = _free_port()
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        server = self

        class Handler:
            async def handle_DATA(self, smtp, session, envelope) -> str:
                if server.mode == "reject":
                    return "554 5.7.1 message refused"
                server.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
                server.raw.append(envelope.original_content)
                server.messages.append(
                    message_from_bytes(envelope.original_content, policy=policy.default)
                )
                return "250 OK"

        def authenticate(smtp, session, envelope, mechanism, data) -> AuthResult:
            ok = isinstance(data, LoginPassword) and (data.login, data.password) == (
                USER.encode(),
                PASSWORD.encode(),
            )
            if ok:
                self.logins.append(USER)
            return AuthResult(success=ok)

        def controller() -> Controller:
            return Controller(
                Handler(),
                hostname="127.0.0.1",
                port=self.port,
                tls_context=context,
                authenticator=authenticate,
                auth_require_tls=True,
            )

        self._controller = controller
        self.controller = controller()
        self.controller.start()
        self._garbage: socket.socket | None = None

    @property
    def url(self) -> str:
        from urllib.parse import quote

        return f"smtp://{USER}:{quote(PASSWORD)}@127.0.0.1:{self.port}"

    def go_down(self) -> None:
        self.controller.stop()
        self.mode = "down"

    def come_back(self) -> None:
        self.stop_garbage()
        self.controller = self._controller()  # a stopped controller's loop is closed
        self.controller.start()
        self.mode = "ok"

    def answer_garbage(self) -> None:
        """Stop the SMTP server and answer anything on its port with bytes that are no SMTP."""
        self.controller.stop()
        self.mode = "garbage"
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen()
        self._garbage = listener

        def serve() -> None:
            while True:
                try:
                    connection, _ = listener.accept()
                except OSError:
                    return
                with connection:
                    connection.sendall(b"\x00\xffHELLO? this is not SMTP\r\n")

        self._garbage_thread = threading.Thread(target=serve, daemon=True)
        self._garbage_thread.start()

    def stop_garbage(self) -> None:
        if self._garbage is not None:
            with contextlib.suppress(OSError):
                self._garbage.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
            self._garbage.close()
            self._garbage_thread.join(5)
            self._garbage = None

    def close(self) -> None:
        self.stop_garbage()
        if self.mode not in ("down", "garbage"):
            self.controller.stop()
