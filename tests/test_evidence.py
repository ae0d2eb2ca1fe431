"""Evidence captured at crawl time: the WARC records of every matched page, synced before its
match is stored, with the payload's SHA-256 on the match; and the WARC writer's files."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import os
import time
import zlib
from dataclasses import replace

import pytest
from warcio.warcwriter import GzippingWrapper

from tests.pirate import PirateSite
from tests.test_crawl_novel import crawl
from tracker.enforcement import warc
from tracker.enforcement.capture import Exchange, exchange_data, exchange_from_data, mask_url
from tracker.enforcement.warc import (
    EvidenceWriter,
    RecordRef,
    parse_records,
    read_member,
    sha256_base32,
)
from tracker.matching.library import MasterLibrary
from tracker.stores.evidence import CaptureStore

CHROMIUM = "/usr/bin/chromium"


def exchange(body: bytes = b"<html>hello</html>", url: str = "http://127.0.0.1:1/a.html"):
    return Exchange(
        url=url,
        method="GET",
        request_headers=[(b"User-Agent", b"tracker-test")],
        status=200,
        response_headers=[(b"Content-Type", b"text/html"), (b"Content-Length", b"18")],
        body=body,
        at=time.time(),
        ip="127.0.0.1",
    )


def test_writer_records_read_back_by_offset(tmp_path):
    writer = EvidenceWriter(tmp_path)
    first, second = writer.write([[exchange(b"one")], [exchange(b"two"), exchange(b"three")]])
    assert [ref.type for ref in second] == ["response", "request", "response", "request"]
    records = parse_records(read_member(tmp_path, second[2]))
    assert [(r.type, r.payload, r.status) for r in records] == [("response", b"three", 200)]
    assert records[0].warc_headers["WARC-IP-Address"] == "127.0.0.1"
    request = parse_records(read_member(tmp_path, second[3]))[0]
    assert request.warc_headers["WARC-Concurrent-To"] == second[2].record_id
    # The whole file reads as WARC: warcinfo, then the records in order.
    whole = parse_records((tmp_path / first[0].file).read_bytes())
    assert [r.type for r in whole] == ["warcinfo"] + ["response", "request"] * 3
    writer.close()


def test_a_torn_record_at_the_end_spoils_nothing_before_it(tmp_path):
    """A process killed mid-write leaves a torn gzip member at its file's end: the records any
    stored match names are still read by their offsets; the next process writes a new file."""
    writer = EvidenceWriter(tmp_path)
    (refs,) = writer.write([[exchange(b"kept")]])
    path = tmp_path / refs[0].file
    with path.open("ab") as fh:
        fh.write(gzip.compress(b"WARC/1.1\r\nWARC-Type: response\r\n" * 50)[:77])  # torn
    writer.close()
    assert parse_records(read_member(tmp_path, refs[0]))[0].payload == b"kept"
    (again,) = EvidenceWriter(tmp_path).write([[exchange(b"next")]])
    assert again[0].file != refs[0].file
    assert parse_records(read_member(tmp_path, again[0]))[0].payload == b"next"


def test_secrets_are_not_written(tmp_path):
    """A password in a URL is masked; the tracker's own credentials are not kept."""
    assert mask_url("http://user:pw@host:8080/p?q=1") == "http://user:***@host:8080/p?q=1"
    assert mask_url("http://host/p") == "http://host/p"
    (refs,) = EvidenceWriter(tmp_path).write([[exchange(url="http://user:pw@h.example/a")]])
    data = gzip.decompress(read_member(tmp_path, refs[0])) + gzip.decompress(
        read_member(tmp_path, refs[1])
    )
    assert b"pw" not in data and b"user:***@h.example" in data


def test_changed_bytes_fail_the_digest(tmp_path):
    (refs,) = EvidenceWriter(tmp_path).write([[exchange(b"original bytes")]])
    member = gzip.decompress(read_member(tmp_path, refs[0]))
    forged = gzip.compress(member.replace(b"original", b"forged!!"))
    with pytest.raises(ValueError, match="digest"):
        parse_records(forged)
    assert RecordRef.from_dict(refs[0].to_dict()) == refs[0]


