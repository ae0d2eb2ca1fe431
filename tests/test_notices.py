"""``tracker notices send``: a site's takedown notice mailed to its abuse contact through a local
SMTP server (aiosmtpd: STARTTLS, login), recorded, never repeated within notice_repeat_days;
an SMTP server down, refusing or answering garbage leaves the notice pending, sent later; its
evidence passages are the daily drafts' (the pirate's inserted ad lines left out). The notice
is a 侵权通知书 naming the rights holder (an English one for a site file saying so), from a
template the data directory may override; a dry run prints it readably, placeholders for what
is not set; the draft lists the same URLs as the mail; hostile addresses, URLs and templates
give a named error or a well-formed mail, never a header injected nor a mail half sent."""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime, timedelta
from email import message_from_bytes, policy

import pytest

from tests.smtp import LocalSmtp
from tracker.cli import main
from tracker.reports import build_report
from tracker.reports.build import INSERTED
from tracker.reports.notices import to_notices
from tracker.stores.evidence import CaptureStore
from tracker.stores.notices import NoticeStore
from tracker.stores.pages import MatchStore, PageRecord, PageStore
from tracker.stores.takedowns import TakedownStore

pytestmark = pytest.mark.integration

SITE = "127.0.0.1"
HOLDER = {
    "TRACKER_RIGHTS_HOLDER_NAME": "北京某某文化传媒有限公司",
    "TRACKER_RIGHTS_HOLDER_CONTACT": "法务部 010-12345678 legal@rights.test",
    "TRACKER_RIGHTS_HOLDER_ADDRESS": "北京市朝阳区某某路 1 号",
}
URLS = [f"http://{SITE}:8/book/{k}.html" for k in (1, 2, 3)]


@pytest.fixture(scope="module")
def smtp(tmp_path_factory):
    server = LocalSmtp(tmp_path_factory.mktemp("smtp"))
    yield server
    server.close()


@pytest.fixture()
def infringing(runtime):
    """Three pages of the site carrying a copy each; a fourth whose match closed."""
    pages, matches = PageStore(runtime.db), MatchStore(runtime.db)
    for k, url in enumerate([*URLS, f"http://{SITE}:8/book/old.html"], start=1):
        doc_id = f"书/{k:04d}"
        pages.save(PageRecord(url=url, text=f"第{k}章 正文", matched=[doc_id]))
        span = {"page_start": 0, "page_end": 9, "text": f"第{k}章 被复制的段落"}
        matches.record(url, [{"doc_id": doc_id, "work": "书", "title": f"第{k}章",
                              "score": 0.9, "coverage": 0.8, "spans": [span]}])  # fmt: skip
    old = f"http://{SITE}:8/book/old.html"
    matches.record(old, [])  # the page no longer carries it
    pages.save(PageRecord(url=old, text="换了内容", matched=[]))


