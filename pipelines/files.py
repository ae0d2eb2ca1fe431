"""Read download files as books and match every chapter (:mod:`tracker.files`).

A file item (``file`` set by :meth:`spiders.base.TrackerSpider.file_item`) skips extraction;
the unchanged-page stage knows it by its bytes' SHA-256 (a file unchanged since it was matched
against the library as it stands is only seen again, not read). A new or changed one is read
in this stage's worker thread, one file at a time: each text member split into chapters, the
chapters matched against the library ``CHAPTER_BATCH`` at a time as they are read (the
detector's batch check), the best match of each master kept. The item then skips the page
stages (boilerplate, fingerprints, matching: ``reads_files`` is False on them), is captured as
evidence (its HTTP exchange: the file's bytes) and stored under its download URL like a page,
``file`` holding its name, size, SHA-256, members and chapter count.

A file that cannot be read (a password, a bomb, a broken or truncated archive, no RAR reader,
no text) is recorded *unread* with its reason (:mod:`tracker.crawling.unread`, the report's
``unread``), counted as ``tracker/files/unread/<reason>``, and dropped; the crawl goes on. A
server failure while matching stores the file as unmatched (``matches`` None), as for a page.
"""

from __future__ import annotations

import io
import logging
from typing import Any

from pipelines import SERVER_ERRORS, BatchedStage, Tally
from tracker.config import Settings
from tracker.crawling.context import tracker_context
from tracker.crawling.items import PageItem
from tracker.crawling.outcomes import UNREAD, Ended
from tracker.files.archives import Limits, Unreadable
from tracker.files.books import FileChapter, read_book_file

log = logging.getLogger(__name__)

#: A file's text kept with its page (for ``tracker rematch``), at most: a MongoDB document
#: holds 16 MB, and three bytes a character is UTF-8's worst for Chinese.
MAX_KEPT_CHARS = 4_000_000


class FilePipeline(BatchedStage):
    stage = "files"
    reads_files = True

    def __init__(self, crawler: Any) -> None:
        super().__init__(crawler)
        mb = crawler.settings.getint("TRACKER_MAX_DOWNLOAD_MB", Settings.max_download_mb)
        self.limits = Limits.for_download_mb(mb)

    async def process_item(self, item: PageItem) -> PageItem:
        if not item.get("file"):
            return item
        unread, tally = await self.batcher.submit(item)
        tally.apply(self.stats)
        spider = self.crawler.spider
        if unread is not None:
            reason, detail = unread
            spider.unread.unread(item["url"], reason, detail)
            raise Ended(f"file unread ({reason}): {item['url']}: {detail}", UNREAD, reason)
        spider.unread.read(item["url"])
        return item

    def process_batch(self, items: list[PageItem]) -> list[tuple[tuple[str, str] | None, Tally]]:
        return [self._read(item) for item in items]

    def _read(self, item: PageItem) -> tuple[tuple[str, str] | None, Tally]:
        """Read and match one file (in the worker thread): (reason, detail) when unread."""
        context = tracker_context(self.crawler)
        url, tally = item["url"], Tally(item["url"])
        name = item["file"]["name"]
        body = item.pop("file_body", b"") or b""
        found: dict[str, dict] = {}
        kept: list[str] = []
        state = {"kept": 0, "failed": False}

        def match(chapters: list[FileChapter]) -> None:
            texts = [chapter.text for chapter in chapters]
            for text in texts:
                if state["kept"] < MAX_KEPT_CHARS:
                    kept.append(text[: MAX_KEPT_CHARS - state["kept"]])
                    state["kept"] += len(kept[-1])
            if state["failed"]:
                return
            try:
                results = context.call(lambda: context.detector.check_many(texts), "matching")
            except SERVER_ERRORS as exc:
                tally.failure(exc, "matching a file", "unmatched")
                state["failed"] = True
                return
            for matches in results:
                for match in matches:
                    record = match.to_dict()
                    best = found.get(record["doc_id"])
                    if best is None or record.get("score", 0) > best.get("score", 0):
                        found[record["doc_id"]] = record

        try:
            if len(body) > self.limits.max_bytes:
                raise Unreadable("too_large", f"{len(body)} bytes, over max_download_mb")
            reading = read_book_file(io.BytesIO(body), name, self.limits, match)
        except Unreadable as exc:
            return self._unread(item, tally, exc.reason, f"{name}: {exc}")
        except Exception as exc:  # a reader's own fault on a hostile file: unread, never clean
            log.warning("reading %s (%s) failed: %r", url, name, exc)
            return self._unread(item, tally, "broken", f"{name}: cannot be read ({exc!r})")
        del body
        tally.inc("tracker/files/read")
        tally.inc("tracker/files/chapters", reading.chapters)
        item["file"] = reading.summary()
        item["text"] = "\n\n".join(kept)
        item["title"] = name
        item["chapter_title"] = ""
        item["extractor"] = f"file/{reading.kind}"
        item["content_hash"] = reading.sha256
        if state["failed"]:
            item["matches"] = None
        else:
            item["matches"] = sorted(found.values(), key=lambda m: str(m["doc_id"]))
            item["library_version"] = context.detector.version or 0
            if found:
                tally.inc("tracker/files/matched")
                tally.inc("tracker/pages_matched")
                tally.inc("tracker/matches", len(found))
        log.info(
            "read %s (%s, %d bytes): %d chapters in %d member(s), %d master(s) matched",
            url,
            name,
            reading.size,
            reading.chapters,
            len(reading.members),
            len(found),
        )
        return None, tally

    @staticmethod
    def _unread(
        item: PageItem, tally: Tally, reason: str, detail: str
    ) -> tuple[tuple[str, str], Tally]:
        log.warning("file unread (%s): %s: %s", reason, item["url"], detail)
        tally.inc("tracker/files/unread")
        tally.inc(f"tracker/files/unread/{reason}")
        item.pop("exchanges", None)
        return (reason, detail[:300]), tally
