"""The batching helper the pipelines share (:class:`tracker.batching.Batcher`) and the worker
processes of extraction (:class:`tracker.crawling.process_pool.ProcessPool`): no servers needed."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest

from tracker.batching import Batcher, batches
from tracker.crawling.process_pool import PIPE_BYTES, PoolBatcher, ProcessPool


def test_batches_of_a_stream():
    assert list(batches(range(7), 3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(batches([], 3)) == []


def run(coroutine):
    return asyncio.run(coroutine)


def submit_together(handler, items, **options) -> list:
    """Each item's result (or exception) when all are submitted at once."""

    async def main():
        batcher = Batcher(handler, **options)
        results = await asyncio.gather(*(batcher.submit(x) for x in items), return_exceptions=True)
        await batcher.close()
        return results

    return run(main())


def test_items_arriving_together_share_batches_of_at_most_size():
    seen: list[list[int]] = []

    def handler(items: list[int]) -> list[int]:
        seen.append(list(items))
        return [x * 10 for x in items]

    results = submit_together(handler, range(10), size=4, delay=0.05)
    assert results == [x * 10 for x in range(10)]
    assert seen == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]  # in order, one after the other


def test_a_busy_worker_lets_the_next_batch_grow_and_the_loop_runs_meanwhile():
    """Group commit: while a batch runs (in another thread), the items arriving form the next
    batch, whatever the delay; the event loop is never blocked by the handler."""
    sizes, threads = [], set()

    def handler(items: list[int]) -> list[int]:
        sizes.append(len(items))
        threads.add(threading.get_ident())
        time.sleep(0.2)
        return items

    async def main():
        batcher = Batcher(handler, size=16, delay=0.001)
        first = asyncio.ensure_future(batcher.submit(0))
        await asyncio.sleep(0.02)  # the first batch (one item) is running
        ticks = 0
        rest = [asyncio.ensure_future(batcher.submit(x)) for x in range(1, 8)]
        while not first.done():
            await asyncio.sleep(0.01)
            ticks += 1
        await asyncio.gather(*rest)
        await batcher.close()
        return ticks, batcher.batches, batcher.items

    ticks, batches_run, items = run(main())
    assert sizes == [1, 7] and (batches_run, items) == (2, 8)
    assert threading.get_ident() not in threads
    assert ticks >= 5  # the loop kept turning while the handler slept


def test_each_item_gets_its_own_error():
    def handler(items: list[str]) -> list[object]:
        return [ValueError(f"bad {x}") if x.startswith("bad") else x.upper() for x in items]

    a, bad, b = submit_together(handler, ["a", "bad1", "b"], size=8, delay=0.01)
    assert (a, b) == ("A", "B")
    assert isinstance(bad, ValueError) and str(bad) == "bad bad1"


def test_a_batch_that_raises_is_run_again_item_by_item():
    calls: list[list[str]] = []

    def handler(items: list[str]) -> list[str]:
        calls.append(list(items))
        if "poison" in items:
            raise RuntimeError("cannot encode poison")
        return [x + "!" for x in items]

    a, poison, b = submit_together(handler, ["a", "poison", "b"], size=8, delay=0.01)
    assert (a, b) == ("a!", "b!")
    assert isinstance(poison, RuntimeError)
    assert calls == [["a", "poison", "b"], ["a"], ["poison"], ["b"]]


def test_close_runs_what_is_pending_at_once():
    def handler(items: list[int]) -> list[int]:
        return items

    async def main():
        batcher = Batcher(handler, size=100, delay=60.0)  # would wait a minute for more
        pending = [asyncio.ensure_future(batcher.submit(x)) for x in range(3)]
        await asyncio.sleep(0)
        started = time.monotonic()
        await batcher.close()
        return await asyncio.gather(*pending), time.monotonic() - started

    results, waited = run(main())
    assert results == [0, 1, 2] and waited < 30


def test_wrong_sizes_are_refused():
    with pytest.raises(ValueError):
        Batcher(lambda items: items, size=0)


def _dies(code: int) -> int:
    os._exit(code)


def _slow_divmod(a: int, b: int) -> tuple[int, int]:
    time.sleep(0.05)
    return divmod(a, b)


def test_a_dead_worker_process_fails_its_call_only():
    async def main():
        pool = ProcessPool(1)
        try:
            assert await pool.run(divmod, 7, 2) == (3, 1)
            # A call that kills its worker (and the one it is tried again in), among others
            # queued with it: they are tried again in a fresh worker and succeed.
            calls = [pool.run(_slow_divmod, n, 2) for n in range(3)]
            results = await asyncio.gather(pool.run(_dies, 3), *calls, return_exceptions=True)
            assert isinstance(results[0], BrokenProcessPool)
            assert results[1:] == [divmod(n, 2) for n in range(3)]
            with pytest.raises(ZeroDivisionError):
                await pool.run(divmod, 1, 0)
        finally:
            pool.close()

    run(main())
    assert run(ProcessPool(0).run(divmod, 5, 5)) == (1, 0)  # no workers: in this process


def test_a_warm_up_runs_in_the_worker_before_the_first_batch_and_may_fail():
    log: list[tuple[str, str]] = []

    def handler(items):
        log.append(("batch", threading.current_thread().name))
        return items

    def warm_up():
        time.sleep(0.05)  # the first batch, submitted meanwhile, waits for it
        log.append(("warm", threading.current_thread().name))

    def broken():
        raise ConnectionError("server away")

    async def main(warm):
        batcher = Batcher(handler, delay=0)
        batcher.prepare(warm)
        result = await batcher.submit(1)
        await batcher.close()
        return result

    assert run(main(warm_up)) == 1
    assert [what for what, _ in log] == ["warm", "batch"]
    assert log[0][1] == log[1][1] and log[0][1].startswith("batcher")  # the stage's worker
    log.clear()
    assert run(main(broken)) == 1  # logged; the batches go on
    assert [what for what, _ in log] == ["batch"]


