"""Lines that repeat across many pages of one site are that site's boilerplate.

Pirate sites stamp every chapter page with the same short lines ("本站域名…", "手机阅读请访问…",
navigation, a watermark) that no fixed phrase list can anticipate. For each site, Redis keeps
how many pages each short line appeared on (a hash of line-hash → page count); a line seen on at
least ``min_pages`` pages is dropped from every page of that site. Counting and stripping take
one round trip per page. Long lines are never counted: they are content, not stamps.
"""

from __future__ import annotations

import re

import numpy as np
import redis
import xxhash

_SPACE = re.compile(r"\s+")


class SiteBoilerplate:
    def __init__(
        self,
        client: redis.Redis,
        prefix: str = "tracker:",
        min_pages: int = 5,
        max_line_chars: int = 80,
        max_lines_per_site: int = 100_000,
    ) -> None:
        self.client = client
        self.prefix = prefix
        self.min_pages = min_pages
        self.max_line_chars = max_line_chars
        self.max_lines_per_site = max_lines_per_site

    def _key(self, site: str) -> str:
        return f"{self.prefix}boilerplate:{site}"

    @staticmethod
    def line_id(line: str) -> str:
        return xxhash.xxh64_hexdigest(_SPACE.sub("", line).encode())

    def mask(self, site: str, text: str) -> tuple[np.ndarray, int]:
        """Count this page's short lines for ``site``; mark the lines that are boilerplate.

        Returns a boolean mask over ``text`` (True = boilerplate) and the number of lines it
        covers. Call once per distinct page: every call counts the page.
        """
        mask = np.zeros(len(text), dtype=bool)
        spans = []  # (start, end, line id) of the page's short lines
        position = 0
        for line in text.split("\n"):
            stripped = line.strip()
            if stripped and len(stripped) <= self.max_line_chars:
                spans.append((position, position + len(line), self.line_id(line)))
            position += len(line) + 1
        if not spans:
            return mask, 0
        key = self._key(site)
        grow = self.client.hlen(key) < self.max_lines_per_site
        ids = sorted({line_id for _, _, line_id in spans})
        pipe = self.client.pipeline(transaction=False)
        for line_id in ids:
            # When the site's table is full, only read: never grow it.
            pipe.hincrby(key, line_id, 1) if grow else pipe.hget(key, line_id)
        counts = {
            line_id: int(count or 0) for line_id, count in zip(ids, pipe.execute(), strict=True)
        }
        dropped = 0
        for start, end, line_id in spans:
            if counts[line_id] >= self.min_pages:
                mask[start:end] = True
                dropped += 1
        return mask, dropped

    def strip(self, site: str, text: str) -> tuple[str, int]:
        """:meth:`mask`, applied: the text without its boilerplate lines."""
        mask, dropped = self.mask(site, text)
        if not dropped:
            return text, 0
        lines, position, kept = text.split("\n"), 0, []
        for line in lines:
            if not (line and mask[position]):
                kept.append(line)
            position += len(line) + 1
        return "\n".join(kept), dropped