def test_a_record_reference_as_a_document_holds_every_field_in_order(tmp_path):
    """``to_dict`` names the fields itself (faster than ``dataclasses.asdict``): it must give
    what ``asdict`` gives, every field in the dataclass's order, whatever fields it gains."""
    (refs,) = EvidenceWriter(tmp_path).write([[exchange(b"some bytes")]])
    for ref in refs:
        assert ref.to_dict() == dataclasses.asdict(ref)
        assert list(ref.to_dict()) == [field.name for field in dataclasses.fields(RecordRef)]


def test_records_carry_their_exchanges_own_digests_as_warcio_checks_them(tmp_path):
    """The writer gives warcio each body's digest (the exchange's own, computed once, and read
    again for the capture document): it must be the digest warcio checks on reading."""
    pages = [[exchange(b"one")], [exchange(b"two"), exchange("第一章".encode() * 2000)]]
    refs = EvidenceWriter(tmp_path).write(pages)
    responses = [ref for page in refs for ref in page if ref.type == "response"]
    bodies = [e.body for page in pages for e in page]
    for ref, body in zip(responses, bodies, strict=True):
        (record,) = parse_records(read_member(tmp_path, ref))  # digests checked
        assert record.payload == body
        assert record.warc_headers["WARC-Payload-Digest"] == sha256_base32(body)


def test_an_exchange_hashes_its_body_once_and_not_as_data():
    first = exchange(b"body")
    assert first.digest is first.digest == hashlib.sha256(b"body").digest()
    assert first.sha256 == hashlib.sha256(b"body").hexdigest()
    assert "_digest" not in exchange_data(first)
    again = exchange_from_data(exchange_data(first))
    assert again == first and again.sha256 == first.sha256
    changed = replace(first, body=b"other")
    assert changed.sha256 == hashlib.sha256(b"other").hexdigest()


def test_the_gzip_level_changes_the_bytes_on_disk_never_the_records(tmp_path, monkeypatch):
    """Records are compressed at zlib's default level, not warcio's 9: each is still one gzip
    member read by its offset and length, and decompressed it is the very record written at
    warcio's level (ids aside); the level-9 members are the bytes warcio's own writer makes."""
    pages = [[exchange(b"one")], [exchange("第一章 天地玄黄。".encode() * 3000)]]

    def written(directory):
        refs = EvidenceWriter(directory).write(pages)
        flat = [ref for page in refs for ref in page]
        members = [read_member(directory, ref) for ref in flat]
        records = [gzip.decompress(member) for member in members]
        for k, ref in enumerate(flat):
            records = [r.replace(ref.record_id.encode(), b"<record %d>" % k) for r in records]
        return members, records

    members, records = written(tmp_path / "default")
    monkeypatch.setattr(warc, "GZIP_LEVEL", 9)
    members_9, records_9 = written(tmp_path / "nine")
    assert records == records_9
    # compressed otherwise: the gzip header's XFL byte is 2 at level 9, 0 at the default level
    # (comparing lengths was flaky: a repetitive body can deflate to the same length at both)
    assert [m[8] for m in members] == [0] * len(members)
    assert [m[8] for m in members_9] == [2] * len(members_9)
    for member in members:  # one whole member each
        inflate = zlib.decompressobj(zlib.MAX_WBITS + 16)
        inflate.decompress(member)
        assert inflate.eof and not inflate.unused_data
    # at level 9 a member is what warcio's GzippingWrapper writes of the same record
    out = io.BytesIO()
    wrapper = GzippingWrapper(out)
    wrapper.write(gzip.decompress(members_9[-2]))
    wrapper.flush()
    assert out.getvalue() == members_9[-2]


