"""The rewrite lexicon's tables, parsed once and then read from the user's cache
(:func:`tracker.fingerprints.lexicon.lexicon_tables`): the same words, frequencies, tags and
synonym groups as jieba's and Cilin's files say, whether the cache is fresh, missing, stale,
corrupt or unwritable."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

from tracker.fingerprints import lexicon as lexicon_module
from tracker.fingerprints.lexicon import Lexicon, cilin, jieba_dictionary

# words of every kind: jieba's, Cilin's alone, both, names, function words, numbers, none
SAMPLE = ["中国", "北京", "洪水", "然而", "但是", "表示", "的", "三百二十", "不存在的词", "华"]


def expected(word: str) -> tuple[int, str, str | None, int]:
    """What the source files say of ``word``, read straight from them."""
    words, _ = jieba_dictionary()
    groups = cilin()
    freq, pos = words.get(word, (0, ""))
    group = groups.get(word)
    members = [w for w, g in groups.items() if g == group] if group else []
    return freq, pos, group, sum(words.get(w, (0, ""))[0] for w in members)


def sample() -> list[str]:
    groups = cilin()
    cilin_only = next(w for w in groups if w not in jieba_dictionary()[0])
    return [*SAMPLE, cilin_only, *list(jieba_dictionary()[0])[::40_000]]


def answers(lex: Lexicon) -> tuple[int, list, list, list]:
    words = sample()
    entries = [a.tolist() for a in lex.entries(words)]
    return lex.stamp, [lex.lookup(w) for w in words], [lex.canon(w) for w in words], entries


def test_entries_read_each_vocabulary_words_canon_from_the_tables(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A word of jieba's or Cilin's is not canonicalised where it is met: its canon was made
    once, cached beside the tables, and is the canon of the word; other words (numbers,
    unknown words) are made where met."""
    lex = Lexicon()
    vocabulary = set(lex._vocabulary)
    words = [*sample(), "三百二十名", "320", "二〇二四年", "不存在的词", *lex._vocabulary[::997]]
    made = [lex.canon(w) for w in words]
    canon = Lexicon._canon

    def outside_only(self: Lexicon, word: str, row: int | None = None):
        assert word not in vocabulary, word
        return canon(self, word, row)

    monkeypatch.setattr(Lexicon, "_canon", outside_only)
    keep, codes, weights, anchors = Lexicon().entries(words)
    content = [(k, c) for k, c in enumerate(made) if c is not None]
    assert keep.tolist() == [k for k, _ in content]
    assert codes.tolist() == [c.code for _, c in content]
    assert weights.tolist() == [c.weight for _, c in content]
    assert anchors.tolist() == [c.anchor for _, c in content]
    assert any(c.anchor for _, c in content) and not all(c.anchor for _, c in content)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cache files one first ``Lexicon()`` writes: building them takes seconds, and only
    the tests of building need a build of their own."""
    home = tmp_path_factory.mktemp("built")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(home))
        Lexicon()
    return home / "tracker"


@pytest.fixture
def cache(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache of the test's own, holding what a first ``Lexicon()`` wrote."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    shutil.copytree(built, tmp_path / "tracker")
    return tmp_path / "tracker"


def cache_file(cache: Path) -> Path:
    (path,) = cache.glob("lexicon-*.npz")
    return path


def test_new_words_take_the_rows_a_bisection_finds(cache: Path) -> None:
    """A worker's new words are placed in the vocabulary all at once, by their 16-byte keys
    (:meth:`Lexicon._places`): each at the row a bisection of the vocabulary finds, or none;
    words whose key is cut (16 bytes or more) or padding-like (ending in a zero byte), and
    words one character off a vocabulary word, included."""
    from bisect import bisect_left

    lex = Lexicon()
    vocabulary = lex._vocabulary
    long = [w for w in vocabulary if len(w.encode()) >= lexicon_module.KEY_BYTES][::50]
    some = vocabulary[::1009]
    words = [
        *some,
        *long,
        *(w[:-1] for w in some + long),
        *(w + "子" for w in some + long),
        *(w + "\x00" for w in some[:20]),
        *("\x00" + w for w in some[:20]),
        *SAMPLE,
        "",
        "\x00",
        "z" * 40,
        vocabulary[0],
        vocabulary[-1],
        vocabulary[-1] + "z",
    ]

    def bisected(word: str) -> int:
        at = bisect_left(vocabulary, word)
        return at if at < len(vocabulary) and vocabulary[at] == word else -1

    assert len(long) > 20
    places = lex._places(words).tolist()
    assert places == [bisected(w) for w in words]
    assert sum(p >= 0 for p in places) > len(some)  # found words, and words not found
    assert lex._places([]).tolist() == []


def test_tables_say_what_the_source_files_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # no cache yet: built here
    lex = Lexicon()
    assert cache_file(tmp_path / "tracker").stat().st_size > 0
    for word in sample():
        assert lex.lookup(word) == expected(word), word
    assert lex.total == jieba_dictionary()[1]
    assert lex.canon("的") is None and lex.canon("中国").anchor


def test_a_second_lexicon_reads_the_cache(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = answers(Lexicon())
    assert cache_file(cache).stat().st_size > 0

    def no_build() -> dict[str, np.ndarray]:
        raise AssertionError("the tables were parsed again")

    monkeypatch.setattr(lexicon_module, "_build_tables", no_build)
    assert answers(Lexicon()) == first


def stale_layout(path: Path) -> None:
    with path.open("wb") as fh:
        np.savez(fh, words=np.zeros(3, np.uint8))


@pytest.mark.parametrize(
    "spoil",
    [
        lambda path: path.write_bytes(b"not a zip file at all"),
        lambda path: path.write_bytes(path.read_bytes()[: path.stat().st_size // 2]),
        stale_layout,
    ],
    ids=["garbage", "truncated", "missing-arrays"],
)
def test_a_spoiled_cache_is_a_logged_rebuild(
    cache: Path, spoil, caplog: pytest.LogCaptureFixture
) -> None:
    first = answers(Lexicon())
    path = cache_file(cache)
    spoil(path)
    with caplog.at_level(logging.WARNING, logger="tracker.disk_cache"):
        assert answers(Lexicon()) == first
    assert "rebuilt" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="tracker.disk_cache"):
        assert answers(Lexicon()) == first  # the rebuilt file replaced the spoiled one
    assert caplog.text == ""


def test_new_source_data_makes_a_new_cache(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    Lexicon()
    old = cache_file(cache)
    monkeypatch.setattr(lexicon_module, "TABLES_FORMAT", "another layout")
    Lexicon()
    assert {p.name for p in cache.glob("lexicon-*.npz")} - {old.name}


def test_an_edit_of_the_canon_rules_makes_a_new_canon_cache(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The vocabulary's canons are cached by the lexicon module's own bytes, so a change of
    its rules (here one more stop word) is never answered from the cache the old rules made."""
    Lexicon()
    first = {p.name for p in cache.glob("lexicon_canon-*.npz")}
    assert len(first) == 1
    edited = tmp_path / "lexicon.py"
    source = Path(lexicon_module.__file__).read_text(encoding="utf-8")
    edited.write_text(source.replace('"那样 这些', '"中国 那样 这些', 1), encoding="utf-8")
    monkeypatch.setattr(lexicon_module, "__file__", str(edited))
    lexicon_module._module_digest.cache_clear()
    try:
        Lexicon()
    finally:
        lexicon_module._module_digest.cache_clear()
    assert {p.name for p in cache.glob("lexicon_canon-*.npz")} - first


