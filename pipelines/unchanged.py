"""Skip pages whose text has not changed since they were stored and matched (content hash).

A page re-crawled with the same extracted text (``tracker.model.content_hash``) is not
fingerprinted or matched again *if its stored match is still good*: matching succeeded and it
ran against the library as it stands (the page's ``matched_version``, or the mark of the last
``tracker rematch``, has reached the index's library version). Its stored record and open
matches then only get their ``last_seen`` refreshed, so the day's report lists them. A page
whose matching failed, or that was matched before masters were added or changed, goes on
through the pipelines and is matched again. A page cut short in transfer is never stored over
a complete earlier copy. A download file (:mod:`pipelines.files`, the stage after this one) is
known by its bytes' SHA-256: one unchanged since it was matched is not read again.

The stored states of a batch of pages are read with one query, and their refreshes written
with one bulk write per collection, in a worker thread.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from pipelines import SERVER_ERRORS, BatchedStage, Tally
from tracker.crawling.context import TrackerContext, tracker_context
from tracker.crawling.items import PageItem
from tracker.crawling.outcomes import UNCHANGED, UNREAD, Ended
from tracker.model import content_hash
from tracker.stores.pages import OK
from tracker.stores.rematch import RematchMark


class UnchangedPagePipeline(BatchedStage):
    stage = "unchanged"

    async def process_item(self, item: PageItem) -> PageItem:
        drop, tally = await self.batcher.submit(item)
        tally.apply(self.stats)
        if drop:  # unchanged, or cut short with a complete copy stored (kept, never replaced)
            end, reason = (UNCHANGED, "") if drop.startswith("unchanged") else (UNREAD, "truncated")
            raise Ended(drop, end, reason)
        return item

    def process_batch(self, items: list[PageItem]) -> list[tuple[str | None, Tally]]:
        """For each page: why it is dropped (None: it goes on), and what it counts. Sets
        ``stored`` on the items (and ``content_hash``, unless the extraction worker did). In
        the stage's worker thread."""
        context = tracker_context(self.crawler)
        tallies = [Tally(item["url"]) for item in items]
        for item in items:
            if item.get("file"):  # a download file: its bytes' SHA-256 (pipelines.files)
                item["content_hash"] = hashlib.sha256(item["file_body"]).hexdigest()
            elif not item.get("content_hash"):  # the extraction worker sets it
                item["content_hash"] = content_hash(item["text"])
        try:
            urls = [item["url"] for item in items]
            states = context.call(lambda: context.pages.states(urls), "page lookup")
        except SERVER_ERRORS as exc:  # the store is away: process the pages as new
            for tally in tallies:
                tally.failure(exc, "page lookup")
            return [(None, tally) for tally in tallies]
        library = _LibraryState(context)
        touch: list[int] = []  # the pages only seen again
        for k, item in enumerate(items):
            stored = item["stored"] = states.get(item["url"])
            same = stored is not None and stored.get("content_hash") == item["content_hash"]
            if not same and (stored is None or not item.get("truncated")):
                continue
            if same and not library.up_to_date(stored, tallies[k]):
                tallies[k].inc("tracker/pages_rematched")  # unchanged, but matched again
                continue
            touch.append(k)
        refreshed = self._touch([items[k] for k in touch], [tallies[k] for k in touch], context)
        results: list[tuple[str | None, Tally]] = [(None, tally) for tally in tallies]
        for k in touch:
            item, tally, carried = items[k], tallies[k], refreshed.get(items[k]["url"])
            stored, url = item["stored"], item["url"]
            if stored.get("content_hash") != item["content_hash"]:
                tally.inc("tracker/pages_truncated_kept")
                results[k] = (f"truncated copy of a stored page, stored copy kept: {url}", tally)
            elif carried is not None and sorted(carried) != sorted(
                stored.get("matched_doc_ids") or []
            ):
                # The page's matches disagree with what it was found to carry (a write lost by
                # a server without a journal): match it again rather than trust either.
                tally.inc("tracker/pages_repaired")
            else:
                tally.inc("tracker/pages_unchanged")
                tally.inc("tracker/matches_refreshed", len(carried or ()))
                results[k] = (f"unchanged since last crawl: {url}", tally)
        carrying = [
            k
            for k in touch
            if (results[k][0] or "").startswith("unchanged") and refreshed.get(items[k]["url"])
        ]
        if carrying:
            self._capture_missing([items[k] for k in carrying], [tallies[k] for k in carrying])
        return results

    def _capture_missing(self, items: list[PageItem], tallies: list[Tally]) -> None:
        """Capture unchanged pages that carry matches but were never captured with this text
        (matched by ``tracker rematch``, or when the evidence could not be written): their
        matches are read back for the manifest's passages, then named by the capture."""
        from pipelines.evidence import capture_pages

        context = tracker_context(self.crawler)
        try:
            urls = [item["url"] for item in items]
            captured = context.call(lambda: context.captures.captured_hashes(urls), "evidence")
            missing = [
                k
                for k, item in enumerate(items)
                if item["content_hash"] not in captured.get(item["url"], ())
            ]
            if not missing:
                return
            keys = [(items[k]["url"], d) for k in missing for d in items[k]["stored"]
                    .get("matched_doc_ids") or ()]  # fmt: skip
            found = context.call(lambda: context.matches.by_ids(keys), "evidence")
        except SERVER_ERRORS as exc:
            for tally in tallies:
                tally.failure(exc, "evidence lookup")
            return
        by_url: dict[str, list[dict]] = {}
        for match in found:
            if match.get("active") is not False:
                by_url.setdefault(match["url"], []).append(match)
        chosen = [k for k in missing if by_url.get(items[k]["url"])]
        for k in chosen:
            items[k]["matches"] = by_url[items[k]["url"]]
        documents = capture_pages(self.crawler, [items[k] for k in chosen],
                                  [tallies[k] for k in chosen])  # fmt: skip
        if documents:
            named = {d["url"]: (d["_id"], d["payload_sha256"]) for d in documents}
            try:
                context.call(lambda: context.matches.set_capture(named), "evidence")
            except SERVER_ERRORS as exc:
                for tally in tallies:
                    tally.failure(exc, "naming the evidence")

    @staticmethod
    def _touch(
        items: list[PageItem], tallies: list[Tally], context: TrackerContext
    ) -> dict[str, list[str]]:
        """Mark the pages and their open matches seen now; the doc ids each carries (none
        when the store failed: counted)."""
        if not items:
            return {}
        now = datetime.now(UTC)
        seen = [(item["url"], item.get("status")) for item in items]
        try:
            context.call(lambda: context.pages.touch_many(seen, now), "touch")
            urls = [url for url, _ in seen]
            return context.call(lambda: context.matches.touch_many(urls, now), "touch")
        except SERVER_ERRORS as exc:
            for tally in tallies:
                tally.failure(exc, "refreshing the stored page", "unstored")
            return {}


class _LibraryState:
    """Whether a stored match is up to date, the library version read once per batch."""

    def __init__(self, context: TrackerContext) -> None:
        self.context = context
        self._read: tuple[int, RematchMark | None] | Exception | None = None

    def up_to_date(self, stored: dict, tally: Tally) -> bool:
        """Matching succeeded, against the library as it stands now."""
        if stored.get("match_state", OK) != OK:
            return False
        if self._read is None:
            context = self.context
            try:
                version = context.call(context.library_version, "library version")
                self._read = (version, context.call(context.rematch_mark, "rematch mark"))
            except SERVER_ERRORS as exc:
                self._read = exc
        if isinstance(self._read, Exception):
            tally.failure(self._read, "library version lookup")
            return False
        version, mark = self._read
        if int(stored.get("matched_version") or 0) >= version:
            return True
        return mark is not None and mark.covers(stored, version)
