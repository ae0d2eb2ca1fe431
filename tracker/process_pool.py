"""Worker processes for a crawl's CPU-bound work, awaited from the event loop.

Extraction (lxml and trafilatura, ~8 ms a chapter page) holds the GIL, so threads cannot
overlap it with the rest of the crawl; a process can, on another core. The workers are forked
from a *forkserver* that imported the modules named once (not from the crawl process, which
has threads and open connections), ignore SIGINT (Ctrl-C stops the crawl, which stops them),
and are replaced if one dies: the calls it took are tried once more in a fresh pool, one at a
time, so a page that kills a worker (a crash in a C parser) fails alone, with its own error.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import signal
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


def _ignore_interrupts() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class ProcessPool:
    """``processes`` worker processes (0: run the calls in the caller's thread)."""

    def __init__(self, processes: int, preload: Sequence[str] = ()) -> None:
        if processes < 0:
            raise ValueError("processes must be >= 0")
        self.processes = processes
        self.preload = list(preload)
        self._executor: ProcessPoolExecutor | None = None
        self._retrying: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None

    def _pool(self) -> ProcessPoolExecutor:
        if self._executor is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(self.preload)
            self._executor = ProcessPoolExecutor(
                self.processes, mp_context=context, initializer=_ignore_interrupts
            )
        return self._executor

    def start(self) -> None:
        """Start the workers now (they import the preloaded modules while the crawl starts)."""
        if self.processes:
            for _ in range(self.processes):
                self._pool().submit(int)

    async def run(self, function: Callable[..., T], *args: object) -> T:
        """``function(*args)`` in a worker process; its exception is raised here."""
        if not self.processes:
            return function(*args)
        try:
            return await self._submit(function, args)
        except BrokenProcessPool:
            async with self._retry_lock():  # one retry at a time: a killer kills only itself
                return await self._submit(function, args)

    async def _submit(self, function: Callable[..., T], args: tuple) -> T:
        pool = self._pool()
        try:
            return await asyncio.wrap_future(pool.submit(function, *args))
        except BrokenProcessPool:
            if self._executor is pool:
                log.error("a worker process died; starting new ones")
                self._executor = None
                pool.shutdown(wait=False, cancel_futures=True)
            raise

    def _retry_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._retrying is None or self._retrying[0] is not loop:
            self._retrying = (loop, asyncio.Lock())
        return self._retrying[1]

    def close(self) -> None:
        if self._executor is not None:
            executor, self._executor = self._executor, None
            executor.shutdown(wait=True, cancel_futures=True)
