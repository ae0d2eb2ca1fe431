"""The index alone past the library's texts: salted copies of its postings (issue 29, item 5).

Ten million chapters of text do not fit this machine's disk beside the other work (46 GB as
.jsonl, 54 GB in SecantusDB), but their index does (~3.6 GB of Redis). This extends the Redis
index of a real library of ``stored`` masters to ``target`` by ``k`` salted copies of every
table: a postings record of bucket *b* is copied to bucket *b* XOR *s_k* (its check kept, so
the copy is a value distinct from every real one, and the copies have the real library's
distribution of document frequencies, stop markers included), under master number
*n* + *k*·``offset``; a SimHash record's fingerprint is XOR-ed with a 64-bit salt and filed
again. The tables are split to their final depth first, the copies written bucket by bucket
at their exact size (no ``APPEND`` slack), so Redis holds what a library of ``target``
chapters would. The copies' numbers name no master in MongoDB: a check that meets one
(a chance match, as it would meet a real master's at that size) finds no text and drops it,
as it drops a master deleted since it was indexed. The index's master count is left at the
real library's, so the commands that open it find it in agreement with MongoDB.
"""

from __future__ import annotations

import numpy as np

from tracker.index import growth
from tracker.index.master_index import MasterIndex
from tracker.index.postings import STOP, HashPostings, set_docs
from tracker.index.storage import RedisStorage, doc_ids


def snapshot(table: HashPostings) -> tuple[np.ndarray, np.ndarray]:
    """Every record of ``table``, sorted by bucket, and each bucket's first record (offsets of
    length 2^depth + 1)."""
    parts, counts = [], np.zeros(1 << table.depth, dtype=np.int64)
    for start in range(0, 1 << table.depth, growth.CHUNK):
        buckets = np.arange(start, min(start + growth.CHUNK, 1 << table.depth))
        blobs = table.storage.get(table.bucket_keys(buckets))
        counts[buckets] = [len(b) // table.record.itemsize for b in blobs]
        parts.append(np.frombuffer(b"".join(blobs), dtype=table.record))
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return np.concatenate(parts), offsets


def extend_postings(table: HashPostings, copies: int, offset: int, seed: int) -> int:
    """Write ``copies`` salted copies of every record of ``table`` beside it; returns the
    records it holds then."""
    records, offsets = snapshot(table)
    rng = np.random.default_rng(seed)
    salts = [0, *rng.integers(1, 1 << table.depth, copies).tolist()]
    total = 0
    for start in range(0, 1 << table.depth, growth.CHUNK):
        dest = np.arange(start, min(start + growth.CHUNK, 1 << table.depth), dtype=np.int64)
        pieces: list[np.ndarray] = []
        owners: list[np.ndarray] = []
        for k, salt in enumerate(salts):
            source = dest ^ salt
            first, last = offsets[source], offsets[source + 1]
            sizes = last - first
            picks = np.repeat(first - np.cumsum(sizes) + sizes, sizes) + np.arange(sizes.sum())
            rows = records[picks].copy()
            if k:
                docs = doc_ids(rows)
                set_docs(rows, np.where(docs == STOP, STOP, docs + k * offset))
            pieces.append(rows)
            owners.append(np.repeat(dest, sizes))
        rows, owner = np.concatenate(pieces), np.concatenate(owners)
        order = np.argsort(owner, kind="stable")
        rows, owner = rows[order], owner[order]
        bounds = np.searchsorted(owner, dest, side="left"), np.searchsorted(owner, dest, "right")
        blob, size = rows.tobytes(), table.record.itemsize
        table.storage.put(
            {
                key: blob[a * size : b * size]
                for key, a, b in zip(table.bucket_keys(dest), *bounds, strict=True)
            }
        )
        total += len(rows)
    return total


def extend_simhash(index: MasterIndex, copies: int, offset: int, seed: int) -> int:
    rng = np.random.default_rng(seed)
    salts = rng.integers(1, 2**63, copies, dtype=np.uint64)
    total = 0
    for table in index.simhash.tables:
        records, _ = snapshot(table)  # type: ignore[arg-type]
        for k, salt in enumerate(salts, start=1):
            rows = records.copy()
            rows["fingerprint"] ^= salt
            rows["doc"] += np.uint32(k * offset)
            buckets = table.children(rows, np.zeros(len(rows), dtype=np.int64), table.depth)
            order = np.argsort(buckets, kind="stable")
            rows, buckets = rows[order], buckets[order]
            starts = np.flatnonzero(np.r_[True, buckets[1:] != buckets[:-1]])
            ends = np.r_[starts[1:], len(rows)]
            blob, size = rows.tobytes(), rows.dtype.itemsize
            keys = table.bucket_keys(buckets[starts])
            index.storage.append(
                {
                    key: blob[a * size : b * size]
                    for key, a, b in zip(keys, starts.tolist(), ends.tolist(), strict=True)
                }
            )
        growth.compact(table, np.arange(1 << table.depth))
        total += len(records) * (copies + 1)
    return total


def extend(storage: RedisStorage, stored: int, target: int, seed: int = 29) -> dict:
    """Extend the index in ``storage`` from ``stored`` masters (numbered up to about that) to
    ``target``; its tables' depths and sizes after."""
    index = MasterIndex.open(storage)
    copies = max(0, -(-target // stored) - 1)
    offset = 1 << (max(stored, 1).bit_length())  # past every real master number
    if copies * offset + offset > index.anchors.sparse.max_doc:
        raise ValueError("the copies' numbers would not fit the index's records")
    sizes = storage.read_counts(index.sizes_key)
    storage.add_counts(index.sizes_key, {name: count * copies for name, count in sizes.items()})
    index.grow()  # every table split to its final depth before the copies are written
    written = {}
    for name, table in (
        ("and", index.anchors.dense),
        ("ans", index.anchors.sparse),
        ("dna", index.dna.postings),
        ("rw", index.sentences.postings),
    ):
        written[name] = extend_postings(table, copies, offset, seed + len(name))
    written["sh"] = extend_simhash(index, copies, offset, seed)
    now = storage.read_counts(index.sizes_key)
    storage.add_counts(index.sizes_key, {k: v - now.get(k, 0) for k, v in written.items()})
    return {"copies": copies, "tables": str(index.tables), "records": written}
