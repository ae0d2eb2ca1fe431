"""``tracker evidence export|verify|stamp``: a page's bundle, time-stamped by a local RFC 3161
TSA (``openssl ts -reply``), checked by ``verify`` and by ``openssl ts -verify``; tampering
caught; a TSA down or answering garbage leaves the stamp pending, and nothing is lost."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from datetime import UTC, datetime

import pytest

from tests.tsa import LocalTsa, openssl_verify
from tracker.cli import main
from tracker.enforcement.capture import Exchange, capture_document
from tracker.enforcement.warc import EvidenceWriter
from tracker.stores.evidence import CaptureStore

pytestmark = pytest.mark.integration

URL = "http://127.0.0.1:9/book/1.html"
BODY = "<html><body><div id=content>第一章 盗版的正文……</div></body></html>".encode()


@pytest.fixture(scope="module")
def tsa(tmp_path_factory):
    with LocalTsa(tmp_path_factory.mktemp("tsa")) as server:
        yield server


@pytest.fixture()
def captured(runtime, settings):
    """A page captured as the crawl captures it: its WARC records and captures document."""
    exchanges = [
        Exchange(
            url=URL,
            method="GET",
            request_headers=[(b"User-Agent", b"Mozilla/5.0 test"), (b"Cookie", b"sid=abc")],
            status=200,
            response_headers=[(b"Content-Type", b"text/html; charset=utf-8")],
            body=BODY,
            at=time.time(),
            ip="127.0.0.1",
        )
    ]
    (records,) = EvidenceWriter(settings.data_dir / "evidence").write([exchanges])
    span = {"page_start": 0, "page_end": 40, "text": "盗版的正文"}
    match = {"doc_id": "书/0001", "work": "书", "title": "第一章", "score": 0.97, "coverage": 0.9,
             "method": "shingle", "spans": [span]}  # fmt: skip
    document = capture_document(
        uuid.uuid4().hex, URL, "digest", [match], exchanges, records, datetime.now(UTC)
    )
    CaptureStore(runtime.db).add_many([document])
    return document


def test_export_and_verify(cli_env, captured, tsa, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("TRACKER_TSA_URL", tsa.url)
    out = tmp_path / "bundle"
    assert main(["evidence", "export", URL, "--out", str(out)]) == 0
    names = {path.name for path in out.iterdir()}
    warc = f"capture-{captured['_id']}.warc.gz"
    assert names == {"manifest.json", warc, "timestamp.tsr", "VERIFY.txt"}
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["url"] == URL and manifest["status"] == 200
    assert manifest["payload_sha256"] == hashlib.sha256(BODY).hexdigest()
    assert manifest["resolved_ip"] == "127.0.0.1"
    assert manifest["user_agent"] == "Mozilla/5.0 test"
    assert "Cookie" not in manifest["request_headers"]  # the crawl's session: WARC only
    assert manifest["matches"][0]["doc_id"] == "书/0001"
    assert manifest["matches"][0]["spans"][0]["text"] == "盗版的正文"
    assert manifest["warc"]["sha256"] == hashlib.sha256((out / warc).read_bytes()).hexdigest()
    # openssl accepts the token, and so does verify, up to the CA.
    checked = openssl_verify(out / "manifest.json", out / "timestamp.tsr", tsa.ca_file)
    assert checked.returncode == 0 and "Verification: OK" in checked.stdout, checked.stderr
    capsys.readouterr()
    assert main(["evidence", "verify", str(out), "--ca-file", str(tsa.ca_file)]) == 0
    assert "verified up to the CA" in capsys.readouterr().out
    # A second export writes the same manifest and the token kept with the capture.
    again = tmp_path / "again"
    queries = tsa.queries
    assert main(["evidence", "export", URL, "--out", str(again)]) == 0
    assert tsa.queries == queries
    for name in ("manifest.json", "timestamp.tsr", warc):
        assert (again / name).read_bytes() == (out / name).read_bytes()


@pytest.mark.parametrize("target", ["warc", "manifest.json", "timestamp.tsr"])
def test_verify_catches_a_flipped_byte(
    cli_env, captured, tsa, monkeypatch, tmp_path, capsys, target
):
    monkeypatch.setenv("TRACKER_TSA_URL", tsa.url)
    out = tmp_path / "bundle"
    assert main(["evidence", "export", URL, "--out", str(out)]) == 0
    name = f"capture-{captured['_id']}.warc.gz" if target == "warc" else target
    data = bytearray((out / name).read_bytes())
    data[len(data) // 2] ^= 0x01
    (out / name).write_bytes(bytes(data))
    capsys.readouterr()
    assert main(["evidence", "verify", str(out), "--ca-file", str(tsa.ca_file)]) == 1
    printed = capsys.readouterr().out
    assert "DIFFERS" in printed and "ALTERED" in printed


def test_verify_without_a_ca_checks_the_hash_and_says_so(cli_env, captured, tsa, monkeypatch,
                                                         tmp_path, capsys):  # fmt: skip
    monkeypatch.setenv("TRACKER_TSA_URL", tsa.url)
    out = tmp_path / "bundle"
    assert main(["evidence", "export", URL, "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["evidence", "verify", str(out)]) == 0
    assert "signature NOT checked" in capsys.readouterr().out
    other = LocalTsa(tmp_path / "other-pki")  # another CA: the signer is not its
    other.close()
    assert main(["evidence", "verify", str(out), "--ca-file", str(other.ca_file)]) == 1


@pytest.mark.parametrize(
    "mode", ["down", "garbage", "slow", "truncated", "other-hash", "other-nonce", "no-eku"]
)
def test_a_failing_tsa_leaves_the_stamp_pending(cli_env, captured, tsa, runtime, monkeypatch,
                                                tmp_path, capsys, mode):  # fmt: skip
    monkeypatch.setenv("TRACKER_TSA_URL", tsa.url)
    monkeypatch.setenv("TRACKER_TSA_TIMEOUT_S", "0.5")
    tsa.mode, tsa.delay = mode, 2.0
    out = tmp_path / "bundle"
    try:
        assert main(["evidence", "export", URL, "--out", str(out)]) == 1
    finally:
        tsa.mode = "ok"
    err = capsys.readouterr().err
    assert "pending" in err and tsa.url in err
    assert not (out / "timestamp.tsr").exists() and (out / "manifest.json").exists()
    stamp = CaptureStore(runtime.db).get(captured["_id"])["stamp"]
    assert stamp["state"] == "pending" and stamp["tries"] == 1
    # The retry stamps the very manifest the bundle holds; the next export adds the token.
    assert main(["evidence", "stamp", "--pending"]) == 0
    assert main(["evidence", "export", URL, "--out", str(out)]) == 0
    checked = openssl_verify(out / "manifest.json", out / "timestamp.tsr", tsa.ca_file)
    assert checked.returncode == 0, checked.stderr


def test_no_tsa_configured(cli_env, captured, tmp_path, capsys):
    out = tmp_path / "bundle"
    assert main(["evidence", "export", URL, "--out", str(out)]) == 1
    assert "no time-stamping authority is configured" in capsys.readouterr().err
    assert (out / "manifest.json").exists() and not (out / "timestamp.tsr").exists()
    assert main(["evidence", "verify", str(out)]) == 3  # intact, but not time-stamped
    assert "NOT STAMPED YET" in capsys.readouterr().out


def test_no_capture_is_an_error(cli_env, runtime, tmp_path, capsys):
    assert main(["evidence", "export", "http://127.0.0.1:9/none", "--out", str(tmp_path)]) == 2
    assert "no evidence captured for http://127.0.0.1:9/none" in capsys.readouterr().err
    assert main(["evidence", "verify", str(tmp_path)]) == 2


def test_a_lost_warc_file_is_an_error(cli_env, captured, settings, tmp_path, capsys):
    path = settings.data_dir / "evidence" / captured["parts"][0]["records"][0]["file"]
    path.unlink()
    assert main(["evidence", "export", URL, "--out", str(tmp_path / "b")]) == 2
    assert "is missing" in capsys.readouterr().err


def test_a_stamp_pending_too_long_is_alerted_once(
    cli_env, captured, tsa, runtime, monkeypatch, tmp_path, capsys
):
    """A TSA failing for over tsa_pending_alert_hours: `evidence stamp --pending` POSTs the
    stamp, with the TSA's last answer, to the alert webhook, once while it stays pending."""
    from datetime import timedelta

    from tests.webhook import LocalWebhook

    hook = LocalWebhook()
    monkeypatch.setenv("TRACKER_TSA_URL", tsa.url)
    monkeypatch.setenv("TRACKER_ALERT_WEBHOOK", hook.url)
    monkeypatch.setenv("TRACKER_TSA_PENDING_ALERT_HOURS", "24")
    store = CaptureStore(runtime.db)
    tsa.mode = "down"
    try:
        assert main(["evidence", "export", URL, "--out", str(tmp_path / "b")]) == 1
        assert main(["evidence", "stamp", "--pending"]) == 1
        assert hook.bodies == []  # failing, but not for 24 hours yet
        stamp = store.get(captured["_id"])["stamp"]
        earlier = stamp["failing_since"] - timedelta(hours=25)
        store.set_pending(captured["_id"], stamp["manifest"], stamp["error"], earlier, tsa.url)
        assert main(["evidence", "stamp", "--pending"]) == 1
        assert "1 pending for over 24 h alerted" in capsys.readouterr().out
        (body,) = hook.bodies
        (alerted,) = body["stamps"]
        assert body["event"] == "stamps_pending" and alerted["url"] == URL
        assert "HTTP 503" in alerted["error"] and tsa.url in alerted["error"]
        assert alerted["tries"] == 4
        assert main(["evidence", "stamp", "--pending"]) == 1
        assert len(hook.bodies) == 1  # not alerted again while pending
    finally:
        tsa.mode = "ok"
        hook.close()
    assert main(["evidence", "stamp", "--pending"]) == 0
    assert store.get(captured["_id"])["stamp"]["state"] == "stamped"


