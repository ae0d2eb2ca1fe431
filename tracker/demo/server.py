"""An HTTP server on 127.0.0.1 with an ephemeral port, run from a background thread.

Used for the demo's pirate site and the tests' generated sites: test traffic never leaves the
loopback interface.
"""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self


class LoopbackServer:
    def __init__(
        self,
        handler: Any,
        server_class: type[ThreadingHTTPServer] = ThreadingHTTPServer,
        name: str = "loopback-site",
    ) -> None:
        self._server = server_class(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        host, port = self._server.server_address[:2]
        self.port: int = port
        self.url = f"http://{host}:{port}/"
        self._thread = threading.Thread(target=self._server.serve_forever, name=name, daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop serving and release the port."""
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
