"""Arrays that take a while to build (lookup tables over all of Unicode, the IDF hash table) are
built once per machine and kept in the user's cache directory, so that every later process —
a ``tracker check`` of one page, each crawl — starts in milliseconds instead of seconds.

The file name carries a digest of everything the arrays depend on (package versions, sizes),
so a change of any of them builds a new file. A cache that cannot be read or written is no
error: the arrays are built in memory, as without a cache (an unreadable one is logged, and
replaced).
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import time
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tracker"


def cache_file(name: str, key: str) -> Path:
    """Where :func:`cached_arrays` keeps the arrays ``name`` of ``key``."""
    return cache_dir() / f"{name}-{hashlib.sha1(key.encode()).hexdigest()[:16]}.npz"


#: How long ago a file must have changed for :func:`files_digest` to remember its digest.
RACY_NS = 2_000_000_000


def files_digest(paths: Iterable[Path], salt: str = "") -> str:
    """blake2b (16 bytes, hex) of ``salt`` and the files' bytes, in order. Hashing costs ~2 ms a
    MB (11 ms of every ``tracker check``'s start for the lexicon's 6 MB of sources), so the
    digest is kept in the cache directory under the files' identity (path, size, modification
    and change times, inode), as Python keeps a module's bytecode: the bytes are read again
    only when a file was replaced or touched. The change time is the kernel's (no tool sets
    it): a file rewritten with its size and modification time restored (``cp -p``, an archive
    unpacked over it) or a new file on a reused inode is still told apart. A file changed
    less than :data:`RACY_NS` ago is hashed but not remembered: it could change again within
    the same tick of the clock with the same identity (git's "racy" entries)."""
    paths = list(paths)
    stats = [(p, p.stat()) for p in paths]
    identity = "\0".join(
        [
            salt,
            *(
                f"{p.resolve()}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"
                for p, st in stats
            ),
        ]
    )
    memo = cache_dir() / f"digest-{hashlib.sha1(identity.encode()).hexdigest()[:16]}.txt"
    try:
        known = memo.read_text(encoding="ascii")
        if len(known) == 32:
            return known
    except (OSError, ValueError):
        pass
    digest = hashlib.blake2b(salt.encode(), digest_size=16)
    for path in paths:
        digest.update(path.read_bytes())
    value = digest.hexdigest()
    if time.time_ns() - max((st.st_ctime_ns for _, st in stats), default=0) >= RACY_NS:
        save(memo, value.encode("ascii"))  # unless the home is read-only: then hashed each time
    return value


def save(path: Path, data: bytes) -> bool:
    """Write ``data`` to the cache file ``path`` (its directory made) all at once: written
    beside it and renamed, so a concurrent reader sees all of it or nothing. Whether it was
    written (not in a read-only home: the caller then rebuilds in each process)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_bytes(data)
        partial.replace(path)
    except OSError:
        return False
    return True


def writable(directory: Path) -> bool:
    """Whether a file can be made in ``directory`` (made first, if missing, as
    :func:`cached_arrays` makes it)."""
    existing = directory
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    return existing.is_dir() and os.access(existing, os.W_OK | os.X_OK)


def cached_arrays(
    name: str,
    key: str,
    build: Callable[[], dict[str, np.ndarray]],
    required: Iterable[str] = (),
) -> dict[str, np.ndarray]:
    """The arrays ``build()`` returns, from ``<cache>/<name>-<digest of key>.npz`` when there
    and holding every array named in ``required``."""
    path = cache_file(name, key)
    try:
        with np.load(path, allow_pickle=False) as saved:
            arrays = {k: saved[k] for k in saved.files}
        missing = set(required) - set(arrays)
        if not missing:
            return arrays
        logger.warning("cache %s lacks %s: rebuilt", path, ", ".join(sorted(missing)))
    except FileNotFoundError:
        pass
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        logger.warning("cache %s unreadable (%s): rebuilt", path, exc)
    arrays = build()
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    save(path, buffer.getvalue())  # a read-only home: built in each process
    return arrays
