"""Ingest, check, replace, delete and rebuild on the real servers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tracker.cli import main
from tracker.fingerprints.document import VERSION
from tracker.matching.detector import MasterCache
from tracker.matching.library import MasterLibrary
from tracker.model import MasterDocument
from tracker.reading.readers import InputError, read_documents, read_masters

from . import disguise
from .texts import prose

CHAPTERS = {f"book/{i:04d}": prose(seed=i, chars=3000) for i in range(1, 9)}


@pytest.fixture()
def library(runtime) -> MasterLibrary:
    lib = MasterLibrary.from_runtime(runtime)
    lib.ingest(
        MasterDocument(doc_id, "book", f"第{doc_id[-1]}章", text)
        for doc_id, text in CHAPTERS.items()
    )
    return lib


def matched(library: MasterLibrary, text: str) -> list[str]:
    return [m.doc_id for m in library.detector().check(text)]


@pytest.mark.parametrize(
    "name, disguise_fn",
    [
        ("verbatim", lambda t: t),
        ("ads", disguise.with_ads),
        ("traditional", disguise.traditional),
        ("homophones 10%", lambda t: disguise.homophones(t, 0.10)),
        ("homophones 15%", lambda t: disguise.homophones(t, 0.15)),
        ("typos 15%", lambda t: disguise.typos(t, 0.15)),
        (
            "homophones 5% then typos 15%",
            lambda t: disguise.typos(disguise.homophones(t, 0.05), 0.15),
        ),
        ("pinyin words 10%", lambda t: disguise.pinyin_words(t, 0.10)),
        ("punctuation noise", disguise.punctuation_noise),
        ("paragraphs reordered", disguise.reorder_paragraphs),
        ("sentences shuffled", disguise.shuffle_sentences),
        (
            "all at once",
            lambda t: disguise.punctuation_noise(
                disguise.typos(
                    disguise.homophones(disguise.traditional(disguise.with_ads(t)), 0.05), 0.10
                )
            ),
        ),
    ],
)
def test_disguised_copies_are_found(library, name, disguise_fn):
    assert matched(library, disguise_fn(CHAPTERS["book/0003"])) == ["book/0003"], name


def test_partial_split_and_merged_copies(library):
    text = CHAPTERS["book/0005"]
    half = len(text) // 2
    assert matched(library, text[:half]) == ["book/0005"]
    assert matched(library, text[half:]) == ["book/0005"]
    merged = library.detector().check(CHAPTERS["book/0001"] + "\n" + CHAPTERS["book/0002"])
    assert sorted(m.doc_id for m in merged) == ["book/0001", "book/0002"]
    assert all(m.coverage > 0.9 for m in merged)
    mixed = disguise.interleave(CHAPTERS["book/0006"], CHAPTERS["book/0007"])
    assert sorted(matched(library, mixed)) == ["book/0006", "book/0007"]
    embedded = prose(seed=100, chars=4000) + text[1000:1900] + prose(seed=101, chars=4000)
    found = library.detector().check(embedded)
    assert [m.doc_id for m in found] == ["book/0005"]
    assert 0.2 < found[0].coverage < 0.45


def test_evidence_spans_point_at_the_copied_passage(library):
    passage = CHAPTERS["book/0004"][500:1100]
    page = prose(seed=200, chars=2000) + passage + prose(seed=201, chars=2000)
    [match] = library.detector().check(page)
    [span] = match.spans
    assert abs(span["page_start"] - page.index(passage)) <= 8
    assert abs(span["page_end"] - (page.index(passage) + len(passage))) <= 8
    master = CHAPTERS["book/0004"]
    assert (
        master[span["master_start"] : span["master_end"]] in passage
        or passage[10:-10] in master[span["master_start"] : span["master_end"]]
    )
    assert span["text"] == page[span["page_start"] : span["page_end"]]


def test_innocent_texts_and_short_quotes_are_not_flagged(library):
    for seed in range(300, 310):
        assert matched(library, prose(seed=seed, chars=3000)) == []
    quote = CHAPTERS["book/0002"][100:140]
    assert matched(library, prose(seed=400, chars=1500) + "正如书中所说：" + quote) == []


def test_reingest_replaces_and_delete_removes(library):
    new_text = prose(seed=999, chars=3000)
    summary = library.ingest([MasterDocument("book/0003", "book", "第3章", new_text)])
    assert (summary.added, summary.replaced) == (0, 1)
    assert library.store.count() == len(CHAPTERS)
    assert matched(library, CHAPTERS["book/0003"]) == []
    assert matched(library, new_text) == ["book/0003"]
    assert library.delete("book/0003") is True
    assert library.delete("book/0003") is False
    assert matched(library, new_text) == []


def test_the_recorded_master_count_follows_every_change_and_a_thorough_verify_counts(library):
    """The count kept with the library version (read by every open, instead of counting the
    collection) follows ingests, replacements and deletions; masters lost by MongoDB behind
    the library's back are found by the thorough verify of `tracker index verify`."""
    store = library.store
    extra = [
        MasterDocument(f"extra/{i}", "extra", f"第{i}章", prose(seed=700 + i)) for i in range(3)
    ]
    library.ingest([*extra, MasterDocument("book/0001", "book", "第1章", prose(seed=710))])
    assert store.count() == store.count_stored() == len(CHAPTERS) + 3
    assert library.delete("extra/0") is True
    assert store.count() == store.count_stored() == len(CHAPTERS) + 2
    assert library.verify().action == "ok"
    store.masters.delete_one({"_id": "extra/1"})  # lost behind the library's back
    assert library.verify(repair=False).action == "ok"  # the quick check trusts the record
    found = library.verify(thorough=True)
    assert (found.action, found.mongo_count) == ("rebuilt", len(CHAPTERS) + 1)
    assert store.count() == store.count_stored() == len(CHAPTERS) + 1
    assert matched(library, extra[1].text) == []
    assert matched(library, extra[2].text) == ["extra/2"]


