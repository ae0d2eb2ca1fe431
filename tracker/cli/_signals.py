"""How a long-running command stops: the first SIGINT/SIGTERM asks it to finish what it is
doing, a second one stops it at once (``KeyboardInterrupt``); and how a command that has
closed all it opened ends at once (:func:`exit_now`)."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn


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


def exit_now(status: int) -> NoReturn:
    """End the process with ``status``, its logs and standard streams flushed, skipping the
    interpreter's teardown: pymongo joins its monitor threads at exit, which sleep in 0.5 s
    steps, and the heap is freed object by object. Only for a command that has closed
    everything it opened (``tracker check``, ``scrapy crawl``): the teardown only waits."""
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(status)
