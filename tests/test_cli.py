"""The command line as a newcomer meets it (issue 13): every mistake ends in one line
``tracker: error: …`` with exit status 2 and nothing stored; ``check`` exits like a scanner;
``ingest`` reports every problem at once. Each runs the real CLI in its own process, on the
session's servers."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tracker.cli import main
from tracker.crawling.commands.crawl import summary
from tracker.index.storage import RedisStorage
from tracker.matching.library import MasterLibrary
from tracker.model import MasterDocument
from tracker.reading.readers import Input, input_text
from tracker.servers.connect import SERVER_TIMEOUT_S

from .texts import prose

PROJECT = Path(__file__).resolve().parents[1]
CHAPTER = prose(seed=31, chars=2400)
LONG_ID = "a-work-with-a-rather-long-name/0001"


def tracker(
    env: dict[str, str], *args: str, stdin: bytes | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tracker.cli", *args],
        env=env,
        input=stdin,
        capture_output=True,
        timeout=120,
        check=False,
        cwd=env["HOME"],
    )


def one_error(done: subprocess.CompletedProcess, *words: str) -> str:
    """The process failed with exit status 2 and said so in one line naming ``words``."""
    err = done.stderr.decode()
    assert done.returncode == 2, (done.returncode, err, done.stdout.decode()[-500:])
    assert "Traceback" not in err
    [line] = err.strip().splitlines()
    assert line.startswith("tracker: error: ")
    for word in words:
        assert word in line, line
    return line


@pytest.fixture()
def env(settings, tmp_path) -> dict[str, str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TRACKER_")}
    environment.update(
        MONGO_URL=settings.mongo_url,
        REDIS_URL=settings.redis_url,
        TRACKER_MONGO_DB=settings.mongo_db,
        TRACKER_REDIS_PREFIX=settings.redis_prefix,
        TRACKER_DATA_DIR=str(settings.data_dir),
        HOME=str(tmp_path),  # no ./tracker.toml, no user cache surprises
        COLUMNS="80",
        TRACKER_CHECK_WARM_S="0",  # each check in its own process (see the warm-check test)
    )
    return environment


@pytest.fixture()
def library(runtime) -> MasterLibrary:
    library = MasterLibrary.from_runtime(runtime)
    library.ingest([MasterDocument(LONG_ID, "a-work-with-a-rather-long-name", "第一章", CHAPTER)])
    return library


def stored(runtime) -> tuple[int, int]:
    """Masters in MongoDB, and index keys in Redis, of the test's database and prefix."""
    keys = sum(1 for _ in runtime.redis.scan_iter(match=runtime.settings.redis_prefix + "*"))
    return runtime.db["masters"].count_documents({}), keys


# ------------------------------------------------------------------------ a local web server


PAGES: dict[str, tuple[int, str, bytes]] = {
    "/missing": (404, "text/html", b"<h1>Not Found</h1>"),
    "/chapter.txt": (200, "text/plain; charset=gbk", CHAPTER.encode("gbk")),
    "/chapter.html": (
        200,
        "text/html; charset=utf-8",
        f"<html><body><article><h1>第一章</h1><p>{CHAPTER}</p></article></body></html>".encode(),
    ),
    "/big.txt": (200, "text/plain; charset=utf-8", "正文".encode() * 400_000),  # 2.4 MB
    "/image.png": (200, "image/png", b"\x89PNG\r\n\x1a\n" + bytes(2000)),
    "/feed.xml": (
        200,
        "application/rss+xml",
        b'<?xml version="1.0"?><rss version="2.0"><channel><title>t</title></channel></rss>',
    ),
    "/to-file": (302, "file:///etc/passwd", b""),
    # A full-text feed in GB2312 declared only in its prolog: one item copies the chapter.
    "/news.xml": (
        200,
        "application/rss+xml",
        (
            '<?xml version="1.0" encoding="gb2312"?><rss version="2.0" '
            'xmlns:content="http://purl.org/rss/1.0/modules/content/"><channel><title>新闻</title>'
            "<item><title>转载</title><link>/a/1.html</link><content:encoded><![CDATA[<p>"
            + CHAPTER
            + "</p>]]></content:encoded></item><item><title>闲话</title><link>/a/2.html</link>"
            "<description>&lt;p&gt;" + prose(seed=77, chars=800) + "&lt;/p&gt;</description>"
            "</item></channel></rss>"
        ).encode("gb18030"),
    ),
}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        status, kind, body = PAGES[self.path]
        self.send_response(status)
        if status == 302:
            self.send_header("Location", kind)
        else:
            self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def web() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