@pytest.mark.parametrize("kind", ["no-certs", "client-cert", "ber", "granted-with-mods"])
def test_tsas_of_other_kinds_through_the_cli(
    cli_env, captured, monkeypatch, tmp_path, capsys, kind
):
    """A TSA whose tokens carry no certificate (tsa_cert_file: the bundle carries it as
    tsa-certs.pem, for openssl's -untrusted), one asking for a TLS client certificate
    (tsa_client_cert), one answering BER, one answering grantedWithMods."""
    with LocalTsa(tmp_path / kind, kind) as server:
        monkeypatch.setenv("TRACKER_TSA_URL", server.url)
        monkeypatch.setenv("TRACKER_TSA_CA_FILE", str(server.ca_file))
        if kind == "no-certs":
            monkeypatch.setenv("TRACKER_TSA_CERT_FILE", str(server.pki.tsa_cert))
        if kind == "client-cert":
            monkeypatch.setenv("TRACKER_TSA_CLIENT_CERT", str(server.client_cert))
            monkeypatch.setenv("SSL_CERT_FILE", str(server.server_ca))
        out = tmp_path / "bundle"
        assert main(["evidence", "export", URL, "--out", str(out)]) == 0
    untrusted = out / "tsa-certs.pem" if kind == "no-certs" else None
    assert (untrusted is not None) == (out / "tsa-certs.pem").exists()
    assert (out / "tsa-ca.pem").read_bytes() == server.ca_file.read_bytes()
    checked = openssl_verify(
        out / "manifest.json", out / "timestamp.tsr", server.ca_file, untrusted
    )
    assert checked.returncode == 0 and "Verification: OK" in checked.stdout, checked.stderr
    guide = (out / "VERIFY.txt").read_text(encoding="utf-8")
    assert ("-untrusted tsa-certs.pem" in guide) == (kind == "no-certs")
    capsys.readouterr()
    assert main(["evidence", "verify", str(out), "--ca-file", str(server.ca_file)]) == 0
    assert "verified up to the CA" in capsys.readouterr().out


def test_the_daily_takedown_job_alerts_stamps_pending_too_long(
    cli_env, captured, tsa, runtime, monkeypatch, capsys
):
    from datetime import timedelta

    from tests.webhook import LocalWebhook

    hook = LocalWebhook()
    monkeypatch.setenv("TRACKER_TSA_URL", tsa.url)
    monkeypatch.setenv("TRACKER_ALERT_WEBHOOK", hook.url)
    store = CaptureStore(runtime.db)
    tsa.mode = "down"
    try:
        assert main(["evidence", "stamp", URL]) == 1  # pending, since now
        stamp = store.get(captured["_id"])["stamp"]
        since = stamp["failing_since"] - timedelta(hours=30)
        store.set_pending(captured["_id"], stamp["manifest"], stamp["error"], since)
        assert main(["run-job", "takedown"]) == 1  # the stamp is still pending: a failed run
    finally:
        tsa.mode = "ok"
        hook.close()
    (body,) = hook.bodies
    assert body["event"] == "stamps_pending"
    assert [s["capture"] for s in body["stamps"]] == [captured["_id"]]
    assert "HTTP 503" in body["stamps"][0]["error"] and tsa.url in body["stamps"][0]["error"]
