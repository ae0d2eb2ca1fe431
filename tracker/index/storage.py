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

import random
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import redis
from redis.crc import key_slot

from tracker.config import check_prefix
from tracker.servers.redis_cluster import (
    GROUPS,
    STATE_TAG,
    group_tags,
    is_cluster,
    per_slot,
)


@dataclass(frozen=True)
class StorageMemory:
    """What a storage takes: its keys, the bytes the server holds for them (``MEMORY USAGE``:
    value, key and per-key bookkeeping) and the bytes of their values alone (the records). Of
    every key, or estimated from ``sampled`` keys chosen at random and scaled up."""

    keys: int
    bytes: int
    payload: int
    sampled: int

    @property
    def exact(self) -> bool:
        return self.sampled >= self.keys

    @property
    def overhead(self) -> float:
        """The share of the bytes that is not records: Redis's ~40-70 bytes a key, and
        allocation slack."""
        return 1.0 - self.payload / self.bytes if self.bytes else 0.0


class Storage(ABC):
    @abstractmethod
    def key(self, name: str) -> bytes:
        """The key of the bucket ``name`` in this storage, as the other methods take it."""

    def bucket_key(self, table: str, bucket: int) -> bytes:
        """The key of bucket number ``bucket`` of the table ``table`` (a storage may lay a
        table's buckets out over several servers, see :class:`RedisStorage`)."""
        return self.key(f"{table}:{bucket:x}")

    def bucket_keys(self, table: str, buckets: Sequence[int]) -> list[bytes]:
        """:meth:`bucket_key` of each of ``buckets``."""
        return [self.bucket_key(table, bucket) for bucket in buckets]

    @abstractmethod
    def append(self, chunks: Mapping[bytes, bytes], expire_at: int | None = None) -> None:
        """Append each chunk of records to the bucket at its key; with ``expire_at`` (Unix
        seconds), the buckets expire then (Redis removes them itself)."""

    @abstractmethod
    def get(self, keys: Sequence[bytes]) -> list[bytes]:
        """The buckets at ``keys``, in order (``b""`` for missing keys)."""

    @abstractmethod
    def remove_doc(self, keys: Iterable[bytes], doc: int, record: np.dtype) -> None:
        """Drop every record whose ``doc`` field equals ``doc`` from the buckets at ``keys``."""

    @abstractmethod
    def put(self, blobs: Mapping[bytes, bytes]) -> None:
        """Set each key to its value, exactly (a key whose value is ``b""`` is removed)."""

    @abstractmethod
    def delete(self, keys: Sequence[bytes]) -> None:
        """Remove these keys."""

    @abstractmethod
    def add_counts(self, key: bytes, deltas: Mapping[str, int]) -> None:
        """Add to the named counts of the hash at ``key``."""

    @abstractmethod
    def read_counts(self, key: bytes) -> dict[str, int]:
        """The named counts of the hash at ``key``."""

    def read_counts_many(self, keys: Sequence[bytes]) -> list[dict[str, int]]:
        """:meth:`read_counts` of several hashes (one round trip on a server)."""
        return [self.read_counts(key) for key in keys]

    @abstractmethod
    def set_default(self, key: bytes, name: str, value: int) -> None:
        """Set the named count of the hash at ``key`` unless it is set already."""

    @abstractmethod
    def forget(self, key: bytes, names: Sequence[str]) -> None:
        """Remove named counts from the hash at ``key``."""

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

    def add_counts_and_maximize(
        self, key: bytes, deltas: Mapping[str, int], counter: bytes, value: int
    ) -> None:
        """:meth:`add_counts` then :meth:`maximize` (one round trip on a server)."""
        self.add_counts(key, deltas)
        self.maximize(counter, value)

    def compact(self) -> None:  # noqa: B027 - most storages have nothing to release
        """Release the spare room appends left in buckets (call after a bulk load)."""

    def compact_keys(self, keys: Sequence[bytes]) -> None:  # noqa: B027 - as compact
        """Release the spare room appends left in the buckets at ``keys``."""

    #: True where the buckets live on several servers, each of which may lose its last writes
    #: alone (a Redis Cluster node restarted, or replaced by a replica that lagged): the
    #: storage then keeps a *mark* beside each server's share of the buckets.
    marked = False

    def advance_marks(self, value: int, since: int | None) -> None:  # noqa: B027
        """Raise to ``value`` every mark at ``since`` or above (a missing mark counts as 0;
        every mark when ``since`` is None), once the buckets hold everything up to ``value``; a
        mark below ``since`` stays where it is, telling that its server lost writes."""

    def marks(self) -> list[int | None] | None:
        """The marks (None where missing: a server that lost everything), or None for a
        storage without marks."""
        return None

    def memory(self, sample: int = 2000) -> StorageMemory | None:
        """The server memory this storage takes (None where there is no server to ask)."""
        return None


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
        self._counts: dict[bytes, dict[str, int]] = {}
        self._expiry: dict[bytes, int] = {}

    def key(self, name: str) -> bytes:
        return name.encode()

    def append(self, chunks: Mapping[bytes, bytes], expire_at: int | None = None) -> None:
        for key, chunk in chunks.items():
            self._buckets[key] += chunk
        if expire_at is not None:
            self._expiry.update(dict.fromkeys(chunks, expire_at))

    def expire(self, now: float) -> None:
        """Remove the buckets whose time has come (Redis does it by itself)."""
        for key, at in list(self._expiry.items()):
            if at <= now:
                self._buckets.pop(key, None)
                del self._expiry[key]

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

    def put(self, blobs: Mapping[bytes, bytes]) -> None:
        for key, blob in blobs.items():
            if blob:
                self._buckets[key] = bytearray(blob)
            else:
                self._buckets.pop(key, None)

    def delete(self, keys: Sequence[bytes]) -> None:
        for key in keys:
            self._buckets.pop(key, None)
            self._counts.pop(key, None)

    def add_counts(self, key: bytes, deltas: Mapping[str, int]) -> None:
        counts = self._counts.setdefault(key, {})
        for name, delta in deltas.items():
            counts[name] = counts.get(name, 0) + delta

    def read_counts(self, key: bytes) -> dict[str, int]:
        return dict(self._counts.get(key, {}))

    def set_default(self, key: bytes, name: str, value: int) -> None:
        self._counts.setdefault(key, {}).setdefault(name, value)

    def forget(self, key: bytes, names: Sequence[str]) -> None:
        for name in names:
            self._counts.get(key, {}).pop(name, None)

    def maximize(self, key: bytes, value: int) -> None:
        if int(self._buckets.get(key) or 0) < value:
            self._buckets[key] = bytearray(b"%d" % value)

    def clear(self) -> None:
        self._buckets.clear()
        self._counts.clear()