# ------------------------------------------------------------------------------------- check


def test_check_exits_1_on_a_copy_0_on_none_and_prints_whole_ids(env, library, tmp_path):
    copy = tmp_path / "copy.txt"
    copy.write_text("转载：\n" + CHAPTER[200:2200], encoding="utf-8")
    found = tracker(env, "check", str(copy))
    assert found.returncode == 1, found.stderr.decode()
    table = found.stdout.decode()
    assert LONG_ID in table  # an 80-column table wraps other cells, never cuts the id
    wide = tracker(env, "check", "--wide", str(copy))
    assert wide.returncode == 1 and LONG_ID in wide.stdout.decode()
    innocent = tmp_path / "innocent.txt"
    innocent.write_text(prose(seed=99, chars=1500), encoding="utf-8")
    none = tracker(env, "check", "--json", str(innocent))
    assert none.returncode == 0 and json.loads(none.stdout) == {"matches": []}


def test_standard_input_is_decoded_like_a_file(env, library):
    gb18030 = CHAPTER[:1500].encode("gb18030")
    piped = tracker(env, "check", "--json", "-", stdin=gb18030)
    assert piped.returncode == 1, piped.stderr.decode()
    assert [m["doc_id"] for m in json.loads(piped.stdout)["matches"]] == [LONG_ID]
    with open(sys.executable, "rb") as fh:
        binary = fh.read(200_000)
    one_error(tracker(env, "check", "-", stdin=binary), "standard input", "binary")


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("empty.txt", ("empty.txt: empty text",)),
        ("nope.txt", ("nope.txt: no such file",)),
        (".", ("is a directory",)),
        ("file:///etc/passwd", ("file:// URLs are not fetched",)),
        ("ftp://127.0.0.1/x.txt", ("unsupported URL scheme ftp",)),
        ("{web}/missing", ("{web}/missing: HTTP 404",)),
        ("http://127.0.0.1:1/page", ("http://127.0.0.1:1/page: cannot fetch it",)),
        ("{web}/image.png", ("content type image/png is not text",)),
        ("{web}/feed.xml", ("a feed without any item text",)),
        ("{web}/to-file", ("file:///etc/passwd", "not allowed")),
        ("{web}/big.txt", ("larger than the input limit of 1 MiB", "--max-mb")),
    ],
)
def test_check_input_errors_are_one_line_and_start_no_server(env, web, tmp_path, source, words):
    (tmp_path / "empty.txt").write_bytes(b"")
    # A server that does not answer: an input error is found before any server is reached.
    env = {**env, "MONGO_URL": "mongodb://127.0.0.1:1/x", "REDIS_URL": "redis://127.0.0.1:1/0"}
    done = tracker(env, "check", "--max-mb", "1", source.format(web=web))
    one_error(done, *(word.format(web=web) for word in words))


def test_check_of_a_feed_checks_each_item(env, library, web):
    done = tracker(env, "check", "--json", web + "/news.xml")
    assert done.returncode == 1, done.stderr.decode()
    items = json.loads(done.stdout)["items"]
    assert [(i["id"], [m["doc_id"] for m in i["matches"]]) for i in items] == [
        (web + "/a/1.html", [LONG_ID]),
        (web + "/a/2.html", []),
    ]
    table = tracker(env, "check", web + "/news.xml").stdout.decode()
    assert web + "/a/1.html" in table and "no match in the master library" in table


