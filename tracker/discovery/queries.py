"""The queries that find a work's copies, and which of them a run sends.

Three kinds, for each work of the library:

* ``title``: the work's name with the words pirate sites put beside it (:data:`PIRATE_WORDS`:
  笔趣阁, 免费阅读, 最新章节, 全文, txt下载), which lead to their catalogue pages;
* ``chapter``: the work's name and a chapter's title, which lead to that chapter's copies;
* ``sentence``: a distinctive phrase of a chapter, in quotes (an exact-phrase query), which
  finds a copy whatever the site calls the book. A phrase is distinctive when its words are
  rare in Chinese at large, scored by jieba's IDF table (the weights SimHash uses,
  :func:`tracker.fingerprints.simhash.idf_weights`): the sum of the IDF of its words rarer
  than everyday vocabulary (:data:`RARE_IDF`), so names and unusual terms count and common
  and function words do not. And it must
  identify this work and no other: every one of its shingles is looked up in the library's
  index (:meth:`tracker.index.master_index.MasterIndex.anchor_holders`), and a phrase some
  master of another work holds is not chosen. The index keeps a winnowed sample of each
  master's shingles (its anchors), so this catches another work's copy of the phrase when one
  of the phrase's shingles is among that work's anchors: always when that work is short (a
  news item, an epigraph: shorter than one window), for a phrase inside a long chapter about
  one time in three (one anchor per ~24.5 shingles). A shared phrase that slips through costs a
  query, never a wrong match: every page found is matched against the whole library.

:class:`QueryPlanner` picks a run's queries. Works go in this order: those named by the
``discover_priority`` setting, in its order; then works never searched, the most recently
ingested first (pirates copy what is new); then the others, the least recently searched first,
so a budget smaller than the library reaches every work in turn. Each work gets up to
``discover_queries_per_work`` queries a run, title queries first, then its chapters' title
and phrase queries, chapters never searched first (the latest chapter first: what 最新章节
pages show), then the least recently searched; a query done within ``discover_requery_days``
is not sent again.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from tracker.fingerprints.simhash import idf_weights, tokenize
from tracker.index.master_index import MasterIndex
from tracker.stores.discovery import QueryStore
from tracker.stores.masters import MasterEntry, MasterStore
from tracker.text.normalize import normalize

PIRATE_WORDS = ("笔趣阁", "免费阅读", "最新章节", "全文", "txt下载")
TITLE, CHAPTER, SENTENCE = "title", "chapter", "sentence"

#: A phrase query's length, in characters (punctuation aside): long enough to be unique,
#: short enough for the engines (Baidu reads 38 characters of a query).
PHRASE_MIN, PHRASE_MAX = 12, 30
#: Phrases of a chapter checked against the library's index, the best first.
PHRASES_CHECKED = 4
#: jieba's IDF of a word rarer than everyday vocabulary: 今天 5.0, 众人 5.8, 抬头 6.6 fall
#: below; 天边 9.2, 琉璃 8.9, 饕餮 10.3 above. (The table's median, 11.9, is the weight of a
#: word it lacks: most of its entries are rare words, so the median is no threshold.)
RARE_IDF = 7.0
#: Chapters whose texts are read at a time for their phrases.
TEXT_BATCH = 8

_CLAUSE_END = re.compile(r"[，,。！？!?；;：:、…\n\r“”「」『』\"'（）()《》—]+")
_SENTENCE_END = re.compile(r"[。！？!?；;…\n]")


@dataclass(frozen=True)
class Query:
    """A query text, and what it was made for."""

    text: str
    work: str
    kind: str
    doc_id: str = ""

    def about(self) -> dict[str, Any]:
        return {"work": self.work, "kind": self.kind, "doc_id": self.doc_id}


def title_queries(work: str) -> list[Query]:
    return [Query(f"{work} {word}", work, TITLE) for word in PIRATE_WORDS]


def chapter_query(work: str, entry: MasterEntry) -> Query | None:
    title = " ".join(entry.title.split())
    if not title:
        return None
    text = title if work in title else f"{work} {title}"
    return Query(text, work, CHAPTER, entry.doc_id)


def phrases(text: str) -> list[str]:
    """Candidate phrases of ``text``: runs of whole clauses of one sentence, each
    :data:`PHRASE_MIN` to :data:`PHRASE_MAX` characters (punctuation aside), as they stand in
    the text."""
    found = []
    for sentence in _SENTENCE_END.split(text):
        clauses = [c.strip() for c in _CLAUSE_END.split(sentence) if c.strip()]
        for start in range(len(clauses)):
            run = ""
            for clause in clauses[start:]:
                joined = f"{run}，{clause}" if run else clause
                if _length(joined) > PHRASE_MAX:
                    break
                run = joined
                if _length(run) >= PHRASE_MIN:
                    found.append(run)
    return list(dict.fromkeys(found))


def _length(phrase: str) -> int:
    return sum(1 for ch in phrase if ch.isalnum())


def rarity(phrase: str) -> float:
    """How rare the phrase's words are: the sum of the IDF of its words rarer than everyday
    vocabulary (:data:`RARE_IDF`; a word the table lacks, a name mostly, weighs its median)."""
    words = tokenize(normalize(phrase).chars)
    weights, _ = idf_weights(words)
    return float(weights[weights >= RARE_IDF].sum())


def distinctive_phrases(
    texts: dict[str, str], work: str, index: MasterIndex, masters: MasterStore
) -> dict[str, str]:
    """The best distinctive phrase of each text (``doc id → text``) of ``work``: the rarest
    of its phrases that no master of another work holds (one lookup in the index for all).
    Texts without one are left out."""
    candidates = {
        doc_id: sorted(phrases(text), key=lambda p: (-rarity(p), p))[:PHRASES_CHECKED]
        for doc_id, text in texts.items()
    }
    flat = [(doc_id, phrase) for doc_id, chosen in candidates.items() for phrase in chosen]
    if not flat:
        return {}
    holders = index.anchor_holders([normalize(phrase).tokens for _, phrase in flat])
    works = masters.works_of({n for found in holders for n in found})
    best: dict[str, str] = {}
    for (doc_id, phrase), found in zip(flat, holders, strict=True):
        if doc_id in best:
            continue
        if any(works.get(n, work) != work for n in found):
            continue  # another work holds this phrase (a quotation, a stock line)
        best[doc_id] = phrase
    return best


def phrase_query(work: str, doc_id: str, phrase: str) -> Query:
    return Query(f'"{phrase}"', work, SENTENCE, doc_id)


@dataclass(frozen=True)
class Work:
    name: str
    chapters: list[MasterEntry]  # newest first
    added_at: datetime | None


def library_works(masters: MasterStore) -> dict[str, Work]:
    """The library's works, each with its chapters, the latest first."""
    chapters: dict[str, list[MasterEntry]] = defaultdict(list)
    for entry in masters.listing():
        chapters[entry.work].append(entry)
    works = {}
    epoch = datetime.min.replace(tzinfo=UTC)
    for name, entries in chapters.items():
        entries.sort(key=lambda e: (_utc(e.added_at) or epoch, e.doc_id), reverse=True)
        works[name] = Work(name, entries, max((_utc(e.added_at) or epoch) for e in entries))
    return works


