"""The project's one way of cutting a stream of items into batches (bulk writes, ``$in``
queries, index lookups, pipelined fingerprinting): :func:`batches` for a stream in hand, and
:class:`Batcher` for items that arrive one by one on an event loop (a crawl's pages)."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from itertools import islice
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

#: Values per ``{"field": {"$in": [...]}}`` read (ids, page numbers, URLs). SecantusDB answers
#: an ``$in`` of n values on an indexed field in more than linear time: 0.15-0.18 ms a document
#: in lists of 50, 0.3 at 100, 1.4-1.9 at 1,000 (pages and matches, 100,000 stored; on ``_id``,
#: ``n`` and ``url`` alike); a real MongoDB is as fast either way.
ID_BATCH = 50


def batches(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of ``size`` (the last one shorter), read as they are used."""
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


class Batcher(Generic[T, R]):
    """Gathers items submitted on an asyncio event loop into batches and runs
    ``handler(batch) -> results`` (one result per item, in order) on each batch in a worker
    thread, so the loop never waits for it; ``await submit(item)`` returns the item's own
    result.

    *Group commit* (DeWitt et al., "Implementation techniques for main memory database
    systems", SIGMOD 1984): a batch is handed to a worker when it holds ``size`` items, or when
    a worker is free and ``delay`` seconds have passed since its first item. While every worker
    is busy the next batch keeps filling, so batches grow with the load and each round trip
    serves more items, while an item meeting an idle worker waits ``delay`` at most. With
    ``workers=1`` (the default) batches run one after the other, in the order their items were
    submitted.

    Errors are each item's own: a result that is an exception is raised to that item's
    awaiter only. A batch whose handler raises is run again item by item (before any later
    batch), so one bad item cannot fail the others; the handler must therefore be safe to
    run again on items of a batch that failed part-way (upserts, reads).
    """

    def __init__(
        self,
        handler: Callable[[list[T]], Sequence[R | BaseException]],
        size: int = 16,
        delay: float = 0.005,
        workers: int = 1,
        name: str = "batcher",
    ) -> None:
        if size < 1 or workers < 1 or delay < 0:
            raise ValueError("a batcher needs size >= 1, workers >= 1 and delay >= 0")
        self.handler = handler
        self.size = size
        self.delay = delay
        self.workers = workers
        self.name = name
        self._executor: Executor | None = None
        self._filling: list[tuple[T, asyncio.Future]] = []
        self._full: deque[list[tuple[T, asyncio.Future]]] = deque()
        self._due = False  # the filling batch's delay has passed
        self._timer: asyncio.TimerHandle | None = None
        self._running: dict[asyncio.Future, int] = {}  # batch in a worker -> its size
        self.batches = 0  # batches run, and the items in them (their mean size is telling)
        self.items = 0

    async def submit(self, item: T) -> R:
        """Queue ``item``; its result once its batch has run."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future = loop.create_future()
        self._filling.append((item, future))
        if len(self._filling) >= self.size:
            self._close_filling()
        elif self._timer is None and not self._due:
            self._timer = loop.call_later(self.delay, self._expire)
        self._launch()
        return await future

    def prepare(self, warm_up: Callable[[], object]) -> None:
        """Run ``warm_up()`` in a worker thread now, ahead of any batch (connections, tables),
        so the first items need not wait for it. A failure is logged, not raised: the batches
        meet it again and handle it as theirs."""
        self._workers().submit(self._warm_up, warm_up)

    def _warm_up(self, warm_up: Callable[[], object]) -> None:
        try:
            warm_up()
        except Exception as exc:
            log.info("%s: warming up failed (%r); the first batch will try again", self.name, exc)

    def pending(self) -> int:
        """Items submitted and not yet answered."""
        queued = len(self._filling) + sum(len(batch) for batch in self._full)
        return queued + sum(self._running.values())

    async def drain(self) -> None:
        """Run every item submitted so far, now, and wait for all batches to finish."""
        while self._filling or self._full or self._running:
            if self._filling:
                self._close_filling()
            self._launch()
            if self._running:
                await asyncio.wait(set(self._running))

    async def close(self) -> None:
        """:meth:`drain`, then stop the workers."""
        await self.drain()
        if self._executor is not None:
            executor, self._executor = self._executor, None
            await asyncio.get_running_loop().run_in_executor(None, executor.shutdown)

    # ------------------------------------------------------------------------------ inner

    def _expire(self) -> None:
        self._timer = None
        self._due = True
        self._launch()

    def _close_filling(self) -> None:
        self._full.append(self._filling)
        self._filling, self._due = [], False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _launch(self) -> None:
        """Hand closed batches (and a due one) to free workers."""
        while len(self._running) < self.workers:
            if not self._full and self._filling and self._due:
                self._close_filling()
            if not self._full:
                return
            batch = self._full.popleft()
            task = self._dispatch([item for item, _ in batch])
            self._running[task] = len(batch)
            self.batches += 1
            self.items += len(batch)
            task.add_done_callback(lambda done, batch=batch: self._finish(batch, done))

    def _dispatch(self, items: list[T]) -> asyncio.Future:
        """Start running ``handler(items)`` in a worker; its future."""
        return asyncio.get_running_loop().run_in_executor(self._workers(), self.handler, items)

    def _workers(self) -> Executor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix=self.name)
        return self._executor

    def _finish(self, batch: list[tuple[T, asyncio.Future]], done: asyncio.Future) -> None:
        self._running.pop(done, None)
        if done.cancelled():
            outcomes: list = [asyncio.CancelledError()] * len(batch)
        else:
            error = done.exception()
            if error is None:
                outcomes = list(done.result())
                if len(outcomes) != len(batch):
                    error = RuntimeError(f"{len(outcomes)} results for {len(batch)} items")
            if isinstance(error, Exception) and len(batch) > 1:
                log.warning(
                    "%s: a batch of %d failed (%r); running it item by item",
                    self.name,
                    len(batch),
                    error,
                )
                self._full.extendleft([pair] for pair in reversed(batch))  # next, in order
                self._launch()
                return
            if error is not None:
                outcomes = [error] * len(batch)
        for (_, future), outcome in zip(batch, outcomes, strict=True):
            if future.done():  # its awaiter was cancelled
                continue
            if isinstance(outcome, BaseException):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)
        self._launch()
