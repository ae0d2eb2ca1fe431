"""Screenshots of matched pages (``evidence_screenshots``): each captured page as a PNG, for
people to see what the WARC holds.

The page is *not fetched again*: the HTML the crawl captured is rendered by Debian's Chromium
(``browser_path``, as the crawl's rendering finds it; Playwright drives it with the same
flags, and never downloads a browser), offline and with scripts off: every request the page would
make (styles, images, scripts) is refused, so the picture shows the captured text as served,
unstyled, and nothing of the hostile page runs. A page the crawl rendered in a browser
(script-loaded text) is captured as the browser's DOM, and shown the same way.

Bounded, so the crawl never waits for it: one worker thread with its own browser, started at
the first matched page; at most ``evidence_screenshot_max`` screenshots a crawl process, a
queue of ``QUEUE`` pages (a page arriving when it is full is skipped and counted), ``TIMEOUT_S``
a page, the whole page up to ``MAX_HEIGHT`` pixels (taller pages are cut there). Files go to
``<evidence_dir>/screens/YYYY-MM-DD/CAPTURE.png``; their SHA-256 is stored with the capture and
written in the bundle's manifest. A browser that cannot start is logged once and the crawl goes
on without screenshots.
"""

from __future__ import annotations

import hashlib
import logging
import os
import queue
import threading
import zlib
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tracker.crawling.rendering import LAUNCH_ARGS, find_browser
from tracker.enforcement.capture import Exchange, header

log = logging.getLogger(__name__)

QUEUE = 8
TIMEOUT_S = 15.0
WIDTH = 1280
MAX_HEIGHT = 16384


def page_html(exchange: Exchange) -> str | None:
    """The captured body as HTML text: decompressed as the server encoded it, decoded by the
    page's charset; None when it is not HTML or cannot be read."""
    from tracker.text.encoding import DecodeError, decode_page

    body = exchange.body
    encoding = header(exchange.response_headers, b"Content-Encoding").strip().lower()
    try:
        if encoding in ("gzip", "x-gzip"):
            body = zlib.decompress(body, 16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            body = zlib.decompress(body)
        elif encoding not in ("", "identity"):
            return None
        return decode_page(body, header(exchange.response_headers, b"Content-Type")).html
    except (zlib.error, DecodeError):
        return None


class ScreenshotTaker:
    """Takes the screenshots of :meth:`submit`\\ ted captures in a thread of its own; calls
    ``on_taken(capture_id, {"file", "sha256", "bytes", "at"})`` for each (``file`` relative to
    ``directory``)."""

    def __init__(
        self,
        directory: Path,
        limit: int,
        on_taken: Callable[[str, dict[str, Any]], None],
        *,
        executable: str | None = None,
    ) -> None:
        self.directory = Path(directory)
        self.limit = max(0, int(limit))
        self.on_taken = on_taken
        self.executable = find_browser(executable)
        self.taken = 0
        self.skipped = 0
        self.failed = 0
        self._queued = 0
        self._queue: queue.Queue[tuple[str, Exchange] | None] = queue.Queue(QUEUE)
        self._thread: threading.Thread | None = None
        self._broken = False
        self._lock = threading.Lock()

    def submit(self, capture_id: str, exchange: Exchange) -> bool:
        """Queue a screenshot; False (counted as skipped) when over the limit, the queue is
        full or the browser could not start."""
        with self._lock:
            if self._broken or self._queued >= self.limit:
                self.skipped += 1
                return False
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="screenshots", daemon=True)
                self._thread.start()
            try:
                self._queue.put_nowait((capture_id, exchange))
            except queue.Full:
                self.skipped += 1
                return False
            self._queued += 1
            return True

    def close(self, timeout: float = 60.0) -> None:
        """Finish the queued screenshots (at most ``timeout`` seconds) and stop the browser."""
        with self._lock:
            thread = self._thread
            self._broken = True  # nothing more is taken
        if thread is not None:
            self._queue.put(None)
            thread.join(timeout)

    def _run(self) -> None:
        try:
            from playwright.sync_api import Error, sync_playwright
        except ImportError:
            log.error("evidence_screenshots needs playwright: pip install 'tracker[screenshots]'")
            self._broken = True
            return
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=self.executable, args=list(LAUNCH_ARGS)
                )
                context = browser.new_context(
                    java_script_enabled=False,
                    viewport={"width": WIDTH, "height": 900},
                    service_workers="block",
                )
                context.route("**/*", lambda route: route.abort())  # offline: nothing fetched
                while (job := self._queue.get()) is not None:
                    try:
                        self._take(context, *job)
                    except (Error, OSError) as exc:
                        self.failed += 1
                        log.warning("no screenshot of capture %s: %s", job[0], exc)
                browser.close()
        except Exception as exc:  # the browser did not start: the crawl goes on without
            log.error("screenshots off: Chromium at %s did not start: %s", self.executable, exc)
            self._broken = True

    def _take(self, context: Any, capture_id: str, exchange: Exchange) -> None:
        html = page_html(exchange)
        if html is None:
            self.failed += 1
            return
        page = context.new_page()
        try:
            page.set_content(html, wait_until="load", timeout=TIMEOUT_S * 1000)
            size = page.evaluate("[document.documentElement.scrollHeight, 0]")[0]
            height = max(1, min(int(size or 900), MAX_HEIGHT))
            page.set_viewport_size({"width": WIDTH, "height": height})
            png = page.screenshot(timeout=TIMEOUT_S * 1000)
        finally:
            page.close()
        now = datetime.now(UTC)
        relative = Path("screens") / now.strftime("%Y-%m-%d") / f"{capture_id}.png"
        path = self.directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(".part")
        with temporary.open("wb") as fh:
            fh.write(png)
            fh.flush()
            os.fsync(fh.fileno())
        temporary.replace(path)
        self.taken += 1
        self.on_taken(
            capture_id,
            {
                "file": relative.as_posix(),
                "sha256": hashlib.sha256(png).hexdigest(),
                "bytes": len(png),
                "at": now,
            },
        )
