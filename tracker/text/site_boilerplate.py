"""Lines that repeat across many pages of one site are that site's boilerplate.

Pirate sites stamp every chapter page with the same short lines ("本站域名…", "手机阅读请访问…",
navigation, a watermark) that no fixed phrase list can anticipate. For each site, Redis keeps
how many pages each short line appeared on (a hash of line-hash → page count); a line seen on at
least ``min_pages`` pages is dropped from every page of that site. Counting and stripping take
one round trip per page. Long lines are never counted: they are content, not stamps.
"""

from __future__ import annotations

import re

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

    def strip(self, site: str, text: str) -> tuple[str, int]:
        """Count this page's short lines for ``site`` and drop those that are boilerplate.

        Returns the cleaned text and the number of lines dropped. Call once per distinct page.
        """
        lines = text.split("\n")
        short = {
            self.line_id(line)
            for line in lines
            if line.strip() and len(line.strip()) <= self.max_line_chars
        }
        if not short:
            return text, 0
        key = self._key(site)
        known = self.client.hlen(key)
        pipe = self.client.pipeline(transaction=False)
        ids = sorted(short)
        for line_id in ids:
            if known < self.max_lines_per_site:
                pipe.hincrby(key, line_id, 1)
            else:  # the site's table is full: only read, never grow it
                pipe.hget(key, line_id)
        counts = {
            line_id: int(count or 0) for line_id, count in zip(ids, pipe.execute(), strict=True)
        }
        kept, dropped = [], 0
        for line in lines:
            stripped = line.strip()
            if (
                stripped
                and len(stripped) <= self.max_line_chars
                and counts.get(self.line_id(line), 0) >= self.min_pages
            ):
                dropped += 1
                continue
            kept.append(line)
        return "\n".join(kept), dropped
