"""Download files read as books (tracker.files): every container, every encoding, and every
hostile file ending unread with its reason, never in a crash or a clean verdict."""

from __future__ import annotations

import io
import random
import struct
import zipfile

import pytest

from tests.disguise import traditional
from tests.files_site import book_text, epub, gbk_zip, rar, seven_zip, zip_bomb
from tests.sites import book_masters
from tracker.files import archives
from tracker.files.archives import Budget, Limits, Unreadable, kind_of, read_zip_member
from tracker.files.books import read_book_file
from tracker.files.links import (
    attachment_name,
    file_name,
    is_download_link,
    is_file_response,
    script_file_urls,
)

MASTERS = book_masters(6, "文件测试书", 300, seed=4242)
TEXT = book_text(MASTERS, "文件测试书")


def read(data: bytes, name: str = "book", limits: Limits | None = None):
    chapters = []
    reading = read_book_file(io.BytesIO(data), name, limits or Limits(), chapters.extend)
    return reading, chapters


def unread_reason(data: bytes, name: str = "book", limits: Limits | None = None) -> str:
    with pytest.raises(Unreadable) as caught:
        read(data, name, limits)
    assert str(caught.value)  # a sentence for people
    return caught.value.reason


@pytest.mark.parametrize("encoding", ["gbk", "gb18030", "big5", "utf-16", "utf-8-sig"])
def test_a_txt_in_any_chinese_encoding_is_split_as_ingest_splits_it(encoding):
    text = traditional(TEXT) if encoding == "big5" else TEXT  # Big5 has no simplified forms
    reading, chapters = read(text.encode(encoding, "replace"), "书.txt")
    assert reading.kind == "text" and reading.chapters == 6
    big5 = [(traditional(m.title), traditional(m.text)) for m in MASTERS]
    masters = [tuple(t.encode("big5", "replace").decode("big5") for t in pair) for pair in big5]
    if encoding != "big5":
        masters = [(m.title, m.text) for m in MASTERS]
    assert [c.title for c in chapters] == [title for title, _ in masters]
    assert chapters[2].text.split() == masters[2][1].split()


def test_zip_member_names_in_gbk_without_the_utf8_flag_are_read_back():
    data = gbk_zip({"第一卷/文件测试书.txt": TEXT.encode("gbk")})
    [info] = zipfile.ZipFile(io.BytesIO(data)).infolist()
    assert not info.flag_bits & 0x800  # as Chinese archivers write them
    reading, _ = read(data, "书.zip")
    assert reading.members == ["第一卷/文件测试书.txt"] and reading.chapters == 6


def test_7z_epub_and_an_archive_nested_one_level_are_read():
    for data, kind in (
        (seven_zip({"书.txt": TEXT.encode("gbk")}), "7z"),
        (epub("文件测试书", MASTERS), "epub"),
        (gbk_zip({"内层.zip": gbk_zip({"书.txt": TEXT.encode("gbk")})}), "zip"),
        (gbk_zip({"书.epub": epub("文件测试书", MASTERS)}), "zip"),
    ):
        reading, chapters = read(data)
        assert (reading.kind, reading.chapters) == (kind, 6), kind
        assert chapters[0].text.split() == MASTERS[0].text.split()


def test_a_solid_7z_of_large_members_is_no_bomb():
    """py7zr names one compressed size for a folder of members (the others: None): the ratio
    is then the archive's."""
    rng = random.Random(7)
    book = [
        "".join(rng.choices([chr(c) for c in range(0x4E00, 0x4E00 + 3000)], k=700_000))
        for _ in range(3)
    ]
    data = seven_zip({f"{k}.txt": text.encode("utf-8") for k, text in enumerate(book)})
    assert read(data)[0].members == ["0.txt", "1.txt", "2.txt"]


def test_an_archive_nested_two_levels_deep_is_noted_not_read():
    inner = gbk_zip({"书.txt": TEXT.encode("gbk")})
    data = gbk_zip({"一.zip": gbk_zip({"二.zip": inner}), "书.txt": TEXT.encode("gbk")})
    reading, _ = read(data)
    assert reading.chapters == 6  # the top level's text only
    assert any("nested deeper than one level" in note for note in reading.notes)