@pytest.fixture()
def mail_env(cli_env, smtp, monkeypatch, tmp_path):
    (tmp_path / "sites").mkdir()
    (tmp_path / "sites" / "pirate.yaml").write_text(
        f"name: pirate\nstart_urls: ['http://{SITE}:8/book/']\nabuse_contact: abuse@pirate.test\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(smtp.ca_file))  # the server's STARTTLS certificate
    monkeypatch.setenv("TRACKER_SMTP_URL", smtp.url)
    monkeypatch.setenv("TRACKER_SMTP_FROM", "legal@rights.test")
    monkeypatch.setenv("TRACKER_NOTICE_SENDER", "Rights Holder Ltd, legal@rights.test")
    for name, value in HOLDER.items():
        monkeypatch.setenv(name, value)
    for kept in (smtp.messages, smtp.raw, smtp.envelopes):
        kept.clear()
    yield smtp
    if smtp.mode in ("down", "garbage"):
        smtp.come_back()
    smtp.mode = "ok"


def text_of(message) -> str:
    """The decoded text of a notice mail (its first text/plain part), lines ending in LF."""
    return message.get_body(("plain",)).get_content().replace("\r\n", "\n")


def test_send_records_and_does_not_repeat(mail_env, infringing, runtime, capsys):
    smtp = mail_env
    assert main(["notices", "send", "--site", SITE]) == 0
    (message,) = smtp.messages
    assert message["To"] == "abuse@pirate.test" and message["From"] == "legal@rights.test"
    assert smtp.logins  # logged in, after STARTTLS
    body = text_of(message)
    for url in URLS:
        assert url in body
    assert "old.html" not in body and "草稿" not in body and "[" not in body
    assert "侵权通知书" in body and all(value in body for value in HOLDER.values())
    assert "Rights Holder Ltd" in body and "第1章 被复制的段落" in body
    (record,) = NoticeStore(runtime.db).of_site(SITE)
    assert record["state"] == "sent" and record["message_id"] == message["Message-ID"]
    assert sorted(record["urls"]) == URLS
    noticed = {doc["_id"]: doc for doc in TakedownStore(runtime.db).all(SITE)}
    assert sorted(noticed) == URLS and noticed[URLS[0]]["doc_ids"] == ["书/0001"]
    # Within notice_repeat_days nothing is noticed again, unless --resend.
    capsys.readouterr()
    assert main(["notices", "send", "--site", SITE]) == 0
    assert len(smtp.messages) == 1 and "nothing to notice" in capsys.readouterr().out
    assert main(["notices", "send", "--site", SITE, "--resend"]) == 0
    assert len(smtp.messages) == 2


def test_dry_run_sends_and_records_nothing(mail_env, infringing, runtime, capsys):
    assert main(["notices", "send", "--site", SITE, "--to", "x@y.test", "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert "To: x@y.test" in printed and all(url in printed for url in URLS)
    assert mail_env.messages == [] and NoticeStore(runtime.db).of_site(SITE) == []
    assert TakedownStore(runtime.db).all() == []


@pytest.mark.parametrize("fault", ["down", "reject", "garbage"])
def test_a_failing_smtp_server_leaves_the_notice_pending(mail_env, infringing, runtime, capsys,
                                                         fault):  # fmt: skip
    smtp = mail_env
    {"down": smtp.go_down, "garbage": smtp.answer_garbage}.get(fault, lambda: None)()
    smtp.mode = fault
    assert main(["notices", "send", "--site", SITE]) == 1
    err = capsys.readouterr().err
    assert "SMTP server smtp://tracker:***@127.0.0.1" in err and "pending" in err
    assert "s3cret" not in err
    (pending,) = NoticeStore(runtime.db).pending(SITE)
    assert TakedownStore(runtime.db).all() == []  # not noticed until sent
    if fault in ("down", "garbage"):
        smtp.come_back()
    smtp.mode = "ok"
    # The next send delivers that very notice, and composes no second one for its URLs.
    assert main(["notices", "send", "--site", SITE]) == 0
    (message,) = smtp.messages
    assert message["Message-ID"] == pending["message_id"]
    assert NoticeStore(runtime.db).pending(SITE) == []
    assert len(TakedownStore(runtime.db).all(SITE)) == 3


def test_no_recipient_is_an_error(mail_env, infringing, capsys):
    assert main(["notices", "send", "--site", "other.test"]) == 2
    assert "no recipient for other.test" in capsys.readouterr().err


AD_LINE = "笔趣阁最快更新，请记住本站域名 www.biquge.com"


def test_a_sent_notice_quotes_the_drafts_passage_without_the_inserted_ad(
    mail_env, infringing, runtime
):
    """The passage a notice sends is the one the day's draft quotes: the copied text, the ad
    line the site inserted in it left out and marked, whatever else the page carries."""
    url = f"http://{SITE}:8/book/ad.html"
    before, after = "宝玉听了，心中暗喜，忙起身相迎。" * 2, "黛玉只低头不语，半日方道。" * 2
    passage = f"{before}\n{AD_LINE}\n{after}"
    hostile = '"><script>alert(1)</script>'  # a shorter passage: the longest one is quoted
    spans = [{"page_start": 0, "page_end": len(passage), "text": passage},
             {"page_start": 0, "page_end": 30, "text": hostile}]  # fmt: skip
    found = {"doc_id": "书/0009", "work": "书", "title": "第9章", "score": 0.95, "coverage": 0.9}
    MatchStore(runtime.db).record(url, [{**found, "spans": spans}])
    PageStore(runtime.db).save(PageRecord(url=url, text=passage, matched=["书/0009"]))
    assert main(["notices", "send", "--site", SITE]) == 0
    (message,) = mail_env.messages
    body = text_of(message)
    quoted = f"复制内容（最长一段）：「{before} {INSERTED} {after}」"
    assert quoted in body and "biquge" not in body and "笔趣阁" not in body
    assert f"段落中的“{INSERTED}”：侵权网站插入的广告等内容，已略去。" in body
    report = build_report(runtime.db, datetime.now(UTC).date())
    draft = to_notices(report, runtime.db, runtime.settings, resend=True)[SITE]
    assert quoted in draft and "biquge" not in draft


# ------------------------------------------------------------------ the notice a site expects


def test_the_notice_is_a_chinese_notice_naming_the_rights_holder(mail_env, infringing, runtime):
    assert main(["notices", "send", "--site", SITE]) == 0
    (message,) = mail_env.messages
    assert message["Subject"] == f"侵权通知书：{SITE} 上的 3 个网址侵犯我方作品的信息网络传播权"
    body = text_of(message)
    for heading in ("一、权利人", "二、侵权作品的名称和网络地址", "三、声明"):
        assert heading in body
    assert f"名称：{HOLDER['TRACKER_RIGHTS_HOLDER_NAME']}" in body
    assert f"地址：{HOLDER['TRACKER_RIGHTS_HOLDER_ADDRESS']}" in body
    assert "侵权作品：《书》，第 1 章，共 1 章（第1章）" in body
    assert "对本通知书的真实性负责" in body  # Article 14's statement of responsibility
    assert "抓取时间：未存证" in body  # these pages were never captured: said, not hidden
    # The date in display_timezone (Asia/Shanghai by default), as a reader writes it.
    (date_line,) = {line for line in body.splitlines() if line.startswith("日期：")}
    assert re.fullmatch(r"日期：\d{4}-\d{2}-\d{2} \d{2}:\d{2}", date_line)
    assert "Asia/Shanghai (UTC+08:00)" in body


def test_sending_without_the_rights_holder_is_an_error_naming_the_settings(
    mail_env, infringing, runtime, monkeypatch, capsys
):
    monkeypatch.delenv("TRACKER_RIGHTS_HOLDER_CONTACT")
    monkeypatch.delenv("TRACKER_RIGHTS_HOLDER_ADDRESS")
    assert main(["notices", "send", "--site", SITE]) == 2
    err = capsys.readouterr().err
    assert "rights_holder_contact (TRACKER_RIGHTS_HOLDER_CONTACT)" in err
    assert "rights_holder_address (TRACKER_RIGHTS_HOLDER_ADDRESS)" in err
    assert "rights_holder_name" not in err  # the one set is not named
    assert mail_env.messages == [] and NoticeStore(runtime.db).of_site(SITE) == []


def test_a_site_file_asks_for_an_english_notice(mail_env, infringing, tmp_path):
    site_file = tmp_path / "sites" / "pirate.yaml"
    site_file.write_text(site_file.read_text(encoding="utf-8") + "notice_language: en\n",
                         encoding="utf-8")  # fmt: skip
    assert main(["notices", "send", "--site", SITE]) == 0
    (message,) = mail_env.messages
    body = text_of(message)
    assert message["Subject"] == f"Copyright infringement notice: 3 page(s) on {SITE}"
    assert "TAKEDOWN NOTICE" in body and "good-faith belief" in body and "侵权通知书" not in body
    assert f"Address: {HOLDER['TRACKER_RIGHTS_HOLDER_ADDRESS']}" in body


def test_the_dry_run_prints_the_notice_readably_with_placeholders(
    cli_env, infringing, runtime, monkeypatch, tmp_path, capsys
):
    """No sender, recipient or rights holder set: the dry run still shows the notice, each a
    placeholder with a warning; nothing is sent or recorded."""
    monkeypatch.chdir(tmp_path)  # no site file: no abuse contact
    assert main(["notices", "send", "--site", SITE, "--dry-run"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"Subject: 侵权通知书：{SITE} 上的 3 个网址")
    assert "From: sender@placeholder.invalid" in out and "To: recipient@placeholder.invalid" in out
    assert "侵权通知书" in out and "[权利人名称：设置 rights_holder_name]" in out
    assert all(url in out for url in URLS) and "Attachments (0):" in out
    assert "=?utf-8?" not in out and "=E4" not in out  # decoded, not MIME
    for warning in ("no sender: set smtp_from", "no recipient for 127.0.0.1",
                    "set rights_holder_name (TRACKER_RIGHTS_HOLDER_NAME)"):  # fmt: skip
        assert warning in err
    assert NoticeStore(runtime.db).of_site(SITE) == [] and TakedownStore(runtime.db).all() == []


def test_the_dry_run_prints_the_very_text_then_sent(mail_env, infringing, capsys):
    assert main(["notices", "send", "--site", SITE, "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert mail_env.messages == []
    assert main(["notices", "send", "--site", SITE]) == 0
    (message,) = mail_env.messages
    shown = printed.split("\n\n", 1)[1].rsplit("\n\nAttachments (", 1)[0]
    assert same_but_dates(shown) == same_but_dates(text_of(message).rstrip("\n"))
    assert f"Subject: {message['Subject']}" in printed


def same_but_dates(text: str) -> str:
    """``text`` with its minutes left out (the two may be composed a minute apart)."""
    return re.sub(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}", "DATE", text)


def test_the_draft_and_the_mail_list_the_same_urls(mail_env, infringing, runtime, capsys):
    """One URL noticed lately: the draft leaves it out as the mail does (both with --resend
    include it)."""
    TakedownStore(runtime.db).noticed({URLS[0]: ["书/0001"]}, "earlier", datetime.now(UTC))
    capsys.readouterr()
    assert main(["report", "--format", "notices", "--out", "-"]) == 0
    draft = capsys.readouterr().out
    assert main(["notices", "send", "--site", SITE]) == 0
    body = text_of(mail_env.messages[0])
    listed = re.compile(r"^\d+\. 网络地址：(\S+)$", re.M)
    assert listed.findall(draft) == listed.findall(body) == URLS[1:]
    assert main(["report", "--format", "notices", "--out", "-", "--resend"]) == 0
    assert listed.findall(capsys.readouterr().out) == URLS


def test_a_url_noticed_long_ago_is_noticed_again(mail_env, infringing, runtime):
    long_ago = datetime.now(UTC) - timedelta(days=15)  # notice_repeat_days: 14
    TakedownStore(runtime.db).noticed({URLS[0]: ["书/0001"]}, "earlier", long_ago)
    assert main(["notices", "send", "--site", SITE]) == 0
    assert all(url in text_of(mail_env.messages[0]) for url in URLS)


# ------------------------------------------------------------------------ templates, bad input


def test_a_template_in_the_data_directory_replaces_the_packages(
    mail_env, infringing, runtime, settings
):
    folder = settings.data_dir / "templates"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "notice.zh.txt").write_text(
        "{% set subject %}通知 {{ site }}{% endset %}"
        "本所代表 {{ holder.name }}：\n{% for p in pages %}{{ p.url }}\n{% endfor %}",
        encoding="utf-8",
    )
    try:
        assert main(["notices", "send", "--site", SITE]) == 0
    finally:
        (folder / "notice.zh.txt").unlink()
    (message,) = mail_env.messages
    assert message["Subject"] == f"通知 {SITE}"
    assert text_of(message) == f"本所代表 {HOLDER['TRACKER_RIGHTS_HOLDER_NAME']}：\n" + "".join(
        f"{url}\n" for url in URLS
    )


@pytest.mark.parametrize(
    ("template", "said"),
    [
        ("{% set subject %}x{% endset %}\n\n{% for p in pages %}", "line 3"),  # does not parse
        ("{% set subject %}x{% endset %}\n{{ holder.nmae }}", "line 2"),  # an unknown name
        ("{% set subject %}x{% endset %}\n{{ pages[0].url.__class__.__mro__ }}", "unsafe"),
        ("{{ pages|length }} pages", "sets no subject"),
    ],
)
def test_a_template_that_fails_is_named_and_nothing_is_sent(
    mail_env, infringing, runtime, settings, capsys, template, said
):
    folder = settings.data_dir / "templates"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "notice.zh.txt").write_text(template, encoding="utf-8")
    try:
        assert main(["notices", "send", "--site", SITE]) == 2
    finally:
        (folder / "notice.zh.txt").unlink()
    err = capsys.readouterr().err
    assert f"the notice template {folder / 'notice.zh.txt'}" in err and said in err
    assert mail_env.messages == [] and NoticeStore(runtime.db).of_site(SITE) == []
    assert TakedownStore(runtime.db).all() == []


@pytest.mark.parametrize(
    "to",
    ["abuse@pirate.test\r\nBcc: victim@else.test", "abuse@pirate.test, other@else.test",
     "<script>@x", "not an address"],
)  # fmt: skip
def test_a_bad_recipient_is_a_named_error(mail_env, infringing, runtime, capsys, to):
    assert main(["notices", "send", "--site", SITE, "--to", to]) == 2
    assert "the recipient" in capsys.readouterr().err
    assert mail_env.messages == [] and NoticeStore(runtime.db).of_site(SITE) == []


def test_hostile_urls_and_a_multiline_address_make_a_well_formed_mail(
    mail_env, infringing, runtime, monkeypatch
):
    """A URL carrying CRLF and header-like text, an address with line breaks and markup: the
    mail has its own headers only, each value on one line of the text."""
    hostile = f"http://{SITE}:8/x\r\nBcc: victim@else.test\r\n\r\nSubject: forged"
    span = {"page_start": 0, "page_end": 9, "text": "正文\r\nFrom: forged"}
    found = {"doc_id": "书/0007", "work": "书\r\nX-Evil: 1", "title": "第7章",
             "score": 0.9, "coverage": 0.8, "spans": [span]}  # fmt: skip
    MatchStore(runtime.db).record(hostile, [found])
    PageStore(runtime.db).save(PageRecord(url=hostile, text="正文", matched=["书/0007"]))
    address = "北京市朝阳区\r\n某某路 1 号\n<b>三楼</b>\nBcc: victim@else.test"
    monkeypatch.setenv("TRACKER_RIGHTS_HOLDER_ADDRESS", address)
    assert main(["notices", "send", "--site", SITE]) == 0
    (raw,) = mail_env.raw
    (envelope,) = mail_env.envelopes
    assert envelope[1] == ["abuse@pirate.test"]  # no recipient smuggled in
    message = message_from_bytes(raw, policy=policy.default)
    assert sorted(set(message.keys())) == sorted(
        {"From", "To", "Subject", "Date", "Message-ID", "X-Tracker-Notice", "Content-Type",
         "Content-Transfer-Encoding", "MIME-Version"}
    )  # fmt: skip
    assert message.defects == [] and all(part.defects == [] for part in message.walk())
    body = text_of(message)
    assert "地址：北京市朝阳区 某某路 1 号 <b>三楼</b> Bcc: victim@else.test" in body
    lines = body.splitlines()
    assert not any(line.startswith(("Bcc:", "Subject: forged", "From: forged", "X-Evil"))
                   for line in lines)  # fmt: skip
    assert f"http://{SITE}:8/x Bcc: victim@else.test Subject: forged" in body


# --------------------------------------------------------------------------- takedown history


def test_each_urls_takedown_history_in_the_report_and_the_console(
    mail_env, infringing, runtime, capsys
):
    """Noticed (when, to whom, the Message-ID), removed, come back: in the JSON report's pages
    (ISO 8601 UTC) and on the console's evidence page (in display_timezone)."""
    from fastapi.testclient import TestClient

    from tracker.console import create_app
    from tracker.console.users import Users

    assert main(["notices", "send", "--site", SITE]) == 0
    (message,) = mail_env.messages
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    removed_at, back_at = now - timedelta(hours=3), now - timedelta(hours=1)
    takedowns = TakedownStore(runtime.db)
    takedowns.record_checks([(URLS[0], "removed", 404, "HTTP 404", removed_at)])
    takedowns.record_checks([(URLS[0], "live", 200, "still copies", back_at)])
    capsys.readouterr()
    assert main(["report", "--format", "json"]) == 0
    pages = {page["url"]: page for page in json.loads(capsys.readouterr().out)["pages"]}
    history = pages[URLS[0]]["takedown"]
    (noticed,) = history["noticed"]
    assert (noticed["to"], noticed["message_id"]) == ("abuse@pirate.test", message["Message-ID"])
    assert datetime.fromisoformat(noticed["at"]).utcoffset() == timedelta(0)
    assert history["removed"] == [removed_at.isoformat()]
    assert history["reappeared"] == [back_at.isoformat()]
    assert history["state"] == "live"
    assert pages[URLS[1]]["takedown"]["removed"] == [] and pages[URLS[1]]["takedown"]["noticed"]

    Users(runtime.db).add("victor", "viewer", "viewer-pass")
    with TestClient(create_app(runtime.settings, runtime)) as client:
        page = client.get("/page", params={"url": URLS[0]}, auth=("victor", "viewer-pass"))
        fresh = client.get("/page", params={"url": URLS[2]}, auth=("victor", "viewer-pass"))
    assert page.status_code == 200
    section = page.text.split('<section class="takedown">', 1)[1].split("</section>", 1)[0]
    assert "abuse@pirate.test" in section and html.escape(message["Message-ID"]) in section
    # Shanghai is 8 hours ahead of UTC, all year.
    shanghai = timedelta(hours=8)
    assert f"{(removed_at + shanghai):%Y-%m-%d %H:%M}</td><td>removed" in section
    assert f"{(back_at + shanghai):%Y-%m-%d %H:%M}</td><td>reappeared" in section
    assert "Times in Asia/Shanghai (UTC+08:00)." in page.text
    assert "No takedown notice sent" not in section and fresh.status_code == 200


def test_an_operator_sets_a_sites_notice_language_in_the_console(mail_env, infringing, runtime):
    """Over its site file's; a viewer cannot, nor a form without its CSRF token."""
    from fastapi.testclient import TestClient

    from tracker.console import create_app
    from tracker.console.users import Users

    users = Users(runtime.db)
    users.add("olga", "operator", "operator-pass")
    users.add("victor", "viewer", "viewer-pass")
    operator, viewer = ("olga", "operator-pass"), ("victor", "viewer-pass")
    with TestClient(create_app(runtime.settings, runtime)) as client:
        page = client.get("/site", params={"name": SITE}, auth=operator).text
        assert "Chinese (侵权通知书)" in page
        assert (
            'action="/site/notice-language"'
            not in client.get("/site", params={"name": SITE}, auth=viewer).text
        )
        token = re.search(r'name="csrf" value="([0-9a-f]{64})"', page)[1]
        form = {"csrf": token, "site": SITE, "language": "en"}
        assert client.post("/site/notice-language", data=form, auth=viewer).status_code == 403
        forged = {**form, "csrf": "0" * 64}
        assert client.post("/site/notice-language", data=forged, auth=operator).status_code == 403
        bad = {**form, "language": "fr"}
        assert client.post("/site/notice-language", data=bad, auth=operator).status_code == 422
        done = client.post("/site/notice-language", data=form, auth=operator,
                           follow_redirects=False)  # fmt: skip
        assert done.status_code == 303
        assert (
            "English (DMCA-style)" in client.get("/site", params={"name": SITE}, auth=viewer).text
        )
    assert main(["notices", "send", "--site", SITE]) == 0
    (message,) = mail_env.messages
    assert "TAKEDOWN NOTICE" in text_of(message) and "侵权通知书" not in text_of(message)


def captured(runtime) -> list[dict]:
    """A capture of each of URLS (its WARC records written as a crawl writes them), named by
    the page's open match."""
    import time
    import uuid

    from tracker.enforcement.capture import Exchange, capture_document
    from tracker.enforcement.warc import EvidenceWriter, evidence_dir

    exchanges = [Exchange(url, "GET", [(b"User-Agent", b"ua")], 200,
                          [(b"Content-Type", b"text/html; charset=utf-8")],
                          f"<p>第{k}章 正文</p>".encode(), time.time(), "127.0.0.1")
                 for k, url in enumerate(URLS, start=1)]  # fmt: skip
    writer = EvidenceWriter(evidence_dir(runtime.settings))
    try:
        refs = writer.write([[exchange] for exchange in exchanges])
    finally:
        writer.close()
    captures = [capture_document(uuid.uuid4().hex, e.url, "h", [], [e], r, datetime.now(UTC))
                for e, r in zip(exchanges, refs, strict=True)]  # fmt: skip
    CaptureStore(runtime.db).add_many(captures)
    MatchStore(runtime.db).set_capture(
        {c["url"]: (c["_id"], c["payload_sha256"]) for c in captures}
    )
    return captures


def test_a_notice_kept_pending_is_sent_later_with_the_same_evidence_files(
    mail_env, infringing, runtime
):
    """The captures' manifests are attached (no TSA here: no token, said so); a notice the
    server refused goes out later with the very files it named."""
    captures = captured(runtime)
    mail_env.mode = "reject"
    assert main(["notices", "send", "--site", SITE]) == 1
    (pending,) = NoticeStore(runtime.db).pending(SITE)
    mail_env.mode = "ok"
    assert main(["notices", "send", "--site", SITE]) == 0
    (message,) = mail_env.messages
    assert message["Message-ID"] == pending["message_id"]
    files = {part.get_filename(): part.get_content() for part in message.iter_attachments()}
    assert sorted(files) == [f"evidence-{c['_id']}-manifest.json" for c in sorted(
        captures, key=lambda c: f"evidence-{c['_id']}")]  # fmt: skip
    for capture in captures:
        manifest = files[f"evidence-{capture['_id']}-manifest.json"]
        assert json.loads(manifest)["payload_sha256"] == capture["payload_sha256"]
        assert capture["payload_sha256"] in text_of(message)
    assert text_of(message).count("可信时间戳（RFC 3161）：无（未配置时间戳服务机构 tsa_url）") == 3


def test_notice_attachments_wacz_attaches_each_urls_wacz_and_its_stamped_digest(
    mail_env, infringing, runtime, monkeypatch, tmp_path, capsys
):
    """With ``notice_attachments: wacz`` each URL's WACZ (valid by py-wacz's own ``wacz
    validate``), its ``datapackage-digest.json`` and a token over it that openssl accepts go in
    place of the pair; the dry run names them and sends nothing; a notice the server refused
    goes out later with the very bytes it named (a WACZ made again would differ)."""
    import subprocess
    import sys
    import zipfile
    from dataclasses import replace
    from pathlib import Path

    from tests.tsa import LocalTsa, openssl_verify
    from tracker.enforcement.notices import draft_notice, kept_folder

    captures = captured(runtime)
    names = {c["_id"]: f"evidence-{c['_id']}" for c in captures}
    with LocalTsa(tmp_path / "tsa") as tsa:
        monkeypatch.setenv("TRACKER_TSA_URL", tsa.url)
        monkeypatch.setenv("TRACKER_TSA_CA_FILE", str(tsa.ca_file))
        monkeypatch.setenv("TRACKER_NOTICE_ATTACHMENTS", "wacz")
        capsys.readouterr()
        assert main(["notices", "send", "--site", SITE, "--dry-run"]) == 0
        printed = capsys.readouterr().out
        for name in names.values():
            assert f"{name}.wacz (application/wacz, " in printed
            assert f"{name}-datapackage-digest.json (application/json, " in printed
        assert "manifest.json (" not in printed and "datapackage-digest.tsr" in printed  # text
        assert mail_env.messages == [] and NoticeStore(runtime.db).of_site(SITE) == []
        # The draft names the same files, without making them.
        wacz_settings = replace(runtime.settings, notice_attachments="wacz")
        draft = draft_notice(runtime.db, wacz_settings, SITE)
        assert all(f"{name}.wacz" in draft for name in names.values())

        mail_env.mode = "reject"
        assert main(["notices", "send", "--site", SITE]) == 1
        (pending,) = NoticeStore(runtime.db).pending(SITE)
        folder = kept_folder(runtime.settings, pending["_id"])
        kept = {path.name: path.read_bytes() for path in folder.iterdir()}
        mail_env.mode = "ok"
        assert main(["notices", "send", "--site", SITE]) == 0
    (message,) = mail_env.messages
    assert message["Message-ID"] == pending["message_id"]
    files = {part.get_filename(): part.get_content() for part in message.iter_attachments()}
    assert files == kept
    assert sorted(files) == sorted(
        f"{name}{end}" for name in names.values()
        for end in (".wacz", "-datapackage-digest.json", "-datapackage-digest.tsr")
    )  # fmt: skip
    body = text_of(message)
    assert "openssl ts -verify -data datapackage-digest.json -in datapackage-digest.tsr" in body
    out = tmp_path / "saved"
    out.mkdir()
    for capture in captures:
        name = names[capture["_id"]]
        assert f"{name}.wacz" in body and f"{name}-datapackage-digest.tsr" in body
        wacz = out / f"{name}.wacz"
        wacz.write_bytes(files[f"{name}.wacz"])
        with zipfile.ZipFile(wacz) as archive:
            assert archive.testzip() is None
            package = json.loads(archive.read("datapackage.json"))
            assert archive.read("datapackage-digest.json") == files[
                f"{name}-datapackage-digest.json"]  # fmt: skip
            manifest = json.loads(archive.read("logs/manifest.json"))
        assert manifest["payload_sha256"] == capture["payload_sha256"]
        assert any(r["path"].startswith("archive/") for r in package["resources"])
        digest, token = out / f"{name}-digest.json", out / f"{name}-digest.tsr"
        digest.write_bytes(files[f"{name}-datapackage-digest.json"])
        token.write_bytes(files[f"{name}-datapackage-digest.tsr"])
        checked = openssl_verify(digest, token, tsa.ca_file)
        assert checked.returncode == 0, checked.stderr
    validated = subprocess.run(  # one is enough: py-wacz's own check of every file's hash
        [str(Path(sys.executable).with_name("wacz")), "validate", "-f", str(wacz)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert validated.returncode == 0, validated.stdout + validated.stderr
