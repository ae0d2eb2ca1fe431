"""bench.library_scale measures the servers it is given by URL too: the process listening on a
URL's port is found from /proc (a server it did not start has its CPU and memory counted)."""

import os
import socket
import sys

import pytest

from bench.library_scale import Servers, listening_pid

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def test_the_process_listening_on_a_urls_port_is_found():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert listening_pid(f"redis://127.0.0.1:{port}/0") == os.getpid()
        assert listening_pid(f"mongodb://127.0.0.1:{port}/") == os.getpid()
        servers = Servers(None, f"mongodb://127.0.0.1:{port}/", f"redis://127.0.0.1:{port}/0")
        assert servers.pids() == {"redis": os.getpid(), "mongo": os.getpid()}
    # closed: nothing listens there any more
    assert listening_pid(f"redis://127.0.0.1:{port}/0") is None


def test_a_connected_socket_is_not_taken_for_the_listener():
    """A connection accepted on the port (its local port the same, held by this process) is
    not a listener once the listening socket is closed."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)):
            accepted, _ = server.accept()
            with accepted:
                server.close()
                assert listening_pid(f"redis://127.0.0.1:{port}/0") is None