def test_an_epub_without_nav_or_package_is_read_and_noted():
    reading, _ = read(epub("文件测试书", MASTERS, nav=False))
    assert reading.chapters == 6 and any("no navigation" in n for n in reading.notes)
    members = {
        name: data
        for name, data in _members(epub("文件测试书", MASTERS)).items()
        if not name.endswith((".opf", "container.xml"))
    }
    reading, _ = read(_zip(members), "无包.epub")
    assert reading.chapters == 6 and any("name order" in n for n in reading.notes)
    assert unread_reason(_zip({"mimetype": b"application/epub+zip"}), "空.epub") == "empty"


def test_password_protected_archives_are_unread():
    assert unread_reason(seven_zip({"书.txt": TEXT.encode()}, password="123")) == "password"
    data = bytearray(gbk_zip({"书.txt": TEXT.encode("gbk")}))
    for signature in (b"PK\x03\x04", b"PK\x01\x02"):  # set the encryption bit in both headers
        at = data.index(signature) + (6 if signature == b"PK\x03\x04" else 8)
        flags = struct.unpack_from("<H", data, at)[0]
        struct.pack_into("<H", data, at, flags | 0x1)
    assert unread_reason(bytes(data)) == "password"


def test_broken_and_truncated_archives_are_unread():
    data = gbk_zip({"书.txt": TEXT.encode("gbk")})
    assert unread_reason(data[: len(data) // 2]) == "truncated"
    damaged = bytearray(data)
    damaged[60:90] = bytes(30)  # inside the deflated member
    assert unread_reason(bytes(damaged)) == "broken"
    seven = seven_zip({"书.txt": TEXT.encode("gbk")})
    assert unread_reason(seven[: len(seven) // 2]) in ("broken", "truncated")
    assert unread_reason(b"\x00\x01\x02binary" * 100) == "not_text"


def test_zip_bombs_are_stopped_by_each_guard():
    # 1. the declared total (an honest 3 GB bomb, read in no time)
    assert unread_reason(zip_bomb()) == "bomb"
    # 2. the ratio of one member
    small = zip_bomb(8 << 20)
    assert unread_reason(small) == "bomb"
    assert unread_reason(small, limits=Limits(max_ratio=10_000)) == "empty"  # zeros: no text
    # 3. the member count
    many = gbk_zip({f"{k}.txt": TEXT.encode("gbk") for k in range(12)})
    assert unread_reason(many, limits=Limits(max_members=10)) == "bomb"
    # the same guards for 7z (LZMA: 16 MiB of zeros in a few kB)
    seven = seven_zip({"全本.txt": bytes(16 << 20)})
    assert len(seven) < 100_000 and unread_reason(seven) == "bomb"
    # 4. the stream: bytes really inflated, whatever was declared before
    archive = zipfile.ZipFile(io.BytesIO(small))
    budget = Budget(Limits(max_inflated=16 << 20), inflated=12 << 20)
    with pytest.raises(Unreadable, match="inflated past the limit"):
        read_zip_member(archive, archive.infolist()[0], budget)
    assert budget.inflated <= (16 << 20) + archives.CHUNK  # stopped within one chunk


def test_a_file_over_the_limit_is_unread():
    limits = Limits(max_bytes=1000)
    assert unread_reason(TEXT.encode("gbk"), "书.txt", limits) == "too_large"


def test_member_names_never_become_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = _zip({"../../逃逸.txt": TEXT.encode(), "/etc/绝对.txt": TEXT.encode()})
    reading, _ = read(data)
    assert reading.members == ["../../逃逸.txt", "/etc/绝对.txt"]  # labels only
    assert list(tmp_path.iterdir()) == [] and not (tmp_path.parent.parent / "逃逸.txt").exists()


def test_a_stored_rar_is_read_without_a_tool_a_compressed_one_needs_one(monkeypatch):
    import rarfile

    def no_tool(*args, **kwargs):
        raise rarfile.RarCannotExec("Cannot find working tool")

    monkeypatch.setattr(rarfile, "tool_setup", no_tool)
    reading, chapters = read(rar({"book.txt": TEXT.encode("gbk")}), "书.rar")
    assert (reading.kind, reading.chapters) == ("rar", 6)
    assert chapters[0].text.split() == MASTERS[0].text.split()
    with pytest.raises(Unreadable) as caught:
        read(rar({"book.txt": TEXT.encode("gbk")}, method=0x33), "书.rar")
    assert caught.value.reason == "no_reader"
    assert "unar" in str(caught.value) and "libarchive-tools" in str(caught.value)


def test_kind_is_told_by_the_first_bytes():
    assert kind_of(epub("书", MASTERS[:1])[:64]) == "epub"
    assert kind_of(gbk_zip({"a.txt": b"x"})[:64]) == "zip"
    assert kind_of(seven_zip({"a.txt": b"x"})[:64]) == "7z"
    assert kind_of(rar({"a.txt": b"x"})[:64]) == "rar"
    assert kind_of("第一章".encode("gbk")) == "text"


# ---------------------------------------------------------------------------- download links


@pytest.mark.parametrize(
    ("url", "text", "download"),
    [
        ("/down/1.html", "TXT下载", True),
        ("/down/1.html", "全本下载", True),
        ("/d?id=1", "下载地址", True),
        ("/d?id=1", " EPUB ", True),
        ("/d?id=1", "点击下载", True),
        ("/d?id=1", "epub下载", True),
        ("/files/书.zip", "", True),
        ("/files/%E4%B9%A6.7z", "", True),
        ("/book/1.html", "下一章", False),
        ("/app.html", "下载APP", False),
        ("/cover.jpg", "封面", False),
    ],
)
def test_download_links_by_text_or_extension(url, text, download):
    assert is_download_link(url, text) is download


def test_attachment_names_in_chinese():
    assert attachment_name(b"attachment; filename=\"x\"; filename*=UTF-8''%E4%B8%89%E5%9B%BD.zip")
    assert attachment_name("attachment; filename*=UTF-8''%E4%B8%89%E5%9B%BD.zip") == "三国.zip"
    assert attachment_name("attachment; filename*=gbk''%C8%FD%B9%FA.7z") == "三国.7z"
    assert attachment_name('attachment; filename="三国.txt"'.encode("gbk")) == "三国.txt"
    assert attachment_name('attachment; filename="三国.txt"'.encode()) == "三国.txt"
    assert attachment_name(b'attachment; filename="../../etc/passwd"') == "passwd"
    assert attachment_name(b"inline") is None
    assert file_name("http://x/files/%E4%B9%A6.txt", None) == "书.txt"


def test_files_are_told_from_pages():
    zip_head = gbk_zip({"a.txt": b"x"})[:64]
    assert is_file_response("http://x/get/1", "text/html", b"attachment", b"<html>", False)
    assert is_file_response("http://x/get/1", "application/zip", None, zip_head, False)
    assert is_file_response("http://x/get/1", "text/html", None, zip_head, False)  # its bytes
    assert is_file_response("http://x/a.txt", "text/plain; charset=gbk", None, b"abc", False)
    assert is_file_response("http://x/get", "text/plain", None, b"abc", True)
    assert not is_file_response("http://x/1.html", "text/html", None, b"<html>", True)
    assert not is_file_response("http://x/get", "text/plain", None, b"abc", False)
    mislabelled = b"<!DOCTYPE html><html>"
    assert not is_file_response("http://x/1", "application/octet-stream", None, mislabelled, 0)


def test_a_countdown_page_names_its_file_in_its_script():
    script = 'var n=5;var downUrl="/files/a.7z";location.href="/x.html";'
    assert script_file_urls([script, "go('/files/a.7z')"]) == ["/files/a.7z"]


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buf.getvalue()


def _members(data: bytes) -> dict[str, bytes]:
    archive = zipfile.ZipFile(io.BytesIO(data))
    return {info.filename: archive.read(info) for info in archive.infolist()}


def test_a_download_over_max_download_mb_is_unread_a_page_over_the_page_limit_is_not():
    from scrapy.exceptions import DownloadCancelledError
    from scrapy.http import Request
    from twisted.python.failure import Failure

    from spiders.base import unread_reason as failure_reason

    message = "Received 200 bytes which is larger than download max size (100) in request"
    for meta, reason in (({"tracker_download": True}, "too_large"), ({}, None)):
        failure = Failure(DownloadCancelledError(message))
        failure.request = Request("http://x/get/1", meta=meta)
        assert failure_reason(failure) == reason
