"""``tracker rematch``: match the stored pages again where the library changed since they
were matched, and finish the pages whose matching failed.

Pirates publish first and the book is registered later, and a crawl that met a server outage
stores pages it could not match. A run:

1. takes the pages whose matching *failed* (``match_state: failed``): each is checked in full;
2. finds the oldest library version any page is matched at — a page's ``matched_version``, or
   the version of the last run's *mark* for the pages stored before it (see
   :mod:`tracker.stores.rematch`) — and the masters added or replaced since (the library's
   log of changes);
3. looks those masters' anchors up in the page-anchor index
   (:mod:`tracker.index.page_index`, the pages stored in the last ``page_index_days``): the
   pages sharing one may copy them, every other page cannot (a copied passage of 100+
   characters shares an anchor), so the work grows with the change, not with the page store;
   a page sharing a single anchor is aligned with that master alone first, and checked only
   if it holds a copy of it. Pages with an open match of a replaced master are added;
4. checks each candidate page in full against the library as it stands and records what it
   carries now, as a crawl would (new matches are found today, so they appear as new in the
   next report; matches the page no longer carries are closed);
5. leaves a mark: every page stored before the run began (less a safety margin for writes in
   flight) is up to date with the library version it ran against. The few pages stored within
   the margin and matched against an older library are checked by the run itself, so a page
   crawled just before it is not matched again by the next crawl.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Container
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import chain
from typing import Any

from tracker.batching import batches
from tracker.fingerprints.anchors import gram_hashes
from tracker.index.page_index import PageIndex
from tracker.matching.align import Shingles, align
from tracker.matching.library import MasterLibrary
from tracker.servers.runtime import Runtime
from tracker.stores.pages import FAILED, MatchStore, PageStore
from tracker.stores.rematch import RematchMark, RematchStore
from tracker.text.normalize import normalize

log = logging.getLogger(__name__)

BATCH = 16  # pages checked together (one index round trip)
MASTER_BATCH = 500  # changed masters looked up together
IN_FLIGHT_MARGIN = timedelta(seconds=5)  # pages written this close to the start: next run


@dataclass
class RematchSummary:
    library_version: int = 0
    since_version: int = 0  # masters changed after this version were looked up
    changed_masters: int = 0
    failed_pages: int = 0
    candidate_pages: int = 0
    recent_pages: int = 0  # stored within the in-flight margin, behind: checked as well
    checked: int = 0
    matched_pages: int = 0
    new_matches: int = 0
    closed_matches: int = 0
    refiled: int = 0  # pages filed again in the page index (lost, or never filed)
    expired_generations: int = 0  # of the page index, past page_index_days
    screened_pages: int = 0  # sharing one anchor with a changed master, but no copy of it
    seconds: float = 0.0
    interrupted: bool = False
    new_doc_ids: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["new_doc_ids"] = data["new_doc_ids"][:50]
        return data


class Rematcher:
    def __init__(self, runtime: Runtime, library: MasterLibrary | None = None) -> None:
        self.runtime = runtime
        self.library = library or MasterLibrary.from_runtime(runtime)
        self.detector = self.library.detector(runtime.settings)
        self.pages = PageStore(runtime.db)
        self.matches = MatchStore(runtime.db)
        self.runs = RematchStore(runtime.db)
        self.index = PageIndex.from_runtime(runtime)
        self.screened = 0  # pages sharing one anchor, left after aligning with the master

    def run(
        self,
        progress: Callable[[int, int], None] | None = None,
        stop: threading.Event | None = None,
    ) -> RematchSummary:
        started_at, clock = datetime.now(UTC), time.perf_counter()
        summary = RematchSummary()
        if self.index.legacy():
            log.warning(
                "the stored pages' anchors were filed by an older version: run `tracker index "
                "rebuild` to file them again (until then, late masters are looked up among the "
                "pages stored since the upgrade)"
            )
        summary.expired_generations = self.index.expire()
        summary.refiled = self.verify_page_index()
        version = self.library.index.state()[0] or 0
        summary.library_version = version
        mark = self.runs.last()
        covered_before = started_at - IN_FLIGHT_MARGIN

        todo: dict[str, dict] = {page["_id"]: page for page in self.pages.failed()}
        summary.failed_pages = len(todo)
        since = self._oldest_version(mark, version)
        summary.since_version = since
        changed: set[str] = set()
        if since < version:
            # Masters in batches: a large ingest is looked up without holding every text.
            for masters in batches(self.library.store.changed_since(since), MASTER_BATCH):
                changed.update(master["_id"] for master in masters)
                for page in self._candidates(masters, mark, version):
                    summary.candidate_pages += page["_id"] not in todo
                    todo.setdefault(page["_id"], page)
            summary.changed_masters = len(changed)
            summary.screened_pages, self.screened = self.screened, 0
        # Pages stored within the margin are not covered by this run's mark: those matched
        # against an older library are checked now (a few), the others are up to date already.
        recent = set()
        for page in self.pages.stored_since(covered_before):
            if page.get("match_state") != FAILED and _matched_at(page) < version:
                recent.add(page["_id"])
                summary.recent_pages += page["_id"] not in todo
                todo.setdefault(page["_id"], page)

        done = 0
        for batch in batches(list(todo.values()), BATCH):
            if stop is not None and stop.is_set():
                summary.interrupted = True
                break
            self._check(batch, changed, summary, recent)
            done += len(batch)
            if progress:
                progress(done, len(todo))
        summary.seconds = round(time.perf_counter() - clock, 3)
        self.runs.record(
            {
                "started_at": started_at,
                "finished_at": None if summary.interrupted else datetime.now(UTC),
                "version": version,
                "covered_before": covered_before,
                **summary.to_dict(),
            }
        )
        log.info("rematch: %s", summary.to_dict())
        return summary

    def _oldest_version(self, mark: RematchMark | None, version: int) -> int:
        """The oldest library version a page stored now may be matched at (pages whose
        matching failed are checked in full anyway)."""
        oldest = mark.version if mark is not None else version
        since = mark.covered_before if mark is not None else None  # None: every page
        return min(chain((oldest,), self.pages.matched_versions(since)))

    def _candidates(
        self, changed: list[dict], mark: RematchMark | None, version: int
    ) -> list[dict]:
        """Stored pages that may copy one of the ``changed`` masters and were not checked
        against it."""
        tokens = [normalize(master["text"]).tokens for master in changed]
        sharing = self.index.sharing(tokens)
        pages = self.pages.by_ns(sharing)
        pages = [page for page in pages if self._may_copy(page, sharing[page["n"]], tokens)]
        urls = self.matches.open_urls(master["_id"] for master in changed)
        pages += self.pages.by_urls(urls - {page["_id"] for page in pages})
        behind = [
            page
            for page in pages
            if not (mark.covers(page, version) if mark else _matched_at(page) >= version)
        ]
        return behind

    def _may_copy(self, page: dict, shared: dict[int, int], masters: list) -> bool:
        """Whether a page sharing anchors with changed masters (``shared``: how many with each,
        by its index in ``masters``, their tokens) is worth checking in full: two shared
        anchors are (a copied passage of 196 tokens shares two), one only if the page's
        alignment with that master alone would be reported (a passage of 100 tokens shares
        one anchor, and so do a few chance 5-syllable runs: aligning with one master costs a
        tenth of a full check)."""
        if max(shared.values()) >= 2:
            return True
        text = normalize(page.get("text") or "")
        shingles = Shingles.of(gram_hashes(text.tokens))
        for at in shared:
            alignment = align(
                text.tokens,
                masters[at],
                min_tokens=self.runtime.settings.min_span_chars,
                page_shingles=shingles,
            )
            if self.detector.is_copy(alignment, near_duplicate=False):
                return True
        self.screened += 1
        return False

    def _check(
        self,
        batch: list[dict],
        changed: set[str],
        summary: RematchSummary,
        stamp: Container[str] = (),
    ) -> None:
        """Check pages in full and record what changed (a batch in a few bulk writes): a page
        that carries the same masters as before, none of them changed, is left as it is (the
        mark covers it) unless it is in ``stamp`` (pages the mark does not cover)."""
        results = self.detector.check_many([page.get("text") or "" for page in batch])
        version = self.detector.version or 0
        now = datetime.now(UTC)
        filed = {page["_id"]: self._file(page) for page in batch if not page.get("n")}
        summary.refiled += len(filed)
        changes: dict[str, list[dict]] = {}
        for page, matches in zip(batch, results, strict=True):
            found = [m.to_dict() for m in matches]
            before = set(page.get("matched_doc_ids") or ())
            summary.checked += 1
            summary.matched_pages += bool(found)
            if (
                {m["doc_id"] for m in found} != before
                or before & changed
                or page.get("match_state") == FAILED
                or page["_id"] in filed
                or page["_id"] in stamp
            ):
                changes[page["_id"]] = found
                summary.new_doc_ids += [m["doc_id"] for m in found if m["doc_id"] not in before]
        if changes:
            new, closed = self.matches.record_many(changes, now)
            summary.new_matches += new
            summary.closed_matches += closed
            self.pages.set_matched(
                [
                    (url, [m["doc_id"] for m in found], filed.get(url))
                    for url, found in changes.items()
                ],
                version,
                now,
            )

    def _file(self, page: dict) -> int:
        """File a page never filed in the page index (its first filing failed, or it was
        stored by an older version): a new page number, its anchors."""
        n = self.pages.allocate_n()
        self._file_pages([{**page, "n": n}])
        return n

    def _file_pages(self, pages: list[dict]) -> None:
        """File stored pages' anchors, each in the generation of the time it was stored (the
        page index keeps ``page_index_days`` of them)."""
        by_period: dict[int, list[dict]] = {}
        for page in pages:
            stored = page.get("stored_at") or datetime.now(UTC)
            by_period.setdefault(self.index.period_of(stored), []).append(page)
        for group in by_period.values():
            self.index.add(
                ((page["n"], normalize(page.get("text") or "").tokens) for page in group),
                group[0].get("stored_at"),
            )

    def rebuild_page_index(self, progress: Callable[[int], None] | None = None) -> int:
        """Recreate the page-anchor index from the stored pages' texts (those stored too long
        ago to be kept are passed over)."""
        self.index.clear()
        total = 0
        for batch in batches(self.pages.iter_texts(), 500):
            for page in batch:
                if not page.get("n"):
                    page["n"] = self.pages.allocate_n()
                    self.pages.number(page["_id"], page["n"])
            self._file_pages(batch)
            total += len(batch)
            if progress:
                progress(len(batch))
        self.index.compact()
        self.index.mark(since=0)
        return total

    def verify_page_index(self) -> int:
        """File again the pages whose anchors the page index lacks (a Redis that lost its
        last writes, an index never built, a Redis Cluster node that went back: see
        :meth:`tracker.index.page_index.PageIndex.mark`); returns how many were filed."""
        floor, indexed = self.index.lowest_mark(), self.index.max_n()
        if indexed >= self.pages.max_n():
            self.index.mark(since=floor)
            return 0
        missing = self.pages.with_n_above(indexed)
        for batch in batches(missing, 500):
            self._file_pages(batch)
        self.index.mark(since=floor)
        if missing:
            log.warning("filed %d page(s) missing from the page index again", len(missing))
        return len(missing)


def _matched_at(page: dict) -> int:
    return int(page.get("matched_version") or 0)
