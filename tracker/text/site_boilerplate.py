"""Lines that repeat across many pages of one site are that site's boilerplate.

Pirate sites stamp every chapter page with the same short lines ("本站域名…", "手机阅读请访问…",
navigation, a watermark) that no fixed phrase list can anticipate. For each site, Redis keeps
how many pages each short line appeared on (a hash of line-hash → page count); a line seen on at
least ``min_pages`` pages is dropped from every page of that site. Long lines are never counted:
they are content, not stamps.

Two rules keep the counts from hiding text:

* **A page counts once.** Each URL's lines are counted on its first visit only (a set per site
  of the URLs counted, bounded), so re-crawling a page, or a page whose text changes a little
  every day, never makes its own lines look repeated.
* **Master text is never boilerplate.** A site could mask copied text on purpose by repeating
  it on many pages. The lines about to be dropped from a page are first checked against the
  master library (:class:`MasterText`), all together so that a passage cut into short lines
  is recognised; lines found in a master are remembered per site and never dropped. Each
  distinct set of lines is checked once per library version (a per-site cache), so on a
  site whose stamps are always the same lines the check runs once. The check reports what the
  detector reports: a passage shorter than its evidence threshold (``min_passage_chars``)
  could still be masked, but it was too short to be evidence of a copy anyway.

Counting, membership and the cache cost one round trip per batch of pages (a Lua script per
page, pipelined: in a crawl process, each round trip is a wait for the GIL besides), and the
cache one more for each page that has lines to drop.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import redis
import xxhash
from redis.exceptions import NoScriptError

from tracker.config import check_prefix
from tracker.servers.redis_cluster import is_cluster

_SPACE = re.compile(r"\s+")

# Counts a page's lines once per URL (KEYS[2] holds the URLs counted) and tells which lines
# are known master text (KEYS[3]). ARGV: url id ("" = always count), line-table cap,
# URL-set cap, then the line ids. Returns {counts, master flags}.
_COUNT = """
local count = 1
if ARGV[1] ~= '' then
  if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then count = 0
  elseif redis.call('SCARD', KEYS[2]) < tonumber(ARGV[3]) then redis.call('SADD', KEYS[2], ARGV[1])
  else count = 0 end
