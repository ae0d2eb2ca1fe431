"""A library that grows (issue 36): a chapter's id comes from its own heading, not from where
it stands in a file, so a book registered a few chapters a day adds up; nothing leaves the
library unsaid; and a library stored with positional ids is re-keyed by ``tracker index
migrate-ids``, its matches with it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import cn2an
import pytest

from tracker.cli import main
from tracker.matching.library import MasterLibrary
from tracker.matching.rematch import Rematcher
from tracker.model import MasterDocument
from tracker.scheduler.sources import DropFolder
from tracker.stores.id_migration import IdMigrationStore
from tracker.stores.pages import PageRecord, PageStore
from tracker.stores.sources import SourceCursorStore
from tracker.text.chapters import chapter_key, numeral_value, split_book

from . import disguise
from .texts import prose

BODIES = {n: prose(seed=3600 + n, chars=1500) for n in range(1, 9)}
REVISED_5 = prose(seed=3699, chars=1500)


def heading(n: int) -> str:
    """第六回-style headings, written out by cn2an (not by the code under test)."""
    return f"第{cn2an.an2cn(n)}回 回目{n}"


def book(numbers: range, revised: dict[int, str] | None = None) -> str:
    texts = {**BODIES, **(revised or {})}
    return "《西游记》\n\n" + "".join(f"{heading(n)}\n{texts[n]}\n\n" for n in numbers)


def three_files(folder: Path) -> list[Path]:
    """The issue's three files: 第一回–第五回, then 第六回–第八回, then 第五回 revised."""
    folder.mkdir(parents=True, exist_ok=True)
    files = [folder / "a.txt", folder / "b.txt", folder / "c.txt"]
    files[0].write_text(book(range(1, 6)), encoding="utf-8")
    files[1].write_text(book(range(6, 9)), encoding="utf-8")
    files[2].write_text(book(range(5, 6), {5: REVISED_5}), encoding="utf-8")
    return files


# ------------------------------------------------------------------------------- the keys


@pytest.mark.parametrize(
    ("title", "key"),
    [
        ("第六回 灵根育孕源流出", "6"),
        ("第12章 夜航", "12"),
        ("第 一百二十 回", "120"),
        ("第１２章", "12"),
        ("第三节", "节3"),
        ("卷二 · 第一章 序", "卷2.1"),
        ("第二卷 风云 · 第十章", "卷2.10"),
        ("楔子", "楔子"),
        ("番外 一", "番外一"),
        ("番外：初遇", "番外初遇"),
        ("前言", "前言"),
        ("阿Q正传 · 第一章 序", "阿Q正传.1"),
        ("三、研究方法", "3"),
        ("一篇 没有 编号/的文章.", "一篇没有编号／的文章．"),
    ],
)
def test_a_chapter_key_comes_from_its_own_heading(title, key):
    assert chapter_key(title) == key


NUMBERS = [*range(1, 130), 200, 305, 1000, 1001, 1010, 2024, 9999, 10000, 10086]


@pytest.mark.parametrize("n", NUMBERS)
def test_chapter_numbers_read_as_another_tool_writes_them(n):
    assert numeral_value(cn2an.an2cn(n)) == n  # 一百零五, 一千零一十…
    assert numeral_value(cn2an.an2cn(n, "up")) == n  # 壹佰零伍
    assert numeral_value(str(n)) == n


def test_volumes_that_number_again_do_not_collide_and_a_key_twice_is_named():
    text = "".join(
        f"卷{v}\n第{c}章 标题\n{prose(seed=v * 10 + c, chars=300)}\n"
        for v in "一二"
        for c in "一二"
    )
    found = split_book(text)
    assert [c.key for c in found.chapters] == ["卷1.1", "卷1.2", "卷2.1", "卷2.2"]
    assert found.warnings == []

    note = "作者的话：" + "今天更新三章，谢谢大家的支持。" * 6
    update = split_book(f"《西游记》\n{note}\n{heading(6)}\n{BODIES[6]}\n")
    assert [c.key for c in update.chapters] == ["6.前言", "6"]  # not the book's 前言
    whole = split_book(f"《西游记》\n{note}\n{heading(1)}\n{BODIES[1]}\n")
    assert [c.key for c in whole.chapters] == ["前言", "1"]
    volume = split_book(f"{note}\n卷二\n第一章\n{BODIES[1]}\n")
    assert [c.key for c in volume.chapters] == ["卷2.前言", "卷2.1"]

    twice = split_book(f"第一章 甲\n{BODIES[1]}\n第二章 乙\n{BODIES[2]}\n第二章 丙\n{BODIES[3]}\n")
    assert [c.key for c in twice.chapters] == ["1", "2", "2~2"]  # nothing of the file lost
    [warning] = twice.warnings
    assert "第二章 乙" in warning and "第二章 丙" in warning and "'2~2'" in warning


