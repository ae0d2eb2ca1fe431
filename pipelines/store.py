"""Store the pages (upserted by URL), their matches and their page-index anchors, a batch at a
time in a worker thread.

Order, so that a failure at any step leaves a page that the next crawl or ``tracker rematch``
processes again rather than one that looks done: new texts get new page numbers and their
anchors in the page index (:mod:`tracker.index.page_index`) first, then the matches (upserted,
the pages' others closed), and the page documents last, with their match state. Each step is
one round trip for the batch; a step that fails counts every page it concerned, and the pages
it did not concern go on (a page that could not be matched is still stored as such). A URL met
twice in a batch is written twice, in order.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

from pipelines import SERVER_ERRORS, BatchedStage, Tally
from tracker.crawling.context import TrackerContext, tracker_context
from tracker.crawling.items import PageItem
from tracker.enforcement.alerts import alert_documents
from tracker.fingerprints.document import to_signed
from tracker.stores.alerts import AlertOutbox
from tracker.stores.pages import PageRecord


class StorePipeline(BatchedStage):
    stage = "store"
    reads_files = True

    def process_batch(self, items: list[PageItem]) -> list[Tally]:
        context = tracker_context(self.crawler)
        tallies = [Tally(item["url"]) for item in items]
        for group in _rounds([item["url"] for item in items]):
            self._store([items[k] for k in group], [tallies[k] for k in group], context)
        return tallies

    def _store(self, items: list[PageItem], tallies: list[Tally], ctx: TrackerContext) -> None:
        """Store pages of distinct URLs (see the module doc for the order)."""
        now = datetime.now(UTC)
        records = [_record(item) for item in items]
        # A new text (or one never filed) gets a new page number and its anchors filed; not a
        # page that could not be matched (0: rematch files it when it matches it).
        filing = []
        for k, (item, record) in enumerate(zip(items, records, strict=True)):
            stored = item.get("stored") or {}
            if stored.get("content_hash") != item.get("content_hash") or not stored.get("n"):
                record.n = 0
                if record.matched is not None and not item.get("file"):  # files: no anchors
                    filing.append(k)
        if filing:
            try:
                numbers = ctx.call(lambda: ctx.pages.allocate_ns(len(filing)), "page number")
                for k, n in zip(filing, numbers, strict=True):
                    records[k].n = n
                anchors = [(records[k].n, items[k]["normalized"].tokens) for k in filing]
                ctx.call(lambda: ctx.page_index.add(anchors), "page index")
            except SERVER_ERRORS as exc:  # not in the page index: let rematch redo it all
                for k in filing:
                    tallies[k].failure(exc, "filing the page's anchors", "unmatched")
                    records[k].n, records[k].matched = 0, None
        saving = list(range(len(items)))
        matched = [k for k in saving if records[k].matched is not None]
        if matched:
            found = {records[k].url: _with_query(items[k]) for k in matched}
            # pages the unchanged stage found not stored: their day records are not looked for
            unstored = {items[k]["url"] for k in matched if items[k].get("stored", {}) is None}
            alerts = self._queue_alerts(ctx, now)
            try:
                new, closed = ctx.call(
                    lambda: ctx.matches.record_many(found, now, alerts, unstored),
                    "storing matches",
                )
                tallies[matched[0]].inc("tracker/matches_closed", closed)  # the batch's totals
                tallies[matched[0]].inc("tracker/matches_new", new)
            except SERVER_ERRORS as exc:  # the store is away: these pages are not stored
                for k in matched:
                    tallies[k].failure(exc, "storing", "unstored")
                    items[k]["unstored"] = True
                saving = [k for k in saving if records[k].matched is None]
        if not saving:
            return
        # the stored states the unchanged stage read for these pages are not read again
        known = {items[k]["url"]: items[k]["stored"] for k in saving if "stored" in items[k]}
        try:
            changed = ctx.call(
                lambda: ctx.pages.save_many([records[k] for k in saving], now, known),
                "storing the page",
            )
        except SERVER_ERRORS as exc:  # the store is away: count each page, keep crawling
            for k in saving:
                tallies[k].failure(exc, "storing", "unstored")
                items[k]["unstored"] = True
            return
        for k, new_text in zip(saving, changed, strict=True):
            tallies[k].inc("tracker/pages_stored")
            if not new_text:
                tallies[k].inc("tracker/pages_unchanged_rematched")

    @staticmethod
    def _queue_alerts(ctx: TrackerContext, now: datetime) -> Any:
        """With ``alert_webhook``: what queues the alerts of new matches (see
        :mod:`tracker.enforcement.alerts`), ahead of the matches themselves."""
        if not ctx.runtime.settings.alert_webhook:
            return None
        outbox = AlertOutbox(ctx.runtime.db)
        return lambda pairs: outbox.add(alert_documents(pairs, now), now)


def _record(item: PageItem) -> PageRecord:
    matches = item.get("matches")
    return PageRecord(
        url=item["url"],
        text=item["text"],
        title=item.get("title") or "",
        extractor=item.get("extractor") or "",
        status=item.get("status", 200),
        simhash=to_signed(item["simhash"]) if item.get("simhash") is not None else None,
        content_hash=item.get("content_hash"),
        extra={
            "encoding": item.get("encoding"),
            "chapter_title": item.get("chapter_title") or "",
            "metadata": item.get("metadata") or {},
            "truncated": bool(item.get("truncated")),
            "parts": list(item.get("parts") or ()),
            "parts_unread": list(item.get("parts_unread") or ()),
            "reading": dict(item.get("reading") or {}),
            **({"found_by": item["found_by"]} if item.get("found_by") else {}),
            **({"file": item["file"]} if item.get("file") else {}),
        },
        matched=[m["doc_id"] for m in matches] if matches is not None else None,
        library_version=item.get("library_version") or 0,
    )


def _with_query(item: PageItem) -> list[dict[str, Any]]:
    """The page's matches, each with the search query that led to the page (``found_by``)
    when a discovery crawl found it."""
    query = item.get("found_by")
    return [{**m, "found_by": query} for m in item["matches"]] if query else item["matches"]


def _rounds(urls: list[str]) -> list[list[int]]:
    """Positions of ``urls`` in rounds where each URL appears once, its repeats in later
    rounds (bulk writes of one URL twice would race each other)."""
    rounds: list[list[int]] = []
    met: Counter[str] = Counter()
    for k, url in enumerate(urls):
        if met[url] == len(rounds):
            rounds.append([])
        rounds[met[url]].append(k)
        met[url] += 1
    return rounds
