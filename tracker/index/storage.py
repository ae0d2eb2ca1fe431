"""Storage for the indexes: a mapping from string keys to sets of integer members.

Like datasketch's storage layer, the indexes are written against this small interface and run
unchanged in memory (tests, one-off checks) or in Redis (shared by every process). All calls are
batched so the Redis backend makes one round trip per batch (pipelining).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Iterable, Sequence

import redis


class Storage(ABC):
    @abstractmethod
    def add(self, pairs: Iterable[tuple[str, int]]) -> None:
        """Add each member to the set at its key."""

    @abstractmethod
    def remove(self, pairs: Iterable[tuple[str, int]]) -> None:
        """Remove each member from the set at its key (absent members are ignored)."""

    @abstractmethod
    def get(self, keys: Sequence[str]) -> list[set[int]]:
        """The sets at ``keys``, in order (empty for missing keys)."""

    @abstractmethod
    def clear(self) -> None:
        """Remove every key of this storage."""

    def memory_bytes(self) -> int | None:
        return None


class MemoryStorage(Storage):
    def __init__(self) -> None:
        self._sets: dict[str, set[int]] = defaultdict(set)

    def add(self, pairs: Iterable[tuple[str, int]]) -> None:
        for key, member in pairs:
            self._sets[key].add(member)

    def remove(self, pairs: Iterable[tuple[str, int]]) -> None:
        for key, member in pairs:
            members = self._sets.get(key)
            if members is not None:
                members.discard(member)
                if not members:
                    del self._sets[key]

    def get(self, keys: Sequence[str]) -> list[set[int]]:
        return [set(self._sets.get(key, ())) for key in keys]

    def clear(self) -> None:
        self._sets.clear()


class RedisStorage(Storage):
    """Sets of integers in Redis (compact intset/listpack encodings), one key per index key."""

    BATCH = 5000

    def __init__(self, client: redis.Redis, prefix: str = "tracker:") -> None:
        self.client = client
        self.prefix = prefix

    def _write(self, command: str, pairs: Iterable[tuple[str, int]]) -> None:
        pipe = self.client.pipeline(transaction=False)
        pending = 0
        for key, member in pairs:
            getattr(pipe, command)(self.prefix + key, member)
            pending += 1
            if pending >= self.BATCH:
                pipe.execute()
                pending = 0
        if pending:
            pipe.execute()

    def add(self, pairs: Iterable[tuple[str, int]]) -> None:
        self._write("sadd", pairs)

    def remove(self, pairs: Iterable[tuple[str, int]]) -> None:
        self._write("srem", pairs)

    def get(self, keys: Sequence[str]) -> list[set[int]]:
        results: list[set[int]] = []
        for start in range(0, len(keys), self.BATCH):
            pipe = self.client.pipeline(transaction=False)
            for key in keys[start : start + self.BATCH]:
                pipe.smembers(self.prefix + key)
            results.extend({int(m) for m in members} for members in pipe.execute())
        return results

    def clear(self) -> None:
        batch = []
        for key in self.client.scan_iter(match=self.prefix + "*", count=5000):
            batch.append(key)
            if len(batch) >= self.BATCH:
                self.client.unlink(*batch)
                batch = []
        if batch:
            self.client.unlink(*batch)

    def memory_bytes(self) -> int | None:
        return int(self.client.info("memory")["used_memory"])