def test_a_long_lived_detector_sees_masters_replaced_by_another_process(library, runtime):
    detector = library.detector()  # as in a crawl process: it caches the masters it aligned
    old_text = CHAPTERS["book/0004"]
    assert [m.doc_id for m in detector.check(old_text)] == ["book/0004"]
    other_process = MasterLibrary.from_runtime(runtime)
    new_text = prose(seed=404, chars=3000)
    other_process.ingest([MasterDocument("book/0004", "book", "第4章", new_text)])
    found = detector.check(new_text)
    assert [m.doc_id for m in found] == ["book/0004"]
    assert found[0].spans[0]["master_start"] == 0  # offsets in the new text, not the old one
    assert detector.check(old_text) == []
    other_process.delete("book/0004")
    assert detector.check(new_text) == []


def test_rebuild_index_from_mongodb(library, runtime):
    library.index.clear()
    assert matched(library, CHAPTERS["book/0006"]) == []
    assert library.rebuild_index() == len(CHAPTERS)
    assert matched(library, CHAPTERS["book/0006"]) == ["book/0006"]


def test_rebuild_recomputes_fingerprints_of_an_older_version(library, runtime):
    masters = library.store.masters
    before = masters.find_one({"_id": "book/0005"})
    # As stored by version 1: fingerprints in a collection of their own (another SimHash
    # function), alignment tokens beside the text.
    runtime.db["fingerprints"].insert_one({"_id": "book/0005", "n": before["n"], "simhash": 1})
    masters.update_one(
        {"_id": "book/0005"},
        {"$set": {"tokens": b"\x01\x00"}, "$unset": {"simhash": "", "version": ""}},
    )
    assert library.rebuild_index() == len(CHAPTERS)
    after = masters.find_one({"_id": "book/0005"})
    assert after["version"] == VERSION and "tokens" not in after
    assert (after["simhash"], after["anchors"]) == (before["simhash"], before["anchors"])
    assert "fingerprints" not in runtime.db.list_collection_names()
    assert matched(library, CHAPTERS["book/0005"]) == ["book/0005"]