def test_a_warm_check_answers_as_the_first_did(env, library, settings, tmp_path):
    """The first check leaves a warm checker; later ones (files, standard input, errors) get
    the same output and exit status from it, and it leaves when stopped."""
    from tracker.cli import _warm

    env = {**env, "TRACKER_CHECK_WARM_S": "60"}
    page = tmp_path / "page.txt"
    page.write_text(CHAPTER, encoding="utf-8")
    first = tracker(env, "check", "--json", str(page))
    assert first.returncode == 1
    warm_settings = replace(settings, check_warm_s=60)
    path = _warm.socket_path(warm_settings)
    deadline = time.monotonic() + 60
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert path.exists(), "no warm checker was left"
    try:
        again = tracker(env, "check", "--json", str(page))
        assert (again.returncode, again.stdout) == (1, first.stdout)
        piped = tracker(env, "check", "--json", "-", stdin=CHAPTER.encode("gb18030"))
        assert (piped.returncode, piped.stdout) == (1, first.stdout)
        one_error(tracker(env, "check", "nope.txt"), "nope.txt: no such file")
        innocent = tracker(env, "check", "-", stdin=prose(seed=5, chars=900).encode())
        assert innocent.returncode == 0
        assert innocent.stdout.decode().strip() == "no match in the master library"
        library.delete(LONG_ID)  # the library empties while the checker runs: it notices
        emptied = tracker(env, "check", "--json", str(page))
        one_error(emptied, "master library is empty", "tracker ingest")
        assert emptied.stdout == b""
    finally:
        assert _warm.stop_all(warm_settings) == 1
    deadline = time.monotonic() + 30
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not path.exists()


def test_a_check_against_an_empty_library_is_an_error_not_a_clean_text(env, runtime, tmp_path):
    """With no master, "no match" would call any text clean: a single check and --jsonl say the
    library is empty on standard error, print nothing and exit 2 (no check was possible)."""
    page = tmp_path / "page.txt"
    page.write_text(CHAPTER, encoding="utf-8")
    for args in (["check", str(page)], ["check", "--json", str(page)]):
        done = tracker(env, *args)
        one_error(done, "master library is empty", "tracker ingest")
        assert done.stdout == b""
    lines = tmp_path / "pages.jsonl"
    lines.write_text(json.dumps({"id": "p1", "text": CHAPTER}) + "\n", encoding="utf-8")
    done = tracker(env, "check", "--jsonl", str(lines))
    one_error(done, "master library is empty")
    assert done.stdout == b""
    # a bad input is still refused first, by name, before the servers are asked anything
    one_error(tracker(env, "check", str(tmp_path / "nope.txt")), "nope.txt: no such file")


def test_check_urls_plain_text_as_text_html_through_the_extractor(env, library, web):
    for path in ("/chapter.txt", "/chapter.html"):
        done = tracker(env, "check", "--json", web + path)
        assert done.returncode == 1, (path, done.stderr.decode())
        assert [m["doc_id"] for m in json.loads(done.stdout)["matches"]] == [LONG_ID]
    # Markup in a plain-text body is text, not run through the HTML extractor.
    plain = Input("x.txt", b"<p>first</p>\n<b>second</b>", "text/plain")
    assert input_text(plain) == "<p>first</p>\n<b>second</b>"


def test_check_jsonl_keeps_ids_on_error_lines_and_reports_invalid_utf8(env, library, tmp_path):
    lines = [
        json.dumps({"id": "ok", "text": CHAPTER[:1200]}, ensure_ascii=False).encode(),
        json.dumps({"id": "no-text"}).encode(),
        b'{"id": "bad-bytes", "text": "\xff\xfe abc"}',
        b"{not json",
        json.dumps({"id": "blank", "text": "  "}).encode(),
    ]
    path = tmp_path / "pages.jsonl"
    path.write_bytes(b"\n".join(lines))
    done = tracker(env, "check", "--jsonl", str(path))
    assert done.returncode == 0, done.stderr.decode()
    out = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert [o["id"] for o in out] == ["ok", "no-text", "bad-bytes", None, "blank"]
    assert [m["doc_id"] for m in out[0]["matches"]] == [LONG_ID]
    assert out[1]["error"] == "expected a string 'text'" and out[1]["line"] == 2
    assert out[2]["error"].startswith("invalid UTF-8 at byte")
    assert out[3]["error"].startswith("invalid JSON") and out[4]["error"] == "empty text"
    assert "4 line(s) not checked" in done.stderr.decode()
    one_error(tracker(env, "check", "--jsonl", str(tmp_path / "none.jsonl")), "no such file")


# ------------------------------------------------------------------------- servers and config


def test_an_unreachable_mongodb_is_named_with_its_password_masked(env, tmp_path):
    page = tmp_path / "page.txt"
    page.write_text(CHAPTER, encoding="utf-8")
    started = time.monotonic()
    done = tracker({**env, "MONGO_URL": "mongodb://user:secret@127.0.0.1:1/x"}, "check", str(page))
    elapsed = time.monotonic() - started
    line = one_error(done, "MongoDB at mongodb://user:***@127.0.0.1:1/x", "MONGO_URL")
    assert "secret" not in line and f"no answer within {SERVER_TIMEOUT_S:g} s" in line
    assert elapsed < 3 * SERVER_TIMEOUT_S  # pymongo alone would wait 30 s, the runtime 10 s


