"""A local webhook for the alert tests: an HTTP server on 127.0.0.1 keeping every JSON body
POSTed to it; ``status`` is what it answers (503: down)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler

from tracker.demo.server import LoopbackServer


class LocalWebhook(LoopbackServer):
    def __init__(self) -> None:
        self.bodies: list[dict] = []
        self.status = 200
        self.attempts = 0
        self.received = threading.Event()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                hook.attempts += 1
                if hook.status == 200:
                    hook.bodies.append(json.loads(data))
                    hook.received.set()
                self.send_response(hook.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        super().__init__(Handler, name="test-webhook")

    def copies(self) -> list[dict]:
        return [copy for body in self.bodies for copy in body["copies"]]
