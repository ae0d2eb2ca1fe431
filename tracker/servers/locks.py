"""Redis locks that expire unless renewed: the scheduler lock, the per-job locks and the
library write lock.

A holder that crashes must not block the others for ever, so every lock expires after ``ttl``
seconds; a live holder keeps it with a background thread that renews it every ``ttl / 3``. The
lock itself is redis-py's :class:`redis.lock.Lock` (``SET NX PX`` with a random token, renewed
and released by Lua scripts that check the token), so only the holder can renew or release it.

A holder that cannot renew for a whole ``ttl`` (Redis away) or finds its token replaced has
*lost* the lock: :attr:`HeldLock.lost` is set and ``on_lost`` is called, and the holder must
stop acting, since another process may hold the lock by now.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from types import TracebackType

import redis
from redis.exceptions import LockError, RedisError
from redis.lock import Lock

from tracker.servers.redis_cluster import on_state_slot

log = logging.getLogger(__name__)


def owner_token() -> str:
    """``host:pid:random``: unique per holder, and tells people who holds a lock."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class HeldLock:
    """An expiring Redis lock, renewed in the background while held."""

    def __init__(
        self,
        client: redis.Redis,
        name: str,
        ttl: float,
        *,
        on_lost: Callable[[], None] | None = None,
    ) -> None:
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        self.client = client
        self.name = on_state_slot(client, name)
        self.ttl = float(ttl)
        self.on_lost = on_lost
        self.token = owner_token()
        self.lost = threading.Event()
        self._lock = Lock(client, self.name, timeout=self.ttl, thread_local=False)
        self._stop_renewing = threading.Event()
        self._renewer: threading.Thread | None = None

    @staticmethod
    def holder(client: redis.Redis, name: str) -> str | None:
        """The token of whoever holds the lock ``name`` now, or None."""
        value = client.get(on_state_slot(client, name))
        return value.decode("utf-8", "replace") if value is not None else None

    def acquire(self, wait: threading.Event | None = None, poll: float | None = None) -> bool:
        """Take the lock. With ``wait``, keep trying every ``poll`` seconds until the lock is
        taken (True) or ``wait`` is set (False); without it, try once."""
        poll = poll if poll is not None else max(self.ttl / 3, 0.05)
        announced = False
        while True:
            if self._lock.acquire(blocking=False, token=self.token):
                self.lost.clear()
                self._start_renewing()
                return True
            if wait is None:
                return False
            if not announced:
                log.info("lock %s is held by %s; waiting", self.name, self.holder_now())
                announced = True
            if wait.wait(poll):
                return False

    def holder_now(self) -> str | None:
        return self.holder(self.client, self.name)

    def owned(self) -> bool:
        """True while this holder has the lock (checked in Redis, not just remembered)."""
        if self.lost.is_set():
            return False
        try:
            return self._lock.owned()
        except RedisError:
            return False

    def release(self) -> None:
        self._stop_renewing.set()
        if self._renewer is not None and self._renewer is not threading.current_thread():
            self._renewer.join()
        self._renewer = None
        try:
            self._lock.release()
        except LockError:
            pass  # expired or taken over: nothing of ours to release
        except RedisError as exc:
            log.warning("could not release lock %s (it expires by itself): %s", self.name, exc)

    def _start_renewing(self) -> None:
        self._stop_renewing.clear()
        self._renewer = threading.Thread(
            target=self._renew_until_released, name=f"renew {self.name}", daemon=True
        )
        self._renewer.start()

    def _renew_until_released(self) -> None:
        last_renewed = time.monotonic()
        while not self._stop_renewing.wait(self.ttl / 3):
            try:
                self._lock.reacquire()
                last_renewed = time.monotonic()
                continue
            except LockError:
                log.error("lock %s expired and was taken over", self.name)
            except RedisError as exc:
                if time.monotonic() - last_renewed < self.ttl:
                    log.warning("could not renew lock %s, retrying: %s", self.name, exc)
                    continue
                log.error("could not renew lock %s for %.0fs: %s", self.name, self.ttl, exc)
            self.lost.set()
            if self.on_lost is not None:
                self.on_lost()
            return

    def __enter__(self) -> HeldLock:
        if not self.acquire():
            raise LockBusy(self.name, self.holder_now())
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()


class LockBusy(RuntimeError):
    """The lock is held by someone else."""

    def __init__(self, name: str, holder: str | None) -> None:
        super().__init__(f"{name} is held by {holder or 'another process'}")
        self.holder = holder