@pytest.mark.parametrize(
    ("variables", "args", "words"),
    [
        ({"MONGO_URL": "notaurl"}, ("index", "stats"), ("mongo_url (MONGO_URL)", "mongodb://")),
        (
            {"REDIS_URL": "redis://:pw@127.0.0.1:1/0"},
            ("index", "stats"),
            ("Redis at redis://:***@",),
        ),
        ({"TRACKER_MIN_COVERAGE": "lots"}, ("index", "list"), ("TRACKER_MIN_COVERAGE",)),
        (
            {"TRACKER_CONFIG": "/nowhere/tracker.toml"},
            ("index", "list"),
            ("config file not found",),
        ),
        ({}, ("report", "--date", "2026-02-30"), ("invalid date '2026-02-30'",)),
        ({"MONGO_URL": "mongodb://127.0.0.1:1/x"}, ("report",), ("MongoDB at", "no answer")),
        ({}, ("chek", "x.txt"), ("invalid choice: 'chek'",)),
        (
            {"TRACKER_BATCH_SIZE": "0"},
            ("index", "list"),
            ("batch_size (TRACKER_BATCH_SIZE)", "at least 1"),
        ),
        ({"TRACKER_BATCH_SIZ": "32"}, ("index", "list"), ("did you mean TRACKER_BATCH_SIZE",)),
    ],
)
def test_misconfiguration_is_one_line(env, variables, args, words):
    one_error(tracker({**env, **variables}, *args), *words)


def test_check_with_an_unreachable_redis_is_one_line(env, library, tmp_path):
    page = tmp_path / "page.txt"
    page.write_text(CHAPTER, encoding="utf-8")
    done = tracker({**env, "REDIS_URL": "redis://127.0.0.1:1/0"}, "check", str(page))
    one_error(done, "Redis at redis://127.0.0.1:1/0", "REDIS_URL")


def test_ingest_with_an_unreachable_redis_stores_nothing(env, runtime, tmp_path):
    book = tmp_path / "book.txt"
    book.write_text(f"第一章 起\n{CHAPTER}\n", encoding="utf-8")
    done = tracker({**env, "REDIS_URL": "redis://127.0.0.1:1/0"}, "ingest", str(book))
    one_error(done, "Redis at redis://127.0.0.1:1/0")
    assert stored(runtime) == (0, 0)


# -------------------------------------------------------------------------------------- ingest


def test_ingest_reports_every_bad_line_and_keeps_the_good_ones(env, runtime, tmp_path):
    records = [
        json.dumps({"id": f"n{i}", "text": prose(seed=200 + i, chars=500)}, ensure_ascii=False)
        for i in range(5)
    ]
    records[2] = '{"id": "n2", "text": '  # line 3: cut short
    records[4] = '{"id": "n4"}'  # line 5: no text
    path = tmp_path / "news.jsonl"
    path.write_text("\n".join(records), encoding="utf-8")
    strict = tracker(env, "ingest", "--strict", str(path))
    assert strict.returncode == 2 and stored(runtime) == (0, 0)
    done = tracker(env, "ingest", str(path))
    err = done.stderr.decode()
    assert done.returncode == 1, err
    assert f"tracker: error: {path}:3: invalid JSON" in err
    assert f"tracker: error: {path}:5: missing or empty field(s): text" in err
    assert "3 new" in done.stdout.decode()
    assert sorted(runtime.db["masters"].distinct("_id")) == ["n0", "n1", "n3"]


