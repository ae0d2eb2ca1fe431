"""``tracker notices send``: a site's takedown notice mailed to its abuse contact through a local
SMTP server (aiosmtpd: STARTTLS, login), recorded, never repeated within notice_repeat_days;
an SMTP server down, refusing or answering garbage leaves the notice pending, sent later."""

from __future__ import annotations

import pytest

from tests.smtp import LocalSmtp
from tracker.cli import main
from tracker.stores.notices import NoticeStore
from tracker.stores.pages import MatchStore, PageRecord, PageStore
from tracker.stores.takedowns import TakedownStore

pytestmark = pytest.mark.integration

SITE = "127.0.0.1"
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
    smtp.messages.clear()
    yield smtp
    if smtp.mode in ("down", "garbage"):
        smtp.come_back()
    smtp.mode = "ok"


def test_send_records_and_does_not_repeat(mail_env, infringing, runtime, capsys):
    smtp = mail_env
    assert main(["notices", "send", "--site", SITE]) == 0
    (message,) = smtp.messages
    assert message["To"] == "abuse@pirate.test" and message["From"] == "legal@rights.test"
    assert smtp.logins  # logged in, after STARTTLS
    body = message.get_payload(decode=True).decode("utf-8")
    for url in URLS:
        assert url in body
    assert "old.html" not in body and "DRAFT" not in body and "[rights holder" not in body
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
