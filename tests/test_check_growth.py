"""A check whose cost does not follow the library's size (issue 40, item 5): the rewrite
detector's candidates are the masters sharing two sentence keys or more with a page, so the
masters that share one (there are more of them the larger the library) are neither ranked nor
aligned, and a rewritten copy is found as before among masters that share one of its
sentences."""

from __future__ import annotations

import random

from tests import rewrites as r
from tracker.fingerprints.document import fingerprint
from tracker.fingerprints.sentences import query_keys, sentences_of
from tracker.index import MemoryStorage
from tracker.index.master_index import SENTENCE_MIN_HITS, MasterIndex
from tracker.matching.library import MasterLibrary
from tracker.model import MasterDocument
from tracker.text.normalize import normalize

MASTER = 640  # tests.rewrites' seeds: chapter 640, news from 650 (not used by test_rewrites)
SHARING = 30  # masters sharing one sentence of the master each


def _sharing_one_sentence(master: str) -> list[str]:
    """Unrelated news articles, each with one sentence of ``master`` among its own."""
    sentences = [s + "。" for s in master.replace("\n", "").split("。") if len(s) >= 12]
    rng = random.Random(40)
    texts = []
    for k in range(SHARING):
        own = r.news(650 + k).split("\n")
        own.insert(rng.randrange(len(own) + 1), sentences[k % len(sentences)])
        texts.append("\n".join(own))
    return texts


def test_a_master_sharing_one_sentence_key_is_no_candidate():
    master = r.chapter(MASTER)
    index = MasterIndex(MemoryStorage())
    index.add([(1, fingerprint(master)[1])])
    index.add([(k + 2, fingerprint(t)[1]) for k, t in enumerate(_sharing_one_sentence(master))])
    page = r.rewrite(master, 4000, r.HELD, "no13")
    keys = query_keys(sentences_of(normalize(page)))

    [all_named] = index.sentence_candidates([keys], least=1)
    [candidates] = index.sentence_candidates([keys])

    sharing_one = {d for d, units in all_named.items() if len(units) < SENTENCE_MIN_HITS}
    assert len(sharing_one) >= SHARING // 3  # the hot sentences do name them
    assert set(candidates) == set(all_named) - sharing_one
    assert 1 in candidates and len(candidates[1]) >= 5


def test_a_rewritten_copy_is_found_among_masters_sharing_its_sentences(runtime):
    master = r.chapter(MASTER)
    library = MasterLibrary.from_runtime(runtime)
    library.ingest(
        [MasterDocument("book/640", "book", "c640", master)]
        + [
            MasterDocument(f"news/{k}", "news", f"n{k}", text)
            for k, text in enumerate(_sharing_one_sentence(master))
        ]
    )
    copies = [r.rewrite(master, 4100 + k, r.HELD, "no13") for k in range(3)]
    inside = r.embed(r.part(copies[0], 0.5, random.Random(3)), r.news(690), random.Random(4))
    results = library.detector().check_many([*copies, inside])
    for matches in results:
        assert [m.doc_id for m in matches] == ["book/640"], matches
