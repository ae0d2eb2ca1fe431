"""``tracker notices send``: a site's takedown notice mailed to its abuse contact through a local
SMTP server (aiosmtpd: STARTTLS, login), recorded, never repeated within notice_repeat_days;
an SMTP server down, refusing or answering garbage leaves the notice pending, sent later; its
evidence passages are the daily drafts' (the pirate's inserted ad lines left out)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.smtp import LocalSmtp
from tracker.cli import main
from tracker.reports import build_report, to_notices
from tracker.reports.build import INSERTED
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
    smtp.messages.clear()
    yield smtp
    if smtp.mode in ("down", "garbage"):
        smtp.come_back()
    smtp.mode = "ok"


def text_of(message) -> str:
    """The decoded text of a notice mail (its first text/plain part)."""
    return message.get_body(("plain",)).get_content()


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
    draft = to_notices(build_report(runtime.db, datetime.now(UTC).date()))[SITE]
    assert f"{before} {INSERTED} {after}" in draft and "biquge" not in draft