def test_ingest_of_a_directory_goes_past_an_empty_file_and_names_what_it_skipped(
    env, runtime, tmp_path
):
    folder = tmp_path / "books"
    folder.mkdir()
    (folder / "a-empty.txt").write_bytes(b"")
    (folder / "b.txt").write_text(f"《真名》\n第一章 起\n{CHAPTER}\n第二章 承\n{CHAPTER}\n")
    (folder / "notes.md").write_text("# notes")
    (folder / "more.json").write_text("{}")
    done = tracker(env, "ingest", str(folder))
    err = done.stderr.decode()
    assert done.returncode == 1, err
    assert "a-empty.txt: empty text" in err
    assert "skipped 2 unsupported file(s) (.json, .md" in err and "notes.md" in err
    # The work is named by the book's title line, not the file name.
    assert sorted(runtime.db["masters"].distinct("_id")) == ["真名/1", "真名/2"]
    listed = tracker(env, "index", "list")
    assert listed.returncode == 0 and "真名" in listed.stdout.decode()
    chapters = tracker(env, "index", "list", "--work", "真名").stdout.decode()
    assert "真名/1" in chapters and "第二章 承" in chapters
    renamed = tracker(env, "ingest", "--work", "别名", str(folder / "b.txt"))
    assert renamed.returncode == 0 and "别名/2" in runtime.db["masters"].distinct("_id")


def test_ingest_of_nothing_ingestible_is_one_line(env, tmp_path):
    (tmp_path / "only.md").write_text("# nothing")
    one_error(tracker(env, "ingest", str(tmp_path)), "no .txt or .jsonl files", "only.md")
    one_error(tracker(env, "ingest", str(tmp_path / "only.md")), "unsupported file type")


# ----------------------------------------------------------------------------- scrapy crawl


@pytest.mark.parametrize(
    ("variables", "args", "words"),
    [
        ({}, ("novel",), "give a start page"),
        (
            {},
            ("novel", "-a", "start_url=http://127.0.0.1:1/", "-a", "max_pages=many"),
            "max_pages",
        ),
        ({}, ("nosuch",), "no spider named 'nosuch'"),
        ({"TRACKER_PROXY_BAN_SECONDS": "soon"}, ("novel",), "proxy_ban_seconds"),
        ({}, ("novel", "-s", "TRACKER_BATCH_SIZE=0"), "-s TRACKER_BATCH_SIZE: setting"),
    ],
)
def test_scrapy_crawl_argument_errors_are_one_line(env, variables, args, words):
    done = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", *args],
        env={**env, **variables},
        cwd=PROJECT,
        capture_output=True,
        timeout=120,
        check=False,
    )
    err = done.stderr.decode()
    assert done.returncode == 2 and "Traceback" not in err
    [line] = err.strip().splitlines()
    assert line.startswith("scrapy crawl: error: ") and words in line


@pytest.mark.parametrize("args", [("--help",), ("check", "--help")])
def test_help_loads_no_web_stack(args):
    """Only ``serve`` and ``user`` load the web console (a command's --help builds every
    command's parser): the process's modules once the help is printed."""
    code = (
        "import sys\nfrom tracker.cli import main\ntry:\n    main(sys.argv[1:])\n"
        "except SystemExit:\n    pass\nprint(' '.join(sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, timeout=60, check=True
    )
    assert b"usage: tracker" in done.stdout
    modules = done.stderr.decode().split()
    assert "tracker.cli.check" in modules
    web = [name for name in modules if name.split(".")[0] in ("fastapi", "starlette", "uvicorn")]
    assert not web, web


def test_every_command_and_action_has_a_help_text():
    """Each command has a description; the actions of index and services and the jobs of
    run-job have a line each."""
    from tracker.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in commands.choices.items():
        assert command.description, f"tracker {name} --help has no description"
    for name, listed in (
        ("index", ("list", "stats", "verify", "rebuild", "delete")),
        ("services", ("status", "start", "stop", "check")),
        ("run-job", ("pull", "rematch", "report", "crawl:SITE")),
    ):
        text = commands.choices[name].format_help()
        for action in listed:
            assert re.search(rf"^  {re.escape(action)}  +\S", text, re.M), (name, action)