def test_readers_split_books_and_report_every_malformed_file_and_line(tmp_path: Path):
    book = tmp_path / "小说.txt"
    book.write_bytes("第一章 起\n甲乙丙丁。\n第二章 承\n戊己庚辛。\n".encode("gb18030"))
    docs = list(read_documents(book))
    assert [(d.doc_id, d.work, d.title) for d in docs] == [
        ("小说/1", "小说", "第一章 起"),
        ("小说/2", "小说", "第二章 承"),
    ]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "正文"}\n{"id": "b"\n{"id": "c", "text": "好"}\n')
    with pytest.raises(InputError, match=r"bad.jsonl:2: invalid JSON"):
        list(read_documents(bad))
    missing = tmp_path / "missing.jsonl"
    missing.write_text('{"id": "a2", "text": ""}\n', encoding="utf-8")
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\x00\x01\x02PK\x03\x04" * 100)
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    (tmp_path / "notes.md").write_text("# not a master file")
    (tmp_path / ".hidden.txt").write_text("第一章 隐\n不读。")
    reading = read_masters([tmp_path])
    # Every problem at once, with its file and line; the good documents kept.
    assert sorted(reading.problems) == sorted(
        [
            f"{bad}:2: invalid JSON (Expecting ',' delimiter)",
            f"{missing}:1: missing or empty field(s): text",
            f"{binary}: binary data (NUL or control bytes), not text",
            f"{empty}: empty text",
        ]
    ), reading.problems
    assert sorted(d.doc_id for d in reading.documents) == ["a", "c", "小说/1", "小说/2"]
    assert [p.name for p in reading.files] == ["bad.jsonl", "小说.txt"]
    assert [p.name for p in reading.skipped] == ["notes.md"]
    with pytest.raises(InputError, match="empty text"):
        list(read_documents(empty))


def test_cli_ingest_and_check_jsonl(cli_env, runtime, tmp_path, capsys):
    masters = tmp_path / "articles.jsonl"
    masters.write_text(
        "\n".join(
            json.dumps(
                {
                    "id": f"a{i}",
                    "work": "news",
                    "title": f"t{i}",
                    "text": prose(seed=50 + i, chars=600),
                },
                ensure_ascii=False,
            )
            for i in range(3)
        ),
        encoding="utf-8",
    )
    assert main(["ingest", str(masters)]) == 0
    assert "3 new" in capsys.readouterr().out
    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        "\n".join(
            [
                json.dumps({"id": "q1", "text": disguise.with_ads(prose(seed=51, chars=600))}),
                json.dumps({"id": "q2", "text": prose(seed=77, chars=600)}),
                # An escaped lone surrogate: valid for json, refused by orjson.
                json.dumps(
                    {"id": "q3", "text": "\ud800".join(prose(seed=52, chars=600).split("。"))}
                ),
                "not json",
            ]
        ),
        encoding="utf-8",
    )
    assert main(["check", "--jsonl", str(queries)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line.get("id") for line in lines] == ["q1", "q2", "q3", None]
    [hit] = lines[0]["matches"]
    assert (hit["doc_id"], hit["work"], hit["title"]) == ("a1", "news", "t1")
    assert set(hit) >= {"doc_id", "work", "title", "score", "coverage", "method", "spans"}
    assert hit["coverage"] > 0.9 and lines[1]["matches"] == []
    assert [m["doc_id"] for m in lines[2]["matches"]] == ["a2"]
    assert "error" in lines[3]


def test_console_script_check_prints_everything_before_its_quick_exit(library, cli_env, tmp_path):
    # The console script ends `tracker check` with os._exit: output must be flushed first.
    page = tmp_path / "page.txt"
    page.write_text(disguise.with_ads(CHAPTERS["book/0002"]), encoding="utf-8")
    code = "from tracker.cli import entry; entry()"
    done = subprocess.run(
        [sys.executable, "-c", code, "check", "--json", str(page)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stderr  # 1: a copy was found
    [match] = json.loads(done.stdout)["matches"]
    assert match["doc_id"] == "book/0002" and match["spans"]
    missing = subprocess.run(
        [sys.executable, "-c", code, "check", str(tmp_path / "nope.txt")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_cli_check_jsonl_in_worker_processes_keeps_input_order(cli_env, runtime, tmp_path, capfd):
    library = MasterLibrary.from_runtime(runtime)
    library.ingest(
        [MasterDocument(doc_id, "book", doc_id, text) for doc_id, text in CHAPTERS.items()]
    )
    ids = list(CHAPTERS)
    lines = []
    for i in range(150):  # several batches (JSONL_BATCH), over two workers
        if i == 70:
            lines.append("{not json")
        text = CHAPTERS[ids[i % len(ids)]] if i % 3 else prose(seed=900 + i, chars=300)
        lines.append(json.dumps({"id": i, "text": text}, ensure_ascii=False))
    queries = tmp_path / "many.jsonl"
    queries.write_text("\n".join(lines), encoding="utf-8")
    capfd.readouterr()
    assert main(["check", "--jsonl", str(queries), "--workers", "2"]) == 0
    out = [json.loads(line) for line in capfd.readouterr().out.splitlines()]
    assert [o.get("id") for o in out] == [*range(70), None, *range(70, 150)]
    for o in out:
        if o.get("id") is None:
            assert "error" in o and o["line"] == 71
            continue
        expected = [ids[o["id"] % len(ids)]] if o["id"] % 3 else []
        assert [m["doc_id"] for m in o["matches"]] == expected


def test_cli_reports_malformed_input_clearly(cli_env, tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{broken", encoding="utf-8")
    assert main(["ingest", str(bad)]) == 2
    assert "bad.jsonl:1: invalid JSON" in capsys.readouterr().err
    assert main(["ingest", str(tmp_path / "nope.txt")]) == 2


def test_short_news_masters_quotes_and_reposted_heads(runtime):
    library = MasterLibrary.from_runtime(runtime)
    article = prose(seed=500, chars=400).replace("\n", "")
    library.ingest([MasterDocument("news-1", "news", "短讯", article)])
    filler = prose(seed=501, chars=1500)
    # The whole short article reposted with a header, typos and noise is a copy...
    repost = "转载自网络，侵删\n" + disguise.punctuation_noise(disguise.typos(article, 0.1))
    assert [m.doc_id for m in library.detector().check(repost)] == ["news-1"]
    # ...as is a repost of its first 150 characters inside other text...
    found = library.detector().check(filler[:700] + article[:150] + filler[700:])
    assert [m.doc_id for m in found] == ["news-1"]
    assert found[0].spans and article[10:140] in found[0].spans[0]["text"]
    # ...but commentary quoting a sentence or two (a fifth of the article) is not.
    assert (
        library.detector().check(filler[:700] + "原文写道：" + article[100:160] + filler[700:])
        == []
    )
    # Nor is a text sharing a few short phrases with it.
    phrases = "".join(article[i : i + 20] + filler[i : i + 200] for i in (0, 150, 300))
    assert library.detector().check(phrases) == []


def test_master_cache_returns_every_master_asked_for_when_full():
    class Store:
        def __init__(self) -> None:
            self.asked: list[list[int]] = []

        def by_ns(self, ns):
            self.asked.append(list(ns))
            return {n: {"_id": f"m{n}", "text": prose(seed=n, chars=200)} for n in ns}

    store = Store()
    cache = MasterCache(store, size=2)  # type: ignore[arg-type]
    assert set(cache.get([1])) == {1}
    # 1 is cached and oldest: caching 2 and 3 must not push it out of this answer.
    got = cache.get([1, 2, 3])
    assert set(got) == {1, 2, 3} and got[1].meta["_id"] == "m1"
    assert store.asked == [[1], [2, 3]]
    assert set(cache.get([2, 3])) == {2, 3} and len(store.asked) == 2  # served from the cache


def test_masters_by_number_are_read_in_lists_of_id_batch():
    """SecantusDB matches each document a ``$in`` finds against the whole list: a check's
    batch of candidates is read in lists of ``ID_BATCH``, and every master asked for that
    exists is given, whichever list found it."""
    from tracker.batching import ID_BATCH
    from tracker.stores.masters import MasterStore

    class Masters:
        def __init__(self) -> None:
            self.lists: list[list[int]] = []

        def find(self, query: dict, projection: dict) -> list[dict]:
            wanted = query["n"]["$in"]
            self.lists.append(wanted)
            return [{"n": n, "unit_sketch": b"s%d" % n} for n in wanted if n % 7]

    masters = Masters()
    db = {"masters": masters, "counters": None, "library_journal": None, "library_changes": None}
    store = MasterStore(db)  # type: ignore[arg-type]
    ns = list(range(1, 2 * ID_BATCH + 12))
    for read in (store.by_ns, store.unit_sketches):
        masters.lists.clear()
        found = read(ns)
        assert sorted(found) == [n for n in ns if n % 7]
        assert all(found[n]["unit_sketch"] == b"s%d" % n for n in found)
        assert [len(chunk) for chunk in masters.lists] == [ID_BATCH, ID_BATCH, 11]
