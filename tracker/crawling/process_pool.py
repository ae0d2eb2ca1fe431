"""Worker processes for a crawl's CPU-bound work, awaited from the event loop.

Extraction (lxml and trafilatura, ~8 ms a chapter page) holds the GIL, so threads cannot
overlap it with the rest of the crawl; a process can, on another core. The workers are forked
from a *forkserver* that imported the modules named once (not from the crawl process, which
has threads and open connections), ignore SIGINT (Ctrl-C stops the crawl, which stops them),
run a ``warm_up`` function when they start (dictionaries and tables a first call would load,
so the first page does not wait for them), and are replaced if one dies: the calls it took
are tried once more in a fresh pool, one at a time, so a page that kills a worker (a crash in
a C parser) fails alone, with its own error.

:class:`PoolBatcher` sends the calls a batch at a time (group commit, as
:class:`tracker.batching.Batcher`): every call is a round trip through the caller's
management threads, which wait for the GIL while the crawl's other threads run, and a worker
that finishes a call before the next one has arrived sits idle.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import signal
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import forkserver
from typing import TypeVar

from tracker.batching import Batcher

try:
    from fcntl import F_SETPIPE_SZ, fcntl
except ImportError:  # not Linux: the pipes keep their size
    F_SETPIPE_SZ = None

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

#: Bytes a worker may write into its result pipe before it waits for the caller to read (and
#: the caller into its call pipe). Linux's default, 64 KB, is less than one extracted chapter
#: page (its text and folded arrays: ~100 KB pickled), so the worker would stall on every
#: result until the caller's management thread got the GIL to read it. 1 MB is Linux's
#: ceiling for an unprivileged process (``/proc/sys/fs/pipe-max-size``).
PIPE_BYTES = 1 << 20


def _forkserver(preload: Sequence[str]) -> multiprocessing.context.BaseContext:
    """The forkserver context, its server importing ``preload`` (when it starts: a server
    already running keeps what it imported)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(preload))
    return context


def start_forkserver(preload: Sequence[str]) -> None:
    """Start the forkserver the workers are forked from now, importing ``preload`` in the
    background (a pool made later with the same ``preload`` forks its workers from it,
    without waiting for those imports)."""
    _forkserver(preload)
    forkserver.ensure_running()


def _start_worker(warm_up: Callable[[], object] | None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if warm_up is not None:
        try:
            warm_up()
        except Exception as exc:  # a worker that failed to warm up still works, only slower
            log.warning("worker warm-up failed: %r", exc)


class ProcessPool:
    """``processes`` worker processes (0: run the calls in the caller's thread), which import
    the modules ``preload`` names and run ``warm_up()`` (a module-level function) first."""

    def __init__(
        self,
        processes: int,
        preload: Sequence[str] = (),
        warm_up: Callable[[], object] | None = None,
    ) -> None:
        if processes < 0:
            raise ValueError("processes must be >= 0")
        self.processes = processes
        self.preload = list(preload)
        self.warm_up = warm_up
        self._executor: ProcessPoolExecutor | None = None
        self._retrying: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        self._starting: threading.Thread | None = None

    def _pool(self) -> ProcessPoolExecutor:
        if self._executor is None:
            context = _forkserver(self.preload)
            self._executor = ProcessPoolExecutor(
                self.processes,
                mp_context=context,
                initializer=_start_worker,
                initargs=(self.warm_up,),
            )
            _enlarge_pipes(self._executor)
        return self._executor

    def start(self) -> None:
        """Start the workers in the background: a worker's start waits for the forkserver's
        imports (~0.3 s), which the caller's thread (a crawl's event loop) should not."""
        if self.processes and self._starting is None:
            pool = self._pool()
            self._starting = threading.Thread(
                target=lambda: [pool.submit(int) for _ in range(self.processes)],
                name="process-pool-start",
                daemon=True,
            )
            self._starting.start()

    async def run(self, function: Callable[..., T], *args: object) -> T:
        """``function(*args)`` in a worker process; its exception is raised here."""
        if not self.processes:
            return function(*args)
        if self._starting is not None and self._starting.is_alive():
            await asyncio.to_thread(self._starting.join)  # submitting meanwhile would block
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
        if self._starting is not None:
            self._starting.join()
        if self._executor is not None:
            executor, self._executor = self._executor, None
            executor.shutdown(wait=True, cancel_futures=True)


def _enlarge_pipes(executor: ProcessPoolExecutor) -> None:
    """Give the executor's call and result pipes :data:`PIPE_BYTES` (where the platform and
    the executor's internals allow: otherwise they keep their size, and work as before)."""
    if F_SETPIPE_SZ is None:
        return
    for queue in ("_call_queue", "_result_queue"):
        reader = getattr(getattr(executor, queue, None), "_reader", None)
        with contextlib.suppress(AttributeError, OSError, ValueError):
            fcntl(reader.fileno(), F_SETPIPE_SZ, PIPE_BYTES)


class PoolBatcher(Batcher[T, R]):
    """A :class:`tracker.batching.Batcher` whose batches run in ``pool``'s worker processes:
    ``handler`` (a module-level function) gets a batch and returns one result per item, an
    exception being that item's own. ``workers`` batches are in flight at once (by default
    one more than the pool has processes, so that a worker finishing a batch finds the next
    one already sent). A batch that fails whole (its worker died twice: see
    :meth:`ProcessPool.run`) is run again item by item, so that only the item that killed its
    worker fails. With no worker processes the batches run in threads, as a
    :class:`~tracker.batching.Batcher`'s."""

    def __init__(
        self,
        pool: ProcessPool,
        handler: Callable[[list[T]], Sequence[R | BaseException]],
        size: int = 16,
        delay: float = 0.005,
        workers: int | None = None,
        name: str = "pool-batcher",
    ) -> None:
        super().__init__(handler, size, delay, workers or pool.processes + 1, name)
        self.pool = pool

    def _dispatch(self, items: list[T]) -> asyncio.Future:
        if not self.pool.processes:
            return super()._dispatch(items)
        return asyncio.ensure_future(self.pool.run(self.handler, items))
