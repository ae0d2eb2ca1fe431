"""Checking texts against the master library: the one way ``tracker check`` (one text and
``--jsonl``), the warm checker and the web console's check all go.

A :class:`CheckingService` reads an input (a file, standard input, an http(s) URL, a pasted
text; an RSS/Atom feed is a list of texts: :mod:`tracker.reading.readers`), checks its texts
with the library's detector, and gives an :class:`Answer`, whose JSON is the public shape
docs/checking.md documents: ``{"matches": [...]}``, or for a feed
``{"items": [{"id", "matches"}]}``.

Reading comes first and needs no server: a bad input is refused before the servers are reached
(:func:`tracker.servers.connect.connect`, on the first check). The detector is made then, and
again whenever the library changed (its version in MongoDB moved: one small read a check), its
index verified as every command that opens the library does. A library without any master
cannot say a text is clean: a check then raises :class:`EmptyLibrary` rather than answer "no
match". A service checks one batch at a time (its detector is not shared between threads).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import orjson

from tracker.config import Settings
from tracker.reading.readers import Input, InputError, input_texts, read_input, read_url

if TYPE_CHECKING:
    from tracker.matching.detector import Detector, Match, Progress
    from tracker.servers.runtime import Runtime

#: Said when the library holds no master (on standard error, in the console, in the API).
EMPTY = (
    "the master library is empty: nothing to check against, so no text can be found clean; "
    "add masters with `tracker ingest FILE…` (`tracker index list` shows the library)"
)


class EmptyLibrary(RuntimeError):
    """The library holds no master: a check would say "no match" of any text."""

    def __init__(self) -> None:
        super().__init__(EMPTY)


@dataclass(frozen=True)
class Answer:
    """The matches of one input: ``names`` holds one name per text (the input's, or each feed
    item's URL) and ``found`` the matches of each, best first."""

    feed: bool
    names: Sequence[str]
    found: Sequence[list[Match]]

    @property
    def copied(self) -> bool:
        """Whether any text copies a master."""
        return any(self.found)

    def to_dict(self) -> dict:
        """The public shape: ``{"matches": [...]}``, a feed ``{"items": [{"id", "matches"}]}``."""
        if self.feed:
            return {
                "items": [
                    {"id": name, "matches": matches}
                    for name, matches in zip(self.names, self.found, strict=True)
                ]
            }
        return {"matches": self.found[0]}

    def to_json(self) -> str:
        return dumps(self.to_dict())


class CheckingService:
    """Checks inputs for one configuration. Made with a ``runtime``, it uses those connections
    (the console's) and leaves them open; otherwise it connects on its first check and
    :meth:`close` closes what it opened. ``indexes_ensured``: made in a process whose parent
    has just ensured the database's indexes (a ``check --jsonl`` worker), it does not list
    them again."""

    def __init__(
        self, settings: Settings, runtime: Runtime | None = None, indexes_ensured: bool = False
    ) -> None:
        self.settings = settings
        self._runtime = runtime
        self._indexes_ensured = indexes_ensured
        self._owns_runtime = runtime is None
        self._detector: Detector | None = None
        self._version: int | None = None
        self._masters = 0
        self._lock = threading.Lock()

    # -------------------------------------------------------------------------- reading

    def read(self, source: str, max_bytes: int | None = None) -> Input:
        """A path, ``-`` (standard input) or an http(s) URL (``tracker check``)."""
        return read_input(source, max_bytes or self.max_bytes)

    def read_request(self, text: str | None = None, url: str | None = None) -> Input:
        """A pasted text or a URL to fetch (the console's check): the URL only from public
        addresses, unless ``console_allow_private_urls``."""
        if (text is None) == (url is None):
            raise InputError("give either a text or a URL")
        if url is not None:
            allow = self.settings.console_allow_private_urls
            return read_url(url.strip(), self.max_bytes, allow_private=allow)
        data = text.encode("utf-8", "surrogatepass")
        if len(data) > self.max_bytes:
            limit = self.settings.max_input_mb
            raise InputError(f"text: larger than the input limit of {limit} MiB")
        return Input("text", data)  # read as standard input is: HTML is recognised

    @property
    def max_bytes(self) -> int:
        return self.settings.max_input_mb << 20

    # ------------------------------------------------------------------------- checking

    def check(self, source: Input, progress: Progress | None = None) -> Answer:
        """The matches of each text of ``source`` (its texts are read first: a bad input is
        refused before any server is reached)."""
        texts = input_texts(source)
        found = self.check_texts([text for _, text in texts], progress)
        return Answer(source.is_feed, [name for name, _ in texts], found)

    def check_texts(
        self, texts: Sequence[str], progress: Progress | None = None
    ) -> list[list[Match]]:
        """The matches of each text, best first; :class:`EmptyLibrary` when there is no
        master to check against."""
        with self._lock:
            detector = self._current()
            if not self._masters:
                raise EmptyLibrary()
            return detector.check_many(texts, progress=progress) if texts else []

    def ensure_masters(self) -> None:
        """Raise :class:`EmptyLibrary` unless the library holds a master (before a batch)."""
        with self._lock:
            self._current()
            if not self._masters:
                raise EmptyLibrary()

    def warm_up(self) -> None:
        """Connect, open the library and load the segmenter's dictionary and the tables with a
        first check (the warm checker, before it answers)."""
        with self._lock:
            self._current().check("预热：词典与表格载入内存。" * 20)

    @property
    def runtime(self) -> Runtime:
        if self._runtime is None:
            from tracker.servers.connect import connect

            self._runtime = connect(self.settings, indexes_ensured=self._indexes_ensured)
        return self._runtime

    def alive(self) -> bool:
        """Whether both servers still answer (a warm checker leaves when one does not)."""
        try:
            self.runtime.db.command("ping")
            self.runtime.redis.ping()
        except Exception:
            return False
        return True

    def close(self) -> None:
        """Close the connections this service opened (not a runtime it was given)."""
        if self._owns_runtime and self._runtime is not None:
            self._runtime.close()
            self._runtime = None
        self._detector = None

    def _current(self) -> Detector:
        """The detector of the library as it is now: made again when the library's version
        moved (masters added, replaced or deleted), with the number of masters it holds."""
        # Connected first: pymongo imported by the stores before connect() would load
        # PyOpenSSL (0.3 s of every check's start-up) for a URL that asks for no TLS.
        runtime = self.runtime
        from tracker.matching.library import MasterLibrary
        from tracker.stores.masters import MasterStore

        version = MasterStore(runtime.db).version()
        if self._detector is None or version != self._version:
            library = MasterLibrary.from_runtime(runtime, verify=False)
            self._masters = library.verify().mongo_count
            self._detector = library.detector(self.settings)
            self._version = version
        return self._detector


def dumps(value: object) -> str:
    """JSON of matches and answers (``Match`` dataclasses natively, no ``asdict`` copy)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # a lone surrogate in a page's text: only escaped can it be printed
        return json.dumps(value, default=_as_dict)


def _as_dict(value: object) -> dict:
    to_dict = getattr(value, "to_dict", None)
    if to_dict is not None:
        return to_dict()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
