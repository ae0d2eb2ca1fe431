"""Embedded servers: a Redis still reading its dump back is waited for, not handed out."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from tracker.servers import services


def _fake_redis(replies: list[bytes]) -> tuple[int, threading.Thread]:
    """A loopback server answering each connection's PING with the next reply (the last one
    repeated)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(5)

    def serve() -> None:
        with server:
            for i in range(50):
                try:
                    conn, _ = server.accept()
                except OSError:
                    return
                with conn:
                    conn.recv(64)
                    conn.sendall(replies[min(i, len(replies) - 1)])
                    if replies[min(i, len(replies) - 1)].startswith(b"+PONG"):
                        return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return server.getsockname()[1], thread


def test_a_loading_redis_is_waited_for():
    loading = b"-LOADING Valkey is loading the dataset in memory\r\n"
    port, thread = _fake_redis([loading, loading, loading, b"+PONG\r\n"])
    state = services.ServiceState("redis", pid=0, port=port, url=f"redis://127.0.0.1:{port}/0")
    started = time.monotonic()
    services._wait_ready(state, time.monotonic() + 10)
    assert time.monotonic() - started >= 0.3  # three refusals, 0.1 s apart
    thread.join(5)
    assert not thread.is_alive()  # it was asked until it answered PONG


def test_a_redis_that_never_finishes_loading_is_an_error():
    port, _ = _fake_redis([b"-LOADING Valkey is loading the dataset in memory\r\n"])
    state = services.ServiceState("redis", pid=0, port=port, url=f"redis://127.0.0.1:{port}/0")
    with pytest.raises(services.ServiceError, match="still loading"):
        services._wait_ready(state, time.monotonic() + 0.5)