_warmed = False


def _warm_worker() -> None:
    global _warmed
    _warmed = True


def _was_warmed() -> bool:
    return _warmed


def _warm_up_fails() -> None:
    raise RuntimeError("no dictionary")


def test_worker_processes_warm_up_when_they_start():
    async def main(warm_up):
        pool = ProcessPool(1, warm_up=warm_up)
        pool.start()  # in the background: returns before the worker is up
        try:
            return await pool.run(_was_warmed)
        finally:
            pool.close()

    assert run(main(_warm_worker)) is True
    assert run(main(_warm_up_fails)) is False  # a failed warm-up leaves a working worker
    assert _was_warmed() is False  # not in this process


def _parent_pid() -> int:
    return os.getppid()


def test_a_crawl_starts_its_workers_forkserver_early_only_when_it_will_have_workers(
    monkeypatch,
):
    from scrapy.settings import Settings as ScrapySettings

    from tracker.crawling import process_pool, workers

    started: list[list[str]] = []
    monkeypatch.setattr(process_pool, "start_forkserver", started.append)
    extract = {workers.EXTRACT_PIPELINE: 100}
    for processes, pipelines, matching in ((1, extract, True), (2, extract, False)):
        settings = ScrapySettings(
            {
                "TRACKER_EXTRACT_PROCESSES": processes,
                "ITEM_PIPELINES": pipelines,
                "TRACKER_MATCH_IN_WORKERS": matching,
            }
        )
        workers.start_early(settings)
        assert started.pop() == workers.preload(settings)
    assert workers.preload(ScrapySettings({"TRACKER_MATCH_IN_WORKERS": False})) == list(
        workers.EXTRACTION
    )
    for processes, pipelines in ((0, extract), (1, {}), (1, {workers.EXTRACT_PIPELINE: None})):
        workers.start_early(
            ScrapySettings({"TRACKER_EXTRACT_PROCESSES": processes, "ITEM_PIPELINES": pipelines})
        )
    assert started == []  # no workers in those crawls: nothing started


def test_a_pool_forks_its_workers_from_the_forkserver_started_early():
    from multiprocessing import forkserver

    from tracker.crawling.process_pool import start_forkserver

    start_forkserver([])
    server = forkserver._forkserver._forkserver_pid
    assert server is not None

    async def main():
        pool = ProcessPool(1)
        try:
            return await pool.run(_parent_pid)
        finally:
            pool.close()

    assert run(main()) == server  # the worker is the early server's child
    start_forkserver([])  # already running: the same server
    assert forkserver._forkserver._forkserver_pid == server


def _square_in_worker(items: list[int]) -> list[object]:
    """(worker pid, batch size, x²) of each item; 13 kills the worker, a negative item fails."""
    if 13 in items:
        os._exit(3)
    return [
        ValueError(f"negative {x}") if x < 0 else (os.getpid(), len(items), x * x) for x in items
    ]


def test_a_pool_batcher_sends_batches_to_the_worker_and_a_killer_fails_alone():
    async def main(items):
        pool = ProcessPool(1)
        batcher = PoolBatcher(pool, _square_in_worker, size=4, delay=0.01)
        try:
            return await asyncio.gather(
                *(batcher.submit(x) for x in items), return_exceptions=True
            ), (batcher.batches, batcher.items)
        finally:
            await batcher.close()
            pool.close()

    results, (batches_run, items_run) = run(main(range(10)))
    assert [square for _, _, square in results] == [x * x for x in range(10)]
    assert {pid for pid, _, _ in results} - {os.getpid()} == {pid for pid, _, _ in results}
    assert [size for _, size, _ in results] == [4] * 8 + [2] * 2  # 3 calls for 10 items
    assert (batches_run, items_run) == (3, 10)

    results, _ = run(main([1, -2, 13, 4]))  # one batch: 13 kills its worker, -2 fails
    assert isinstance(results[1], ValueError) and str(results[1]) == "negative -2"
    assert isinstance(results[2], BrokenProcessPool)
    assert [results[0][2], results[3][2]] == [1, 16]
    assert results[0][1] == results[3][1] == 1  # run again item by item, in fresh workers


def test_a_pool_batcher_without_processes_runs_its_batches_in_a_thread():
    def handler(items):
        return [(threading.get_ident(), x) for x in items]

    async def main():
        batcher = PoolBatcher(ProcessPool(0), handler, size=8, delay=0.01)
        results = await asyncio.gather(*(batcher.submit(x) for x in range(3)))
        await batcher.close()
        return results

    results = run(main())
    assert [x for _, x in results] == [0, 1, 2]
    assert {thread for thread, _ in results} != {threading.get_ident()}


@pytest.mark.skipif(not hasattr(__import__("fcntl"), "F_GETPIPE_SZ"), reason="Linux pipes only")
def test_the_worker_pipes_hold_a_whole_extracted_page():
    import fcntl

    if int(Path("/proc/sys/fs/pipe-max-size").read_text()) < PIPE_BYTES:
        pytest.skip("this system caps pipes below PIPE_BYTES")
    pool = ProcessPool(1)
    try:
        executor = pool._pool()
        for queue in (executor._call_queue, executor._result_queue):
            assert fcntl.fcntl(queue._reader.fileno(), fcntl.F_GETPIPE_SZ) >= PIPE_BYTES
    finally:
        pool.close()