# ------------------------------------------------------------------------ ingest, by CLI


def ingest(*args: str, capsys) -> tuple[int, str, str]:
    code = main(["ingest", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.integration
def test_new_chapters_add_and_only_new_text_replaces(cli_env, runtime, tmp_path, capsys):
    a, b, c = three_files(tmp_path / "files")
    code, out, _ = ingest(str(a), capsys=capsys)
    assert code == 0 and "5 new, 0 replaced" in out
    code, out, _ = ingest(str(b), capsys=capsys)
    assert code == 0 and "3 new, 0 replaced" in out
    code, out, _ = ingest(str(c), capsys=capsys)
    assert code == 0 and "0 new, 1 replaced" in out
    assert "replaced 1 document(s) with new text: 西游记/5" in out
    code, out, _ = ingest(str(a), capsys=capsys)  # the first file again: 5 is its old text
    assert "0 new, 1 replaced, 4 unchanged" in out

    ids = sorted(runtime.db["masters"].distinct("_id"))
    assert ids == [f"西游记/{n}" for n in range(1, 9)]
    assert main(["index", "list", "--work", "西游记"]) == 0
    listing = capsys.readouterr().out
    assert "chapters 1–8 held; no gaps" in listing
    assert listing.index("西游记/2 ") < listing.index("西游记/8 ")

    copy = tmp_path / "copy.txt"
    copy.write_text(disguise.with_ads(BODIES[3]), encoding="utf-8")
    assert main(["check", "--json", str(copy)]) == 1  # found: exit 1
    assert [m["doc_id"] for m in json.loads(capsys.readouterr().out)["matches"]] == ["西游记/3"]

    # 第五回 was replaced twice: both former texts are kept, the newest first.
    assert main(["index", "restore-deleted", "西游记/5"]) == 0
    assert "restored 1 document(s): 西游记/5" in capsys.readouterr().out
    stored = runtime.db["masters"].find_one({"_id": "西游记/5"})
    assert stored["text"] == REVISED_5


@pytest.mark.integration
def test_a_retitled_chapter_is_named_and_replace_work_says_what_it_removed(
    cli_env, runtime, tmp_path, capsys
):
    a, b, _ = three_files(tmp_path / "files")
    ingest(str(a), capsys=capsys)
    retitled = tmp_path / "retitled.txt"
    retitled.write_text(book(range(2, 3)).replace("回目2", "新的回目"), encoding="utf-8")
    code, out, err = ingest(str(retitled), capsys=capsys)
    assert code == 0 and "1 replaced" in out
    assert "西游记/2: the title changed" in err and "回目2" in err and "新的回目" in err

    code, out, _ = ingest("--replace-work", str(b), capsys=capsys)
    assert code == 0 and "3 new" in out
    assert "deleted 5 document(s) the new files do not hold (--replace-work)" in out
    assert "西游记/1" in out and "kept for 30 days" in out
    assert sorted(runtime.db["masters"].distinct("_id")) == [f"西游记/{n}" for n in (6, 7, 8)]
    assert main(["index", "list", "--work", "西游记"]) == 0
    assert "chapters 6–8 held; no gaps" in capsys.readouterr().out

    assert main(["index", "delete", "西游记/7"]) == 0
    out = capsys.readouterr().out
    assert "deleted 1 document(s): 西游记/7; kept for 30 days" in out
    assert main(["index", "list", "--work", "西游记"]) == 0
    assert "chapters 6, 8 held; missing 7" in capsys.readouterr().out
    assert main(["index", "restore-deleted", "--work", "西游记"]) == 0
    assert "restored 6 document(s)" in capsys.readouterr().out
    assert sorted(runtime.db["masters"].distinct("_id")) == [f"西游记/{n}" for n in range(1, 9)]
    assert main(["index", "restore-deleted", "西游记/7"]) == 1  # restored already: none kept
    assert main(["index", "verify"]) == 0


@pytest.mark.integration
def test_the_scheduler_pull_of_the_three_files_does_the_same(runtime, tmp_path):
    inbox = tmp_path / "inbox"
    three_files(inbox)
    library, cursors = MasterLibrary.from_runtime(runtime), SourceCursorStore(runtime.db)
    pulled = DropFolder(inbox).pull(library, cursors, batch_size=200)
    assert (pulled.files, pulled.added, pulled.replaced) == (3, 8, 1)
    assert sorted(runtime.db["masters"].distinct("_id")) == [f"西游记/{n}" for n in range(1, 9)]
    found = library.detector().check(disguise.with_ads(BODIES[3]))
    assert [m.doc_id for m in found] == ["西游记/3"]


def test_ingest_help_says_how_chapter_ids_are_made():
    done = subprocess.run(
        [sys.executable, "-m", "tracker.cli", "ingest", "--help"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "COLUMNS": "100"},
    )
    flat = " ".join(done.stdout.split())
    assert "第六回 -> WORK/6" in flat and "卷二 第一章 -> WORK/卷2.1" in flat
    assert "--replace-work" in flat and "restore-deleted" in flat


# ------------------------------------------------------------------------------ migration


def positional_library(runtime) -> tuple[MasterLibrary, list[MasterDocument]]:
    """A library as the tracker stored it before: chapters by position (a.txt's 第一回–第五回,
    then b.txt's 第六回–第八回 over the first three), and a .jsonl record whose id looks
    positional but is the rights holder's own."""
    docs = [
        MasterDocument(f"西游记/{i:04d}", "西游记", heading(n), BODIES[n], "b.txt")
        for i, n in ((1, 6), (2, 7), (3, 8))
    ] + [
        MasterDocument(f"西游记/{n:04d}", "西游记", heading(n), BODIES[n], "a.txt") for n in (4, 5)
    ]
    docs.append(MasterDocument("新闻/0001", "新闻", "第九回", prose(seed=3650), "n.jsonl:1"))
    library = MasterLibrary.from_runtime(runtime)
    library.ingest(docs)
    return library, docs


@pytest.mark.integration
def test_migrate_ids_rekeys_masters_and_every_match_still_names_its_chapter(
    cli_env, runtime, capsys
):
    library, docs = positional_library(runtime)
    pages = PageStore(runtime.db)
    copies = {
        f"http://pirate.example/{doc.doc_id}.html": doc for doc in docs if doc.work == "西游记"
    }
    pages.save_many(
        [PageRecord(url=url, text=disguise.with_ads(doc.text)) for url, doc in copies.items()]
    )
    rematcher = Rematcher(runtime, library)
    rematcher.verify_page_index()
    rematcher.run()
    detector = library.detector()  # a running checker: it caches masters by number
    assert [m.doc_id for m in detector.check(docs[0].text)] == ["西游记/0001"]
    before = {m["url"]: m["doc_id"] for m in runtime.db["matches"].find()}
    assert before == {url: doc.doc_id for url, doc in copies.items()}

    # A run cut short: the plan stored and one rename done.
    store = IdMigrationStore(runtime.db)
    from tracker.matching.migrate_ids import plan

    planned = plan(store)
    assert ("新闻/0001", "新闻/9") not in planned  # a .jsonl record's id is its own
    assert dict(planned)["西游记/0001"] == "西游记/6"
    store.add_plan(planned)
    store.rename(planned[:1])

    assert main(["index", "migrate-ids"]) == 0
    out = capsys.readouterr().out
    assert "re-keyed 4 master(s)" in out and "(4 left by a run cut short)" in out
    assert "1 re-keyed by earlier runs" in out and "西游记/0002 -> 西游记/7" in out
    ids = sorted(runtime.db["masters"].distinct("_id"))
    assert ids == ["新闻/0001", *(f"西游记/{n}" for n in range(4, 9))]
    numbers = {doc["_id"]: doc["n"] for doc in runtime.db["masters"].find({}, {"n": 1})}
    assert len(set(numbers.values())) == 6  # one master per number: the index is still true

    chapter_of = {doc.doc_id: f"西游记/{chapter_key(doc.title)}" for doc in docs}
    after = {m["url"]: m["doc_id"] for m in runtime.db["matches"].find()}
    assert after == {url: chapter_of[doc_id] for url, doc_id in before.items()}
    for page in runtime.db["pages"].find({}, {"matched_doc_ids": 1}):
        assert page["matched_doc_ids"] == [after[page["_id"]]]
    for doc in docs[:5]:  # the detector names the re-keyed chapter
        assert [m.doc_id for m in detector.check(doc.text)] == [chapter_of[doc.doc_id]]
    assert Rematcher(runtime, library).run().new_doc_ids == []  # nothing to find again

    assert main(["index", "migrate-ids"]) == 0  # idempotent
    assert "nothing left to re-key" in capsys.readouterr().out
    assert main(["index", "verify"]) == 0
    assert "the index agrees with MongoDB" in capsys.readouterr().out
    assert main(["report", "--format", "json"]) == 0
    reported = json.loads(capsys.readouterr().out)
    assert {d for p in reported["pages"] for d in p["doc_ids"]} == set(after.values())