def _utc(moment: datetime | None) -> datetime | None:
    if moment is None:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


class QueryPlanner:
    """Which queries a run sends (see the module doc)."""

    def __init__(
        self,
        masters: MasterStore,
        index: MasterIndex,
        store: QueryStore,
        *,
        now: datetime,
        requery_days: int,
        per_work: int,
        priority: Iterable[str] = (),
    ) -> None:
        self.masters, self.index, self.store = masters, index, store
        self.now = now
        self.requery = timedelta(days=requery_days)
        self.per_work = per_work
        self.priority = list(priority)

    def ordered_works(self, only: Iterable[str] | None = None) -> list[Work]:
        works = library_works(self.masters)
        if only is not None:
            works = {name: works[name] for name in only if name in works}
        searched = self.store.searched_at()
        epoch = datetime.min.replace(tzinfo=UTC)
        first = [works[name] for name in dict.fromkeys(self.priority) if name in works]
        rest = [w for name, w in works.items() if name not in set(self.priority)]
        rest.sort(
            key=lambda w: (
                w.name in searched,
                searched.get(w.name, epoch),
                -(w.added_at or epoch).timestamp(),
                w.name,
            )
        )
        return first + rest

    def due(self, state: dict[str, Any] | None) -> bool:
        """A query never done, or done longer than the requery window ago."""
        done = (state or {}).get("done_at")
        return done is None or done < self.now - self.requery

    def for_work(self, work: Work, limit: int | None = None) -> list[Query]:
        """Up to ``limit`` (default ``per_work``) queries of ``work`` due now, best first."""
        limit = self.per_work if limit is None else min(limit, self.per_work)
        picked: list[Query] = []
        if limit <= 0:
            return picked
        titles = title_queries(work.name)
        states = self.store.states(q.text for q in titles)
        picked += [q for q in titles if self.due(states.get(q.text))][:limit]
        for query in self._chapter_queries(work):
            if len(picked) >= limit:
                break
            picked.append(query)
        return picked

    def _chapter_queries(self, work: Work) -> Iterator[Query]:
        """The chapters' title and phrase queries that are due, chapters never searched first
        (the latest first), then the least recently searched."""
        titled = [(entry, chapter_query(work.name, entry)) for entry in work.chapters]
        states = self.store.states(q.text for _, q in titled if q is not None)
        epoch = datetime.min.replace(tzinfo=UTC)

        def searched(item: tuple[int, tuple[MasterEntry, Query | None]]) -> tuple:
            position, (_, query) = item
            attempt = (states.get(query.text) or {}).get("last_attempt") if query else None
            return (attempt is not None, attempt or epoch, position)

        order = [pair for _, pair in sorted(enumerate(titled), key=searched)]
        for start in range(0, len(order), TEXT_BATCH):
            batch = order[start : start + TEXT_BATCH]
            texts = {
                doc_id: str(doc.get("text") or "")
                for doc_id, doc in self.masters.texts(e.doc_id for e, _ in batch).items()
            }
            chosen = distinctive_phrases(texts, work.name, self.index, self.masters)
            phrased = {
                entry.doc_id: phrase_query(work.name, entry.doc_id, chosen[entry.doc_id])
                for entry, _ in batch
                if entry.doc_id in chosen
            }
            phrase_states = self.store.states(q.text for q in phrased.values())
            for entry, query in batch:
                if query is not None and self.due(states.get(query.text)):
                    yield query
                phrase = phrased.get(entry.doc_id)
                if phrase is not None and self.due(phrase_states.get(phrase.text)):
                    yield phrase