end
if count == 1 and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[2]) then count = 0 end
local counts, master = {}, {}
for i = 4, #ARGV do
  if count == 1 then counts[#counts + 1] = redis.call('HINCRBY', KEYS[1], ARGV[i], 1)
  else counts[#counts + 1] = tonumber(redis.call('HGET', KEYS[1], ARGV[i]) or '0') end
  master[#master + 1] = redis.call('SISMEMBER', KEYS[3], ARGV[i])
end
return {counts, master}
"""


@dataclass(frozen=True)
class MasterText:
    """How the boilerplate check asks the master library about text."""

    find: Callable[[str], Sequence[tuple[int, int]]]  # spans of the text copied from masters
    version: Callable[[], int]  # the library version the answers hold for


class SiteBoilerplate:
    def __init__(
        self,
        client: redis.Redis,
        prefix: str = "tracker:",
        min_pages: int = 5,
        max_line_chars: int = 80,
        max_lines_per_site: int = 100_000,
        max_urls_per_site: int = 200_000,
        max_checked_per_site: int = 10_000,
    ) -> None:
        self.client = client
        self.prefix = prefix
        self.min_pages = min_pages
        self.max_line_chars = max_line_chars
        self.max_lines_per_site = max_lines_per_site
        self.max_urls_per_site = max_urls_per_site
        self.max_checked_per_site = max_checked_per_site
        self.cluster = is_cluster(client)
        if self.cluster:
            check_prefix(prefix)
        self._count = client.register_script(_COUNT)

    def _key(self, site: str, kind: str = "") -> str:
        # A site's keys go to one slot of a cluster (the count script uses three of them).
        return f"{self.prefix}boilerplate{kind}:" + (f"{{{site}}}" if self.cluster else site)

    def forget(self, site: str) -> None:
        """Drop what is known of ``site``'s lines (its counts, pages, master lines)."""
        kinds = ("", "-urls", "-masters", "-checked")
        self.client.delete(*(self._key(site, kind) for kind in kinds))

    @staticmethod
    def line_id(line: str) -> str:
        return xxhash.xxh64_hexdigest(_SPACE.sub("", line).encode())

    def mask(
        self,
        site: str,
        text: str,
        url: str | None = None,
        library: MasterText | None = None,
    ) -> tuple[np.ndarray, int]:
        """Count this page's short lines for ``site`` (once per ``url``; every call when no
        URL is given); mark the lines that are boilerplate, master text excepted when a
        ``library`` is given.

        Returns a boolean mask over ``text`` (True = boilerplate) and the number of lines it
        covers.
        """
        return self.mask_many([(site, text, url)], library)[0]

    def mask_many(
        self, pages: Sequence[tuple[str, str, str | None]], library: MasterText | None = None
    ) -> list[tuple[np.ndarray, int]]:
        """:meth:`mask` of ``(site, text, url)`` pages, counted in their order: page after
        page, as if masked one by one, with their counts in one round trip."""
        lines = [self._short_lines(text) for _, text, _ in pages]
        calls = [
            (
                [self._key(site), self._key(site, "-urls"), self._key(site, "-masters")],
                [
                    xxhash.xxh64_hexdigest(url.encode()) if url else "",
                    self.max_lines_per_site,
                    self.max_urls_per_site,
                    *ids,
                ],
            )
            for (site, _, url), (_, ids) in zip(pages, lines, strict=True)
            if ids
        ]
        replies = iter(self._run_counts(calls))
        masters_met: dict[str, set[str]] = {}  # master lines found by this call, by site
        results = []
        for (site, text, _), (spans, ids) in zip(pages, lines, strict=True):
            mask = np.zeros(len(text), dtype=bool)
            if not ids:
                results.append((mask, 0))
                continue
            counts, masters = next(replies)
            boilerplate = {
                line_id
                for line_id, count, master in zip(ids, counts, masters, strict=True)
                if int(count) >= self.min_pages and not int(master)
            } - masters_met.get(site, set())
            if boilerplate and library is not None:
                found = self._master_lines(site, text, spans, boilerplate, library)
                masters_met.setdefault(site, set()).update(found)
                boilerplate -= found
            dropped = 0
            for start, end, line_id in spans:
                if line_id in boilerplate:
                    mask[start:end] = True
                    dropped += 1
            results.append((mask, dropped))
        return results

    def _short_lines(self, text: str) -> tuple[list[tuple[int, int, str]], list[str]]:
        """``(start, end, line id)`` of the short lines of ``text``, and their distinct ids
        (sorted)."""
        spans = []
        position = 0
        for line in text.split("\n"):
            stripped = line.strip()
            if stripped and len(stripped) <= self.max_line_chars:
                spans.append((position, position + len(line), self.line_id(line)))
            position += len(line) + 1
        return spans, sorted({line_id for _, _, line_id in spans})

    def _run_counts(self, calls: list[tuple[list[str], list]]) -> list:
        """The count script's replies for ``(keys, args)`` calls, run in order: pipelined on
        one server; one after the other on a cluster (sites' keys lie on different nodes)."""
        if self.cluster or len(calls) < 2:
            return [self._count(keys=keys, args=args) for keys, args in calls]
        replies: list = [None] * len(calls)
        todo = list(range(len(calls)))
        for _ in range(2):  # once more after loading the script
            pipe = self.client.pipeline(transaction=False)
            for k in todo:
                keys, args = calls[k]
                pipe.evalsha(self._count.sha, len(keys), *keys, *args)
            for k, reply in zip(todo, pipe.execute(raise_on_error=False), strict=True):
                replies[k] = reply
            todo = [k for k in todo if isinstance(replies[k], NoScriptError)]
            if not todo:
                break
            # Not run (the server lost its scripts: restarted): loaded, those run again.
            self._count.sha = self.client.script_load(_COUNT)
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        return replies

    def _master_lines(
        self,
        site: str,
        text: str,
        spans: list[tuple[int, int, str]],
        candidates: set[str],
        library: MasterText,
    ) -> set[str]:
        """The candidate lines that are master text (remembered for ``site``), checked
        together, in page order, unless this set of lines was checked against the library as
        it stands."""
        checked = self._key(site, "-checked")
        set_id = xxhash.xxh64_hexdigest(" ".join(sorted(candidates)).encode())
        pipe = self.client.pipeline(transaction=False)
        seen_at, size = pipe.hget(checked, set_id).hlen(checked).execute()
        if int(seen_at or -1) == library.version():
            return set()
        lines = [(start, end, line_id) for start, end, line_id in spans if line_id in candidates]
        joined, offsets, position = [], [], 0
        for start, end, line_id in lines:
            joined.append(text[start:end])
            offsets.append((position, position + end - start, line_id))
            position += end - start + 1
        found = library.find("\n".join(joined))
        masters = {
            line_id
            for start, end, line_id in offsets
            if any(s < end and start < e for s, e in found)
        }
        pipe = self.client.pipeline(transaction=False)
        if masters:
            pipe.sadd(self._key(site, "-masters"), *masters)
        if size < self.max_checked_per_site:
            pipe.hset(checked, set_id, library.version())
        pipe.execute()
        return masters

    def strip(
        self, site: str, text: str, url: str | None = None, library: MasterText | None = None
    ) -> tuple[str, int]:
        """:meth:`mask`, applied: the text without its boilerplate lines."""
        mask, dropped = self.mask(site, text, url, library)
        if not dropped:
            return text, 0
        lines, position, kept = text.split("\n"), 0, []
        for line in lines:
            if not (line and mask[position]):
                kept.append(line)
            position += len(line) + 1
        return "\n".join(kept), dropped
