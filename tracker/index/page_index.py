"""Inverted index of the stored pages' anchors: which pages may copy a master added today.

Pirates publish first and rights holders register the book later, so ``tracker rematch`` must
find, among the pages stored, the few that copy a master new to the library, in time that
grows with the change rather than with the page store. Each stored page files its winnowed
shingle anchors here (Schleimer, Wilkerson and Aiken's winnowing with a window of
``PAGE_WINDOW`` shingles of ``PAGE_GRAM`` syllables, see :mod:`tracker.index.anchor_index`); a
changed master is looked up with its own anchors selected the same way, whatever its length.
A passage of at least ``PAGE_WINDOW + PAGE_GRAM − 1`` = 100 tokens shared by a page and a
master holds a whole winnowing window, whose minimum both texts select: it shares an anchor.
So a page is a candidate for a master when it shares one anchor with it, and every page with a
copied passage of 100+ characters is one; a page sharing one anchor only is aligned with that
master alone, and checked in full if it copies it. Shingles of 8 syllables, not the master
index's 5: one anchor is evidence only if a chance share is rare, and 5-syllable runs recur in
unrelated Chinese texts (100 new chapters shared a single 5-syllable anchor with 10 % of
100,000 stored pages, an 8-syllable one with under 1 %). (A window of 48 with two shared
5-syllable anchors gave the same guarantee at three times the bytes: 811 bytes a page of 2,500
characters.)

**Generations and retention.** Anchors are filed in *generations*: one per period of
``page_index_days / 12`` days (7 for the default 90) of the pages' storing time, and per block
of 2^24 − 1 page numbers, so that a record holds the page number's low 24 bits (5 bytes: the
master index's record). Every key of a generation expires, in Redis itself, when the last page
it can hold is ``page_index_days`` old: Redis's expiry works in the background, a bounded
sample of keys at a time, and the tracker does nothing but skip generations past their time
(:meth:`PageIndex.expire` forgets them). Pages stored longer ago are not rematched: a master
registered more than ``page_index_days`` after a page copied it is found by that page's next
crawl only.

**Buckets that scale.** Each generation's bucket bits are chosen when it opens, from the
records of the generation before it (``SPLIT_RECORDS`` a bucket); a generation that fills
twice as fast closes, and the next one has twice the buckets. A lookup reads every live
generation's buckets, so its cost follows the pages of ``page_index_days``, not all pages
ever stored.

A page is filed under a page number ``n`` allocated each time its text is stored anew (by
:class:`tracker.stores.pages.PageStore`); the numbers of its older texts are never removed: they
name no stored page any more and are ignored, until they expire. The highest page number
filed is kept beside them, so that pages whose anchors a crashed Redis lost (its append-only
file is synced every second) are found and filed again by ``tracker index verify``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import numpy as np

from tracker.fingerprints.anchors import gram_hashes, winnow
from tracker.index.anchor_index import STOP_CAP, spread
from tracker.index.growth import SPLIT_RECORDS
from tracker.index.postings import RECORD, HashPostings, tally
from tracker.index.storage import RedisStorage, Storage

if TYPE_CHECKING:
    from tracker.servers.runtime import Runtime

PAGE_GRAM = 8  # syllables a page index shingle spans (the master index's span 5)
PAGE_WINDOW = 93  # ~1 anchor per 47 tokens; one shared in any passage of 93 + 8 - 1 = 100
MIN_SHARED = 1
COMMON = STOP_CAP  # an anchor on more pages of a generation needs a second one beside it
COMPACT_CHUNK = 4096  # buckets of a closed generation rewritten per round trip
BLOCK = (1 << 24) - 1  # page numbers a generation's records can tell apart (1 .. 2^24 - 1)
MIN_BITS, MAX_BITS = 10, 24  # a generation's buckets: 2^10 for a test, 2^24 at most
PERIODS_KEPT = 12  # a generation covers page_index_days / 12 days
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def page_anchors(tokens: np.ndarray) -> np.ndarray:
    """The anchors filed for a text of these tokens (a page, or a master looked up)."""
    return spread(winnow(gram_hashes(tokens, PAGE_GRAM), PAGE_WINDOW))


@dataclass(frozen=True)
class Generation:
    """A generation of the page index: its period (days since 1970 / ``period_days``), the
    block of page numbers it holds, its rank among the period's and block's generations (a
    generation that filled up is followed by one with more buckets) and its bucket bits."""

    period: int
    block: int
    rank: int
    bits: int

    @property
    def name(self) -> str:
        return f"{self.period}.{self.block}.{self.rank}"

    @classmethod
    def parse(cls, name: str, bits: int) -> Generation:
        period, block, rank = (int(part) for part in name.split("."))
        return cls(period, block, rank, bits)


class PageIndex:
    MAX_N = "max_n"
    GENERATIONS = "generations"  # a hash: generation name -> its bucket bits
    FILED = "filed"  # a hash: generation name -> records filed in it
    COMPACTED = "compacted"  # a hash: the closed generations rewritten at their exact size

    def __init__(
        self,
        storage: Storage,
        days: int = 90,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self.storage = storage
        self.days = max(1, days)
        self.period_days = max(1, self.days // PERIODS_KEPT)
        self.now = now or (lambda: datetime.now(UTC))
        self.max_key = storage.key(self.MAX_N)
        self.generations_key = storage.key(self.GENERATIONS)
        self.filed_key = storage.key(self.FILED)
        self.compacted_key = storage.key(self.COMPACTED)

    @classmethod
    def from_runtime(cls, runtime: Runtime) -> PageIndex:
        """The page index on ``runtime``'s Redis (keys ``<prefix>pix:…``)."""
        settings = runtime.settings
        return cls(
            RedisStorage(runtime.redis, settings.redis_prefix + "pix:"), settings.page_index_days
        )

    # ------------------------------------------------------------------------------ periods

    def period_of(self, moment: datetime) -> int:
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return (moment - EPOCH).days // self.period_days

    def expires_at(self, period: int) -> datetime:
        """When a generation of ``period`` is past keeping: its last day is ``days`` old."""
        return EPOCH + timedelta(days=(period + 1) * self.period_days + self.days)

    def live(self, period: int) -> bool:
        return self.expires_at(period) > self.now()

    def table(self, generation: Generation) -> HashPostings:
        return HashPostings(self.storage, f"pa{generation.name}", RECORD, generation.bits)

    def generations(self) -> list[Generation]:
        """The live generations, oldest first."""
        found = [
            Generation.parse(name, int(bits))
            for name, bits in self.storage.read_counts(self.generations_key).items()
        ]
        return sorted(
            (g for g in found if self.live(g.period)), key=lambda g: (g.period, g.block, g.rank)
        )

    # ------------------------------------------------------------------------------- filing

    def add(self, items: Iterable[tuple[int, np.ndarray]], stored_at: datetime | None = None):
        """File ``(page n, tokens)`` pairs, stored at ``stored_at`` (now); pages stored too long
        ago to be kept are not filed."""
        period = self.period_of(stored_at or self.now())
        items = [(n, page_anchors(tokens)) for n, tokens in items]
        if not items:
            return
        top = max(n for n, _ in items)
        if self.live(period):
            by_block: dict[int, list[tuple[int, np.ndarray]]] = defaultdict(list)
            for n, anchors in items:
                by_block[(n - 1) // BLOCK].append(((n - 1) % BLOCK + 1, anchors))
            chunks: dict[bytes, bytes] = {}
            filed: dict[str, int] = {}
            for block, pages in sorted(by_block.items()):
                generation = self._open(period, block)
                found, count = self.table(generation).chunks(pages)
                chunks.update(found)
                filed[generation.name] = count
            expires = int(self.expires_at(period).timestamp())
            self.storage.append(chunks, expire_at=expires)
            self.storage.add_counts_and_maximize(self.filed_key, filed, self.max_key, top)
        else:
            self.storage.maximize(self.max_key, top)

    def _open(self, period: int, block: int) -> Generation:
        """The generation pages of ``period`` and ``block`` are filed in now: the last one
        opened, or a new one when it is full (twice the records its buckets were chosen
        for) or none is open."""
        known, filed = self.storage.read_counts_many([self.generations_key, self.filed_key])
        mine = sorted(
            (Generation.parse(name, bits) for name, bits in known.items()),
            key=lambda g: g.rank,
        )
        mine = [g for g in mine if g.period == period and g.block == block]
        if mine:
            last = mine[-1]
            if (
                filed.get(last.name, 0) <= 2 * SPLIT_RECORDS * (1 << last.bits)
                or last.bits >= MAX_BITS
            ):
                return last
            wanted = Generation(period, block, last.rank + 1, min(MAX_BITS, last.bits + 1))
        else:
            wanted = Generation(period, block, 0, self._bits_for(known, filed, period))
        self.storage.set_default(self.generations_key, wanted.name, wanted.bits)
        # Another writer may have opened it first, with the same or other bits: theirs stand.
        opened = self.storage.read_counts(self.generations_key)
        if wanted.name not in known:  # the generations no page goes to any more: compacted
            self._compact_closed(opened, period)
        return Generation(period, block, wanted.rank, opened.get(wanted.name, wanted.bits))

    def _compact_closed(self, known: dict[str, int], period: int) -> None:
        """Rewrite the buckets of closed generations (an earlier period, or a rank followed by
        another) at their exact size: ``APPEND`` grows a string by doubling it, and a closed
        generation is appended to no more. Done once for each, by the writer that opened the
        generation after it; their keys keep their expiry."""
        done = self.storage.read_counts(self.compacted_key)
        latest: dict[tuple[int, int], int] = {}
        parsed = [Generation.parse(name, bits) for name, bits in known.items()]
        for g in parsed:
            latest[(g.period, g.block)] = max(latest.get((g.period, g.block), -1), g.rank)
        for g in parsed:
            closed = g.period < period or g.rank < latest[(g.period, g.block)]
            if closed and g.name not in done and self.live(g.period):
                self.storage.set_default(self.compacted_key, g.name, 1)
                table = self.table(g)
                for start in range(0, 1 << g.bits, COMPACT_CHUNK):
                    keys = table.bucket_keys(range(start, min(start + COMPACT_CHUNK, 1 << g.bits)))
                    self.storage.compact_keys(keys)

    def _bits_for(self, known: dict[str, int], filed: dict[str, int], period: int) -> int:
        """Bucket bits for a period's first generation: for as many records as the previous
        period filed (its pages are the best guess of this one's)."""
        before = [
            filed.get(name, 0) for name in known if Generation.parse(name, 0).period == period - 1
        ]
        records = sum(before)
        if records <= SPLIT_RECORDS * (1 << MIN_BITS):
            return MIN_BITS
        return min(MAX_BITS, math.ceil(math.log2(records / SPLIT_RECORDS)))

    def expire(self) -> int:
        """Forget the generations past their time (their keys Redis expires by itself);
        returns how many."""
        known = self.storage.read_counts(self.generations_key)
        gone = [name for name in known if not self.live(Generation.parse(name, 0).period)]
        if gone:
            for key in (self.generations_key, self.filed_key, self.compacted_key):
                self.storage.forget(key, gone)
        return len(gone)

    # ------------------------------------------------------------------------- crash repair

    def max_n(self) -> int:
        """The highest page number up to which every page is filed (0: none): the highest
        filed; on a Redis Cluster, the lowest mark if a node went back behind the others (it
        restarted empty, or from an older file: its pages are filed again by
        :meth:`tracker.matching.rematch.Rematcher.verify_page_index`)."""
        (value,) = self.storage.get([self.max_key])
        marks = self._marks()
        if marks and min(marks) < max(marks):
            return min(marks)
        return int(value or 0)

    def _marks(self) -> list[int]:
        return [mark or 0 for mark in self.storage.marks() or ()]

    def lowest_mark(self) -> int:
        marks = self._marks()
        return min(marks) if marks else 0

    def mark(self, since: int) -> None:
        """On a Redis Cluster, record on every node that the pages up to the highest filed are
        filed: the marks at ``since`` or above (:meth:`lowest_mark` read before the pages
        missing were filed) are raised. Marks are raised here, when the page index is
        verified, not as a crawl stores each page: 64 more commands a page would cost more
        than filing it. A node that loses everything, or goes back past the last
        verification, is noticed (with the index in one server, losing the last second of
        writes is noticed too; a cluster node's last second is not, but a copy's anchors lie on
        every node, so most of them remain)."""
        if self.storage.marked:
            (value,) = self.storage.get([self.max_key])
            self.storage.advance_marks(int(value or 0), since)

    def legacy(self) -> bool:
        """Whether pages were filed by a version before generations (``tracker index rebuild``
        files them again): a highest page number and no generation."""
        (value,) = self.storage.get([self.max_key])
        return bool(value) and not self.storage.read_counts(self.generations_key)

    # ------------------------------------------------------------------------------- lookup

    def candidates(self, texts: Sequence[np.ndarray]) -> dict[int, int]:
        """``{page: the most anchors one of these texts shares with it}`` of :meth:`sharing`."""
        return {page: max(shared.values()) for page, shared in self.sharing(texts).items()}

    def sharing(self, texts: Sequence[np.ndarray]) -> dict[int, dict[int, int]]:
        """Pages sharing ``MIN_SHARED`` anchors with one of these token arrays (masters): for
        each, how many it shares with each text (by its index in ``texts``). An anchor filed
        for more than ``COMMON`` pages of a generation (a stock phrase such as 且听下回分解, on
        every page of a novel) counts only beside another one (a copied passage of 196 tokens
        shares two). The buckets of every live generation are fetched in one round trip."""
        generations = self.generations()
        anchors = [page_anchors(tokens) for tokens in texts]
        plans = []
        for generation in generations:
            table = self.table(generation)
            plans.append((generation, table, [table.lookup(a) for a in anchors]))
        keys = sorted({key for _, _, lookups in plans for lookup in lookups for key in lookup.keys})
        fetched = dict(zip(keys, self.storage.get(keys), strict=True))
        found: dict[int, dict[int, int]] = {}
        for generation, table, lookups in plans:
            offset = generation.block * BLOCK
            for text, lookup in enumerate(lookups):
                docs, at = table.hits(lookup, [fetched[key] for key in lookup.keys])
                rare = np.bincount(at, minlength=len(lookup.wanted))[at] <= COMMON
                shared, rarely = tally(docs), tally(docs[rare])
                for low, count in shared.items():
                    if count >= 2 or rarely.get(low):
                        page = found.setdefault(offset + low, {})
                        page[text] = page.get(text, 0) + count
        return found

    def clear(self) -> None:
        self.storage.clear()

    def compact(self) -> None:
        self.storage.compact()
