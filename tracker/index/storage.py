"""Storage for the indexes: buckets of fixed-size binary records, in memory or in Redis.

Like datasketch's storage layer, the indexes are written against this small interface and run
unchanged in memory (tests, one-off checks) or in Redis (shared by every process). A bucket is
one byte string of packed records (see :mod:`tracker.index.postings`): Redis keeps it in a
single allocation, so an index entry costs its record size (5–12 bytes) instead of the ~60
bytes of a set member. Calls are batched: one round trip per batch.

Buckets are addressed by the backend's own key, ``storage.key(name)`` (bytes, the storage's
prefix included): an index makes the keys of its buckets once, and a lookup of hundreds of
buckets then costs no string work per bucket.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import redis


class Storage(ABC):
    @abstractmethod
    def key(self, name: str) -> bytes:
        """The key of the bucket ``name`` in this storage, as the other methods take it."""

    @abstractmethod
    def append(self, chunks: Mapping[bytes, bytes]) -> None:
        """Append each chunk of records to the bucket at its key."""

    @abstractmethod
    def get(self, keys: Sequence[bytes]) -> list[bytes]:
        """The buckets at ``keys``, in order (``b""`` for missing keys)."""

    @abstractmethod
    def remove_doc(self, keys: Iterable[bytes], doc: int, record: np.dtype) -> None:
        """Drop every record whose ``doc`` field equals ``doc`` from the buckets at ``keys``."""

    @abstractmethod
    def clear(self) -> None:
        """Remove every bucket of this storage."""

    @abstractmethod
    def set_values(self, values: Mapping[bytes, int]) -> None:
        """Set the counters at these keys together (all or none; read back by :meth:`get` as
        ASCII digits)."""

    @abstractmethod
    def maximize(self, key: bytes, value: int) -> None:
        """Raise the counter at ``key`` to ``value`` unless it is already at least that."""

    def compact(self) -> None:  # noqa: B027 - most storages have nothing to release
        """Release the spare room appends left in buckets (call after a bulk load)."""


def without_doc(blob: bytes, doc: int, record: np.dtype) -> bytes:
    records = np.frombuffer(blob, dtype=record)
    return records[doc_ids(records) != doc].tobytes()


def doc_ids(records: np.ndarray) -> np.ndarray:
    """The ``doc`` field of packed records (stored as 3 bytes in 5-byte records)."""
    if "doc" in records.dtype.names:
        return records["doc"].astype(np.int64)
    return records["doc_lo"].astype(np.int64) | (records["doc_hi"].astype(np.int64) << 16)


class MemoryStorage(Storage):
    def __init__(self) -> None:
        self._buckets: dict[bytes, bytearray] = defaultdict(bytearray)

    def key(self, name: str) -> bytes:
        return name.encode()

    def append(self, chunks: Mapping[bytes, bytes]) -> None:
        for key, chunk in chunks.items():
            self._buckets[key] += chunk

    def get(self, keys: Sequence[bytes]) -> list[bytes]:
        return [bytes(self._buckets.get(key, b"")) for key in keys]

    def remove_doc(self, keys: Iterable[bytes], doc: int, record: np.dtype) -> None:
        for key in set(keys):
            if key in self._buckets:
                kept = without_doc(bytes(self._buckets[key]), doc, record)
                if kept:
                    self._buckets[key] = bytearray(kept)
                else:
                    del self._buckets[key]

    def set_values(self, values: Mapping[bytes, int]) -> None:
        for key, value in values.items():
            self._buckets[key] = bytearray(b"%d" % value)

    def maximize(self, key: bytes, value: int) -> None:
        if int(self._buckets.get(key) or 0) < value:
            self._buckets[key] = bytearray(b"%d" % value)

    def clear(self) -> None:
        self._buckets.clear()


_APPEND = """
for i, key in ipairs(KEYS) do redis.call('APPEND', key, ARGV[i]) end
return #KEYS
"""

# APPEND over-allocates (a string grows by doubling): once a bulk load is done, the buckets it
# touched are copied into exact-size allocations.
_COMPACT = """
for _, key in ipairs(KEYS) do
  local blob = redis.call('GET', key)
  if blob then redis.call('SET', key, blob) end
end
return #KEYS
"""

_MAXIMIZE = """
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) end
return 1
"""

# ARGV: record size, byte offset of the doc field, the packed doc field to drop.
_REMOVE = """
local size, offset, target = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local width = #target
for _, key in ipairs(KEYS) do
  local blob = redis.call('GET', key)
  if blob then
    local kept = {}
    for p = 1, #blob, size do
      if string.sub(blob, p + offset, p + offset + width - 1) ~= target then
        kept[#kept + 1] = string.sub(blob, p, p + size - 1)
      end
    end
    if #kept == 0 then redis.call('DEL', key) else redis.call('SET', key, table.concat(kept)) end
  end
end
return #KEYS
"""


class RedisStorage(Storage):
    BATCH = 2000

    def __init__(self, client: redis.Redis, prefix: str = "tracker:ix:") -> None:
        self.client = client
        self.prefix = prefix
        self._append = client.register_script(_APPEND)
        self._compact = client.register_script(_COMPACT)
        self._remove = client.register_script(_REMOVE)
        self._maximize = client.register_script(_MAXIMIZE)
        self._appended: set[bytes] = set()

    def key(self, name: str) -> bytes:
        return (self.prefix + name).encode()

    def append(self, chunks: Mapping[bytes, bytes]) -> None:
        keys, values = list(chunks), list(chunks.values())
        pipe = self.client.pipeline(transaction=False)
        for start in range(0, len(keys), self.BATCH):
            end = start + self.BATCH
            self._append(keys=keys[start:end], args=values[start:end], client=pipe)
        pipe.execute()
        self._appended.update(keys)

    def set_values(self, values: Mapping[bytes, int]) -> None:
        pipe = self.client.pipeline(transaction=True)  # MULTI/EXEC: both or neither
        for key, value in values.items():
            pipe.set(key, value)
        pipe.execute()

    def maximize(self, key: bytes, value: int) -> None:
        self._maximize(keys=[key], args=[value])

    def compact(self) -> None:
        keys, self._appended = sorted(self._appended), set()
        for start in range(0, len(keys), self.BATCH):
            self._compact(keys=keys[start : start + self.BATCH])

    def get(self, keys: Sequence[bytes]) -> list[bytes]:
        blobs: list[bytes] = []
        for start in range(0, len(keys), 10 * self.BATCH):
            chunk = keys[start : start + 10 * self.BATCH]
            blobs.extend(b or b"" for b in self.client.execute_command("MGET", *chunk))
        return blobs

    def remove_doc(self, keys: Iterable[bytes], doc: int, record: np.dtype) -> None:
        unique = sorted(set(keys))
        if not unique:
            return
        sample = np.zeros(1, dtype=record)
        field = "doc" if "doc" in record.names else "doc_lo"
        offset = record.fields[field][1]
        if field == "doc":
            sample["doc"] = doc
            width = record.fields["doc"][0].itemsize
        else:
            sample["doc_lo"], sample["doc_hi"] = doc & 0xFFFF, doc >> 16
            width = 3
        target = sample.tobytes()[offset : offset + width]
        for start in range(0, len(unique), self.BATCH):
            self._remove(
                keys=unique[start : start + self.BATCH],
                args=[record.itemsize, offset, target],
            )

    def clear(self) -> None:
        batch = []
        for key in self.client.scan_iter(match=self.prefix + "*", count=5000):
            batch.append(key)
            if len(batch) >= self.BATCH:
                self.client.unlink(*batch)
                batch = []
        if batch:
            self.client.unlink(*batch)