def test_the_end_of_crawl_summary_is_short_and_says_where_the_report_is():
    stats = {
        "finish_reason": "finished",
        "response_received_count": 120,
        "tracker/pages_stored": 100,
        "tracker/pages_matched": 40,
        "tracker/matches_new": 35,
        "tracker/errors": 4,
        "tracker/errors/http_404": 3,
        "tracker/errors/timeout": 1,
        "tracker/degraded": 2,
        # how each URL fetched ended (tracker.crawling.outcomes)
        "tracker/urls/fetched": 120,
        "tracker/urls/stored": 100,
        "tracker/urls/unread": 1,
        "tracker/urls/unread/timeout": 1,
        "tracker/urls/skipped": 19,
        "tracker/urls/skipped/list_page": 16,
        "tracker/urls/skipped/http_404": 3,
    }
    lines = summary("novel", stats).splitlines()
    assert lines[0].startswith("crawl novel: finished; 120 pages fetched, 100 stored")
    assert "40 matched (35 new matches)" in lines[0]
    assert lines[1] == "errors: http_404 3, timeout 1"
    assert lines[2] == (
        "URLs: 120 URLs fetched = 100 stored + 0 unchanged + 1 unread (timeout 1) "
        "+ 19 skipped (http_404 3, list_page 16)"
    )
    assert lines[3].startswith("status: degraded, 2 page(s)") and "tracker rematch" in lines[3]
    assert lines[4].startswith("report: tracker report --date ")
    # URLs that did not end one way are said to be unaccounted.
    stats["tracker/urls/fetched"] = 122
    assert summary("novel", stats).splitlines()[2].endswith("; UNACCOUNTED: 2")
    # Pages it could not read get a line of their own, by reason.
    stats.update({"tracker/unread": 3, "tracker/unread/challenge": 2, "tracker/unread/banned": 1})
    lines = summary("novel", stats).splitlines()
    assert lines[3] == (
        "unread: 3 page(s) (banned 1, challenge 2), never counted as clean; "
        "the next crawl asks for them again"
    )


# --------------------------------------------------------------------------------------- demo


def test_the_demo_says_which_database_it_used_and_how_to_look_at_it(
    cli_env, settings, runtime, monkeypatch, capsys, caplog
):
    """Fresh library or not, the demo keeps to a database and key prefix of its own, and says
    how to look at them (see also tests/test_first_day.py)."""
    import tracker.crawling.crawl

    monkeypatch.setattr(tracker.crawling.crawl, "run_crawl", lambda *args, **kwargs: 1)  # no crawl
    demo_db, demo_prefix = f"{settings.mongo_db}_demo", f"{settings.redis_prefix[:-1]}-demo:"
    try:
        assert main(["demo"]) == 1
        out = capsys.readouterr().out
        assert f"the demo uses its own database {demo_db} and Redis keys {demo_prefix}*" in out
        assert "`tracker serve --demo`" in out and "`tracker report --demo`" in out
        with caplog.at_level("WARNING", logger="tracker"):
            assert main(["demo"]) == 1  # again: a fresh demo library, nothing to repair
        assert "(the previous demo's data replaced)" in capsys.readouterr().out
        assert not [r for r in caplog.records if "disagrees" in r.getMessage()]
        assert main(["index", "list"]) == 0  # the user's library: empty, as it was
        assert "is empty" in capsys.readouterr().out

        MasterLibrary.from_runtime(runtime).ingest(
            [MasterDocument("mine/1", "mine", "一", CHAPTER)]
        )
        version = MasterLibrary.from_runtime(runtime).store.version()
        assert main(["demo"]) == 1
        assert MasterLibrary.from_runtime(runtime).store.version() == version  # left alone
        assert main(["report", "--demo", "--format", "json"]) == 0
        capsys.readouterr()
        monkeypatch.setenv("TRACKER_MONGO_DB", demo_db)
        monkeypatch.setenv("TRACKER_REDIS_PREFIX", demo_prefix)
        assert main(["index", "list"]) == 0
        listed = capsys.readouterr().out
        assert "红楼梦" in listed and "mine" not in listed
    finally:
        runtime.mongo.drop_database(demo_db)
        RedisStorage(runtime.redis, demo_prefix).clear()


def test_a_long_check_shows_its_progress_on_a_terminal_only(env, library, tmp_path):
    import pty

    book = tmp_path / "book.txt"
    book.write_text("\n".join([CHAPTER] + [prose(seed=s, chars=3000) for s in range(300)]))
    assert book.stat().st_size > 2 << 20  # checked in process, in segments
    primary, secondary = pty.openpty()
    done = subprocess.run(
        [sys.executable, "-m", "tracker.cli", "check", str(book)],
        env={**env, "COLUMNS": "100"},
        stdout=subprocess.PIPE,
        stderr=secondary,
        timeout=300,
        cwd=env["HOME"],
    )
    os.close(secondary)
    seen = b""
    with contextlib.suppress(OSError):
        while chunk := os.read(primary, 65536):
            seen += chunk
    os.close(primary)
    assert done.returncode == 1 and LONG_ID in done.stdout.decode()
    assert b"checking" in seen  # the bar, drawn on the terminal
    piped = tracker(env, "check", str(book))  # standard error not a terminal: no bar
    assert piped.returncode == 1 and b"checking" not in piped.stderr