def test_no_writable_cache_still_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "a file, not a folder"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    lex = Lexicon()
    assert [lex.lookup(w) for w in SAMPLE] == [expected(w) for w in SAMPLE]
    # the words' canons are not made for all the vocabulary in each process, but where met
    assert lex._canon_kinds is None
    keep, codes, _, _ = lex.entries(SAMPLE)
    content = [(k, c) for k, c in enumerate(map(lex.canon, SAMPLE)) if c is not None]
    assert keep.tolist() == [k for k, _ in content]
    assert codes.tolist() == [c.code for _, c in content]


def test_the_sources_digest_is_kept_by_the_files_identity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The digest of the source files is read from the cache directory while they are the same
    files (not hashed at every start), and made again when one of them changes."""
    import hashlib

    from tracker.disk_cache import files_digest

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_bytes("词 3 n\n".encode())
    b.write_bytes(b"x")

    def hashed() -> str:
        digest = hashlib.blake2b(b"layout", digest_size=16)
        for path in (a, b):
            digest.update(path.read_bytes())
        return digest.hexdigest()

    memos = tmp_path / "cache" / "tracker"
    first = files_digest([a, b], "layout")
    assert first == hashed() and not list(memos.glob("digest-*"))  # just written: not kept
    monkeypatch.setattr("tracker.disk_cache.RACY_NS", 0)
    assert files_digest([a, b], "layout") == first and list(memos.glob("digest-*"))
    assert files_digest([a, b], "layout") == first
    b.write_bytes(b"yy")
    assert files_digest([a, b], "layout") == hashed() != first
    assert files_digest([a, b], "other") != files_digest([a, b], "layout")


def test_the_sources_digest_sees_a_rewrite_with_the_same_size_and_mtime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file rewritten in place with its size and modification time restored (``cp -p``, an
    archive unpacked over it) is hashed again: its change time is part of its identity."""
    import os
    import time

    from tracker.disk_cache import files_digest

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr("tracker.disk_cache.RACY_NS", 0)
    a = tmp_path / "a.txt"
    a.write_bytes(b"old")
    first = files_digest([a])
    stat = a.stat()
    time.sleep(0.05)  # past the kernel clock's tick (a few ms), so the change time differs
    a.write_bytes(b"new")
    os.utime(a, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert a.stat().st_ino == stat.st_ino and a.stat().st_size == stat.st_size
    assert files_digest([a]) != first
