"""A check whose cost does not follow the library's size (issue 40, item 5): the rewrite
detector's candidates are the masters sharing two sentence keys or more with a page, so the
masters that share one (there are more of them the larger the library) are neither ranked nor
aligned, and a rewritten copy is found as before among masters that share one of its
sentences."""

from __future__ import annotations

import json
import random
import subprocess
import sys

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


def test_a_check_connects_before_the_stores_load_pymongo(runtime, server_env, tmp_path):
    """pymongo imported by the stores before the connection would load PyOpenSSL for a URL
    that asks for no TLS (0.3 s of every `tracker check`'s start-up)."""
    MasterLibrary.from_runtime(runtime).ingest([MasterDocument("a/1", "a", "1", r.chapter(641))])
    line = json.dumps({"id": "q", "text": r.news(651)}, ensure_ascii=False)
    (tmp_path / "one.jsonl").write_text(line + "\n", encoding="utf-8")
    probe = (
        "import sys\n"
        "from tracker.cli import main\n"
        f"status = main(['check', '--jsonl', {str(tmp_path / 'one.jsonl')!r}])\n"
        "loaded = sys.modules.get('pymongo.pyopenssl_context')\n"
        "print(status, loaded is None)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=server_env, capture_output=True, text=True, check=True
    )
    assert done.stdout.split()[-2:] == ["0", "True"], done.stdout + done.stderr