# ------------------------------------------------------------- reports, jobs and the servers


def seen_page(runtime, url: str, doc_id: str, fingerprint: int, when) -> None:
    from tracker.fingerprints.document import to_signed
    from tracker.stores.pages import MatchStore, PageRecord, PageStore

    PageStore(runtime.db).save(
        PageRecord(url=url, text=url, title="盗版", simhash=to_signed(fingerprint)), now=when
    )
    evidence = {"page_start": 0, "page_end": 9, "master_start": 0, "master_end": 9, "text": "正文"}
    match = {"doc_id": doc_id, "work": "书", "title": doc_id, "score": 0.9, "coverage": 0.8}
    MatchStore(runtime.db).record(url, [{**match, "spans": [evidence]}], now=when)


def test_report_summaries_agree_with_their_tables_and_run_job_prints_one_thing(env, runtime):
    """Three pages, two of them mirrors of each other (SimHash 2 bits apart): the JSON
    summary's group count is the CSV's (it said 0 while the CSV listed groups); run-job prints
    its record as JSON and only that."""
    import csv
    import io
    from datetime import UTC, datetime

    from tracker.reports.daily import prepare_report

    now = datetime.now(UTC)
    runtime.db["masters"].insert_many(
        [{"_id": "书/1", "n": 1, "work": "书", "title": "第一章"}, {"_id": "书/2", "n": 2}]
    )
    seen_page(runtime, "https://pirate.example/1.html", "书/1", 0xF0F0_F0F0_0000_FFFF, now)
    seen_page(runtime, "https://mirror.example/1.html", "书/1", 0xF0F0_F0F0_0000_FFFC, now)
    seen_page(runtime, "https://other.example/2.html", "书/2", 0x0F0F_0F0F_FFFF_0000, now)
    prepare_report(runtime, now.date())
    day = now.date().isoformat()
    summary = json.loads(tracker(env, "report", "--date", day, "--format", "json").stdout)
    rows = list(
        csv.DictReader(
            io.StringIO(tracker(env, "report", "--date", day, "--format", "csv").stdout.decode())
        )
    )
    groups = {row["group"] for row in rows if row["group"]}
    assert summary["summary"]["groups"] == len(groups) == 1  # a page alone is in no group
    assert summary["summary"]["pages"] == len({row["url"] for row in rows}) == 3

    # Where it goes: html to the data directory by default (its path printed), any format to
    # --out PATH, or with --out - to standard output, notices included.
    reports = Path(env["TRACKER_DATA_DIR"]) / "reports"
    html = tracker(env, "report", "--date", day, "--format", "html")
    assert html.stdout.decode().strip() == str(reports / f"report-{day}.html")
    piped = tracker(env, "report", "--date", day, "--format", "html", "--out", "-").stdout
    stamp = re.compile(rb"Generated [^.]*\.")  # the two renders may fall in different minutes
    assert stamp.sub(b"", piped) == stamp.sub(b"", (reports / f"report-{day}.html").read_bytes())
    notices = tracker(env, "report", "--date", day, "--format", "notices", "--out", "-")
    out = notices.stdout.decode()
    assert out.count("==> notice-") == 3 and "https://pirate.example/1.html" in out
    assert not (reports / f"notices-{day}").exists()

    done = tracker(env, "run-job", "report")
    record = json.loads(done.stdout)  # the whole output is one JSON document
    assert done.returncode == 0 and record["job"] == "report" and record["status"] == "ok"
    assert b"INFO" not in done.stderr


def test_services_stop_stops_what_start_started(tmp_path):
    environment = {k: v for k, v in os.environ.items() if k not in ("MONGO_URL", "REDIS_URL")}
    environment = {k: v for k, v in environment.items() if not k.startswith("TRACKER_")}
    environment.update(HOME=str(tmp_path), TRACKER_DATA_DIR=str(tmp_path / "data"))
    started = tracker(environment, "services", "start")
    assert started.returncode == 0, started.stderr
    status = json.loads(tracker(environment, "services", "status", "--json").stdout)
    pids = [info["pid"] for info in status.values()]
    assert all(info["running"] for info in status.values()) and len(pids) == 2
    stopped = tracker(environment, "services", "stop")
    assert stopped.returncode == 0 and stopped.stdout.decode().startswith("stopped: ")
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    again = tracker(environment, "services", "stop")
    assert again.stdout.decode().strip() == "stopped: nothing was running"