_APPEND = """
for i, key in ipairs(KEYS) do redis.call('APPEND', key, ARGV[i]) end
return #KEYS
"""

# ARGV: the expiry time (Unix seconds), then each key's chunk.
_APPEND_EXPIRING = """
local at = ARGV[1]
for i, key in ipairs(KEYS) do
  redis.call('APPEND', key, ARGV[i + 1])
  redis.call('EXPIREAT', key, at)
end
return #KEYS
"""

# APPEND over-allocates (a string grows by doubling): once a bulk load is done, the buckets it
# touched are copied into exact-size allocations.
_COMPACT = """
for _, key in ipairs(KEYS) do
  local blob = redis.call('GET', key)
  if blob then redis.call('SET', key, blob, 'KEEPTTL') end
end
return #KEYS
"""

# ARGV: since ("" = any), value. A mark below ``since`` is left behind (a missing one is 0).
_ADVANCE = """
local found = redis.call('GET', KEYS[1])
local current = tonumber(found or '0')
if ARGV[1] == '' or current >= tonumber(ARGV[1]) then
  if not found or current < tonumber(ARGV[2]) then redis.call('SET', KEYS[1], ARGV[2]) end
end
return 1
"""

# Per key: the bytes MEMORY USAGE counts (SAMPLES 0: all of a collection) and, for a string,
# its length (the packed records; other types count as no records).
_MEMORY = """
local out = {}
for _, key in ipairs(KEYS) do
  local used = redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0') or 0
  local size = 0
  if redis.call('TYPE', key)['ok'] == 'string' then size = redis.call('STRLEN', key) end
  out[#out + 1] = used
  out[#out + 1] = size
end
return out
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
    """Buckets in Redis, or on a Redis Cluster when ``client`` is a cluster client.

    On a cluster, buckets carry hash tags spreading every table over the slots of
    :func:`tracker.servers.redis_cluster.group_tags`, singletons the tag ``{state}``, and each batch
    runs one command per slot (an ``MGET``, or a Lua script over that slot's keys), each
    node's commands pipelined; on one server, keys are as they always were and a batch is one
    command (a script carries :attr:`BATCH` keys at most)."""

    BATCH = 2000
    MAX_SLOTS_KNOWN = 1 << 20

    def __init__(self, client: redis.Redis, prefix: str = "tracker:ix:") -> None:
        self.client = client
        self.prefix = prefix
        self.cluster = is_cluster(client)
        if self.cluster:
            check_prefix(prefix)
        self._appended: set[bytes] = set()
        self._slots: dict[bytes, int] = {}
        self._packed: dict[bytes, bytes] = {}  # a bucket's key as an MGET argument (see _mget)

    def key(self, name: str) -> bytes:
        return (self.prefix + name + (STATE_TAG if self.cluster else "")).encode()

    def bucket_key(self, table: str, bucket: int) -> bytes:
        if not self.cluster:
            return f"{self.prefix}{table}:{bucket:x}".encode()
        tag = group_tags()[bucket % GROUPS]
        return f"{self.prefix}{table}:{{{tag}}}{bucket:x}".encode()

    def bucket_keys(self, table: str, buckets: Sequence[int]) -> list[bytes]:
        if self.cluster:
            return super().bucket_keys(table, buckets)
        head = f"{self.prefix}{table}:"  # a check makes ~100,000 of them a process
        return [f"{head}{bucket:x}".encode() for bucket in buckets]

    def _batches(self, keys: Sequence[bytes], size: int) -> list[tuple[int, list[int]]]:
        """Positions of ``keys`` in batches of at most ``size``, each within one slot on a
        cluster (slot 0 on one server)."""
        if not self.cluster:
            groups = {0: list(range(len(keys)))}
        else:
            # A key's slot is remembered: a lookup groups hundreds of keys, and hashing each
            # again cost ~0.3 ms a page. The keys are buckets, a bounded set.
            slots, groups = self._slots, {}
            if len(slots) > self.MAX_SLOTS_KNOWN:
                slots.clear()
            for at, key in enumerate(keys):
                slot = slots.get(key)
                if slot is None:
                    slot = slots[key] = key_slot(key)
                groups.setdefault(slot, []).append(at)
        return [
            (slot, at[start : start + size])
            for slot, at in groups.items()
            for start in range(0, len(at), size)
        ]

    def _run(self, commands: list[tuple[int, Sequence]], idempotent: bool = True) -> list:
        """Run ``(slot, command)`` pairs in one round trip (one per node on a cluster; see
        :func:`tracker.servers.redis_cluster.per_slot` for ``idempotent``)."""
        if self.cluster:
            return per_slot(self.client, commands, idempotent)
        if len(commands) == 1:
            return [self.client.execute_command(*commands[0][1])]
        pipe = self.client.pipeline(transaction=False)
        for _, args in commands:
            pipe.execute_command(*args)
        return pipe.execute()

    def _script(
        self,
        script: str,
        keys: Sequence[bytes],
        args: Sequence | None = None,
        extra: Sequence = (),
        idempotent: bool = True,
    ) -> None:
        """Run ``script`` over ``keys`` in batches of :attr:`BATCH` (per slot on a cluster),
        with ``args[i]`` for ``keys[i]`` (if given) after the shared ``extra`` arguments."""
        commands = []
        for slot, at in self._batches(keys, self.BATCH):
            chosen = [keys[i] for i in at]
            values = [args[i] for i in at] if args is not None else []
            commands.append((slot, ("EVAL", script, len(chosen), *chosen, *extra, *values)))
        self._run(commands, idempotent)

    def append(self, chunks: Mapping[bytes, bytes], expire_at: int | None = None) -> None:
        keys = list(chunks)
        if expire_at is None:
            self._script(_APPEND, keys, list(chunks.values()), idempotent=False)
        else:
            self._script(
                _APPEND_EXPIRING, keys, list(chunks.values()), [expire_at], idempotent=False
            )
        self._appended.update(keys)

    def set_values(self, values: Mapping[bytes, int]) -> None:
        # MULTI/EXEC: both or neither (on a cluster, the keys share the {state} slot).
        pipe = self.client.pipeline(transaction=True)
        for key, value in values.items():
            pipe.set(key, value)
        pipe.execute()

    def maximize(self, key: bytes, value: int) -> None:
        self.client.eval(_MAXIMIZE, 1, key, value)

    @property
    def marked(self) -> bool:  # type: ignore[override]
        return self.cluster

    def _mark_keys(self) -> list[bytes]:
        """One mark per group of buckets, in the group's slot: written on the same node, after
        the buckets, a mark that survived means the buckets written before it did."""
        return [f"{self.prefix}mark:{{{tag}}}".encode() for tag in group_tags()]

    def advance_marks(self, value: int, since: int | None) -> None:
        if self.cluster:
            floor = "" if since is None else since
            self._run(
                [(key_slot(k), ("EVAL", _ADVANCE, 1, k, floor, value)) for k in self._mark_keys()]
            )

    def marks(self) -> list[int | None] | None:
        if not self.cluster:
            return None
        return [int(found) if found else None for found in self.get(self._mark_keys())]

    def compact(self) -> None:
        keys, self._appended = sorted(self._appended), set()
        self._script(_COMPACT, keys)

    def compact_keys(self, keys: Sequence[bytes]) -> None:
        self._script(_COMPACT, list(keys))

    def put(self, blobs: Mapping[bytes, bytes]) -> None:
        keys = list(blobs)
        commands = []
        for slot, at in self._batches(keys, self.BATCH):
            full = [x for i in at for x in (keys[i], blobs[keys[i]]) if blobs[keys[i]]]
            empty = [keys[i] for i in at if not blobs[keys[i]]]
            if full:
                commands.append((slot, ("MSET", *full)))
            if empty:
                commands.append((slot, ("UNLINK", *empty)))
        if commands:
            self._run(commands)
        self._appended.difference_update(keys)

    def delete(self, keys: Sequence[bytes]) -> None:
        self._unlink(list(keys))

    def add_counts(self, key: bytes, deltas: Mapping[str, int]) -> None:
        pipe = self.client.pipeline(transaction=False)
        for name, delta in deltas.items():
            pipe.hincrby(key, name, delta)
        pipe.execute()

    def read_counts(self, key: bytes) -> dict[str, int]:
        return self.read_counts_many([key])[0]

    def read_counts_many(self, keys: Sequence[bytes]) -> list[dict[str, int]]:
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            pipe.hgetall(key)
        return [{k.decode(): int(v) for k, v in found.items()} for found in pipe.execute()]

    def add_counts_and_maximize(
        self, key: bytes, deltas: Mapping[str, int], counter: bytes, value: int
    ) -> None:
        if self.cluster:  # a cluster's pipelines take no scripts
            super().add_counts_and_maximize(key, deltas, counter, value)
            return
        pipe = self.client.pipeline(transaction=False)
        for name, delta in deltas.items():
            pipe.hincrby(key, name, delta)
        pipe.eval(_MAXIMIZE, 1, counter, value)
        pipe.execute()

    def set_default(self, key: bytes, name: str, value: int) -> None:
        self.client.hsetnx(key, name, value)

    def forget(self, key: bytes, names: Sequence[str]) -> None:
        if names:
            self.client.hdel(key, *names)

    def get(self, keys: Sequence[bytes]) -> list[bytes]:
        if not keys:
            return []
        batches = self._batches(keys, 10 * self.BATCH)
        replies = None if self.cluster else self._mget(keys, batches)
        if replies is None:
            replies = self._run([(slot, ("MGET", *(keys[i] for i in at))) for slot, at in batches])
        if len(replies) == 1:  # one server: the keys in order
            return [blob or b"" for blob in replies[0]]
        blobs: list[bytes] = [b""] * len(keys)
        for (_, at), found in zip(batches, replies, strict=True):
            for i, blob in zip(at, found, strict=True):
                if blob:
                    blobs[i] = blob
        return blobs

    def _mget(self, keys: Sequence[bytes], batches: list[tuple[int, list[int]]]) -> list | None:
        """The ``MGET`` of each batch on one server, sent as one write of protocol bytes made
        from each key's cached argument (``$<length>\\r\\n<key>\\r\\n``): a check reads ~380
        buckets a page, and redis-py's packing of every argument (a type check, then hiredis)
        cost ~1.2 µs a key, more than the server's own work. None when the connection failed
        (the caller then runs the command the ordinary way, with the client's retries)."""
        packed = self._packed
        if len(packed) > self.MAX_SLOTS_KNOWN:
            packed.clear()
        commands = []
        for _, at in batches:
            chosen = keys if len(at) == len(keys) else [keys[i] for i in at]
            try:
                args = b"".join(map(packed.__getitem__, chosen))
            except KeyError:
                for key in chosen:
                    if key not in packed:
                        packed[key] = b"$%d\r\n%s\r\n" % (len(key), key)
                args = b"".join(map(packed.__getitem__, chosen))
            commands.append(b"*%d\r\n$4\r\nMGET\r\n%s" % (len(chosen) + 1, args))
        pool = self.client.connection_pool
        connection = pool.get_connection()
        try:
            connection.send_packed_command([b"".join(commands)])
            return [connection.read_response() for _ in commands]
        except (redis.ConnectionError, redis.TimeoutError):
            connection.disconnect()
            return None
        except BaseException:
            connection.disconnect()  # a reply may be left unread on it
            raise
        finally:
            pool.release(connection)

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
        self._script(_REMOVE, unique, extra=[record.itemsize, offset, target])

    def memory(self, sample: int = 2000) -> StorageMemory:
        """The keys under the prefix (a SCAN of every primary of a cluster), and their bytes
        by ``MEMORY USAGE``: of each key when there are at most ``sample``, else of ``sample``
        keys drawn uniformly (a reservoir over the scan) and scaled up to all of them. A
        SCAN walks the whole keyspace: about a second per million keys."""
        chosen: list[bytes] = []
        keys = 0
        draw = random.Random(0)  # the same estimate for the same index
        for key in self.client.scan_iter(match=self.prefix + "*", count=5000):
            keys += 1
            if len(chosen) < sample:
                chosen.append(key)
            else:
                at = draw.randrange(keys)
                if at < sample:
                    chosen[at] = key
        used = payload = 0
        commands = [
            (slot, ("EVAL", _MEMORY, len(at), *(chosen[i] for i in at)))
            for slot, at in self._batches(chosen, self.BATCH)
        ]
        for reply in self._run(commands) if commands else []:
            used += sum(int(value) for value in reply[0::2])
            payload += sum(int(value) for value in reply[1::2])
        scale = keys / len(chosen) if chosen else 0.0
        return StorageMemory(keys, round(used * scale), round(payload * scale), len(chosen))

    def clear(self) -> None:
        """Unlink every key under the prefix, scanning every primary of a cluster (a node
        that does not answer raises: a clear must not leave part of the index behind)."""
        batch: list[bytes] = []
        for key in self.client.scan_iter(match=self.prefix + "*", count=5000):
            batch.append(key)
            if len(batch) >= 10 * self.BATCH:
                self._unlink(batch)
                batch = []
        self._unlink(batch)

    def _unlink(self, keys: list[bytes]) -> None:
        batches = self._batches(keys, self.BATCH)
        if batches:
            self._run([(slot, ("UNLINK", *(keys[i] for i in at))) for slot, at in batches])
