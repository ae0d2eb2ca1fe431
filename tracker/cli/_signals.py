"""How a long-running command stops: the first SIGINT/SIGTERM asks it to finish what it is
doing, a second one stops it at once (``KeyboardInterrupt``)."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def graceful_stop(log: logging.Logger, then: str) -> Iterator[threading.Event]:
    """An event set by the first SIGINT or SIGTERM (logged as ``SIGTERM: <then>``); the next
    one raises :class:`KeyboardInterrupt`. The previous handlers are back on exit."""
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        log.info("%s: %s", signal.Signals(signum).name, then)
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