@pytest.mark.integration
def test_a_crawl_captures_every_matched_page(runtime, settings, tmp_path, monkeypatch):
    screenshots = os.path.exists(CHROMIUM)
    with PirateSite(3) as pirate:
        MasterLibrary.from_runtime(runtime).ingest(pirate.masters)
        shooting = replace(settings, evidence_screenshots=screenshots)  # the crawl's settings
        crawl("novel", shooting, tmp_path, {"start_url": pirate.url + "book/"})
        served = {pirate.page_url(k): pirate.bodies[pirate.paths[k - 1]] for k in (1, 2, 3)}
    captures = CaptureStore(runtime.db)
    matches = {m["url"]: m for m in runtime.db["matches"].find()}
    assert set(matches) == set(served)  # the catalogue matched nothing: not captured
    for url, body in served.items():
        capture = captures.latest(url)
        assert capture is not None and capture["status"] == 200
        assert capture["payload_sha256"] == hashlib.sha256(body).hexdigest()
        assert matches[url]["capture_id"] == capture["_id"]
        assert matches[url]["payload_sha256"] == capture["payload_sha256"]
        (part,) = capture["parts"]
        assert part["ip"] == "127.0.0.1" and part["user_agent"]
        response = RecordRef.from_dict(part["records"][0])
        (record,) = parse_records(read_member(settings.data_dir / "evidence", response))
        assert record.payload == body and record.target_uri == url
        if screenshots:  # rendered from the captured bytes, after the page was stored
            shot = (settings.data_dir / "evidence" / capture["screenshot"]["file"]).read_bytes()
            assert hashlib.sha256(shot).hexdigest() == capture["screenshot"]["sha256"]
    assert runtime.db["captures"].count_documents({}) == 3


@pytest.mark.integration
def test_a_page_matched_later_is_captured_at_its_next_crawl(runtime, settings, tmp_path):
    """Pirates publish first: a page stored before its master was registered is matched by
    ``tracker rematch`` (nothing to capture then); the next crawl finds it unchanged and
    captures it, naming the capture on its matches."""
    from tracker.matching.rematch import Rematcher

    with PirateSite(2) as pirate:
        crawl("novel", settings, tmp_path, {"start_url": pirate.url + "book/"}, name="first")
        MasterLibrary.from_runtime(runtime).ingest(pirate.masters)
        Rematcher(runtime).run()
        assert runtime.db["matches"].count_documents({}) == 2
        assert runtime.db["captures"].count_documents({}) == 0
        crawl("novel", settings, tmp_path, {"start_url": pirate.url + "book/"}, name="again")
        crawl("novel", settings, tmp_path, {"start_url": pirate.url + "book/"}, name="third")
    captures = CaptureStore(runtime.db)
    assert runtime.db["captures"].count_documents({}) == 2  # once, not at every crawl
    for match in runtime.db["matches"].find():
        capture = captures.latest(match["url"])
        assert match["capture_id"] == capture["_id"]
        assert capture["matches"][0]["doc_id"] == match["doc_id"]
        assert capture["matches"][0]["spans"]


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="no Chromium (apt chromium)")
def test_screenshots_render_the_captured_page_offline_and_bounded(tmp_path):
    pytest.importorskip("playwright")
    from tracker.enforcement.screenshots import ScreenshotTaker

    html = (
        "<html><head><meta charset='gbk'><link rel=stylesheet href='http://127.0.0.1:9/x.css'>"
        "<script>document.title='ran'</script></head><body>"
        + "<p>第一章 盗版的正文</p>" * 200
        + "</body></html>"
    ).encode("gbk")
    taken: dict[str, dict] = {}
    shooter = ScreenshotTaker(tmp_path, 2, lambda cid, shot: taken.update({cid: shot}))
    gzipped = dataclasses.replace(
        exchange(gzip.compress(html)),
        response_headers=[(b"Content-Type", b"text/html"), (b"Content-Encoding", b"gzip")],
    )
    assert shooter.submit("a", gzipped) and shooter.submit("b", exchange(html))
    assert not shooter.submit("c", exchange(html))  # over evidence_screenshot_max
    shooter.close()
    assert sorted(taken) == ["a", "b"] and shooter.skipped == 1
    png = (tmp_path / taken["a"]["file"]).read_bytes()
    assert png.startswith(b"\x89PNG") and hashlib.sha256(png).hexdigest() == taken["a"]["sha256"]
    from PIL import Image

    with Image.open(tmp_path / taken["a"]["file"]) as image:
        assert image.width == 1280 and image.height > 2000  # the whole page, not the viewport