def test_a_command_loads_only_its_own_module_and_parses_as_with_all():
    """`tracker check …` builds the parser of check alone (its start-up need not import the
    other commands' modules); options before the command are skipped, and help or an unknown
    command gets the whole parser."""
    from tracker.cli import build_parser, command_named

    assert command_named(["check", "x"]) == "check"
    assert command_named(["-v", "--config", "t.toml", "--data-dir=d", "run-job", "x"]) == "run-job"
    assert command_named(["--help"]) is None and command_named([]) is None
    whole = build_parser()
    for argv in (
        ["check", "--jsonl", "q.jsonl", "--workers", "3"],
        ["-v", "--config", "t.toml", "run-job", "pull"],
        ["index", "list"],
    ):
        alone = build_parser(command_named(argv))
        commands = next(a for a in alone._actions if isinstance(a, argparse._SubParsersAction))
        assert list(commands.choices) == [argv[-2] if argv[0] == "-v" else argv[0]]
        assert vars(alone.parse_args(argv)) == vars(whole.parse_args(argv))
    unknown = build_parser("no-such-command")
    commands = next(a for a in unknown._actions if isinstance(a, argparse._SubParsersAction))
    assert "check" in commands.choices and "ingest" in commands.choices


@pytest.mark.parametrize("outcome", ["returns", "raises"])
@pytest.mark.parametrize("collecting", [True, False])
def test_a_check_leaves_the_collector_as_it_found_it(monkeypatch, outcome, collecting):
    """`tracker check` turns the collector off for its start-up and freezes what that loaded;
    run in a long-lived process (the warm checker, a test calling main), it leaves the
    collector on or off as it was and nothing frozen, whether the check returned or raised."""
    import gc

    from tracker.cli import check

    def checked(args, settings):
        assert not gc.isenabled()
        check._started()
        assert gc.isenabled() and gc.get_freeze_count() > 0
        if outcome == "raises":
            raise KeyboardInterrupt
        return 0

    monkeypatch.setattr(check, "_run_check", checked)
    (gc.enable if collecting else gc.disable)()
    try:
        with contextlib.suppress(KeyboardInterrupt):
            assert check.run(argparse.Namespace(), None) == 0  # type: ignore[arg-type]
        assert gc.isenabled() == collecting and gc.get_freeze_count() == 0
    finally:
        gc.unfreeze()
        gc.enable()


def test_the_crawl_exits_at_once_only_from_scrapys_own_command_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``scrapy crawl`` skips the interpreter's teardown (quick_exit) only when the process is
    Scrapy's command line; a program running ``execute()`` itself (Scrapyd's runner) keeps
    its own exit, and a thread still working is waited for."""
    import sys
    import threading
    import types

    from tracker.crawling.commands import crawl

    module = types.ModuleType("__main__")
    module.__spec__ = types.SimpleNamespace(name="scrapy.__main__")  # python -m scrapy
    monkeypatch.setitem(sys.modules, "__main__", module)
    assert crawl.started_by_scrapy()
    module.__spec__ = types.SimpleNamespace(name="scrapyd.runner")
    monkeypatch.setattr(sys, "argv", ["/usr/bin/scrapy", "crawl", "novel"])
    assert crawl.started_by_scrapy()  # the scrapy script
    monkeypatch.setattr(sys, "argv", ["-m", "crawl", "novel"])
    assert not crawl.started_by_scrapy()

    exits: list[int] = []
    monkeypatch.setattr(os, "_exit", exits.append)
    monkeypatch.setattr(logging, "shutdown", lambda: None)  # pytest's own handlers
    monkeypatch.setattr(crawl, "_stop_default_executor", lambda: None)
    release = threading.Event()
    worker = threading.Thread(target=release.wait)  # not a daemon: still working
    worker.start()
    try:
        crawl.quick_exit(1)
    finally:
        release.set()
        worker.join()
    assert exits == []
    crawl.quick_exit(1)
    assert exits == [1]
