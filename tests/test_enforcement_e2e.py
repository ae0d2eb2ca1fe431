"""From a copy found to a copy taken down, end to end, against a local pirate site, a local RFC
3161 TSA (``openssl ts -reply``), a local SMTP server (aiosmtpd) and a local webhook:

* a crawl alerts all 8 copies;
* ``notices send --dry-run`` prints the 侵权通知书 readably, sending nothing; then ``notices
  send`` delivers one mail: in Chinese, naming the rights holder, the work and the 8 URLs, each
  with its capture's SHA-256 and RFC 3161 time-stamp, its ``manifest.json`` and
  ``timestamp.tsr`` attached (``openssl ts -verify`` accepts them); the dry run's text is the
  mail's;
* ``report --format csv`` starts with a UTF-8 byte-order mark;
* after the site removes 4 pages and rewrites 2, the evidence bundle of a removed page holds
  exactly the bytes served and its token verifies (``openssl ts -verify`` too); ``evidence
  verify`` catches a flipped byte;
* ``tracker takedown check``: 8 noticed, 6 removed, 2 live, rate 0.75; after one page comes
  back: reappeared 1, live 3, removed 5; the report's ``takedown`` says the same.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from tests.pirate import PirateSite
from tests.smtp import LocalSmtp
from tests.test_crawl_novel import crawl
from tests.tsa import LocalTsa, openssl_verify
from tests.webhook import LocalWebhook
from tracker.cli import main
from tracker.enforcement.warc import parse_records
from tracker.matching.library import MasterLibrary

pytestmark = pytest.mark.integration

HOLDER = {
    "TRACKER_RIGHTS_HOLDER_NAME": "杭州某某网络文学有限公司",
    "TRACKER_RIGHTS_HOLDER_CONTACT": "版权部 0571-88888888 legal@rights.test",
    "TRACKER_RIGHTS_HOLDER_ADDRESS": "浙江省杭州市西湖区某某路 8 号",
}


def takedown_status(capsys) -> dict:
    capsys.readouterr()
    assert main(["takedown", "status", "--json"]) == 0
    (site,) = json.loads(capsys.readouterr().out)["takedown"]
    return site


def enforcing(pirate: PirateSite, smtp: LocalSmtp, tmp_path, monkeypatch, **env: str) -> None:
    """The pirate site's file (its abuse contact), the working folder, and the settings of
    mail (the local SMTP server) and takedown checks, with ``env`` besides."""
    (tmp_path / "sites").mkdir()
    (tmp_path / "sites" / "pirate.yaml").write_text(
        f"name: pirate\nstart_urls: ['{pirate.url}book/']\nabuse_contact: abuse@pirate.test\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    for name, value in {
        "TRACKER_SMTP_URL": smtp.url,
        "TRACKER_SMTP_FROM": "legal@rights.test",
        "TRACKER_TAKEDOWN_DELAY_S": "0",
        "SSL_CERT_FILE": str(smtp.ca_file),
        **HOLDER,
        **env,
    }.items():
        monkeypatch.setenv(name, value)


def test_from_copy_found_to_copy_taken_down(
    runtime, settings, cli_env, monkeypatch, tmp_path, capsys
):
    pirate = PirateSite(8)
    tsa = LocalTsa(tmp_path / "tsa")
    smtp = LocalSmtp(tmp_path / "smtp")
    hook = LocalWebhook()
    try:
        enforcing(
            pirate, smtp, tmp_path, monkeypatch, TRACKER_ALERT_WEBHOOK=hook.url,
            TRACKER_ALERT_INTERVAL_S="0.5", TRACKER_TSA_URL=tsa.url,
        )  # fmt: skip
        MasterLibrary.from_runtime(runtime).ingest(pirate.masters)
        urls = [pirate.page_url(k) for k in range(1, 9)]

        # The crawl alerts all 8 copies.
        alerting = replace(settings, alert_webhook=hook.url, alert_interval_s=0.5)
        crawl("novel", alerting, tmp_path, {"start_url": pirate.url + "book/"})
        alerted = hook.copies()
        assert sorted(c["url"] for c in alerted) == sorted(urls)
        assert {c["site"] for c in alerted} == {"127.0.0.1"}
        assert sorted(d for c in alerted for d in c["doc_ids"]) == [
            m.doc_id for m in pirate.masters
        ]

        # The dry run shows the notice as a person reads it, and sends nothing.
        capsys.readouterr()
        assert main(["notices", "send", "--site", "127.0.0.1", "--dry-run"]) == 0
        printed = capsys.readouterr().out
        assert smtp.messages == [] and "侵权通知书" in printed and "=?utf-8?" not in printed
        assert all(url in printed for url in urls)

        # One mail: in Chinese, the rights holder, the work, the 8 URLs with their evidence.
        assert main(["notices", "send", "--site", "127.0.0.1"]) == 0
        (mail,) = smtp.messages
        body = mail.get_body(("plain",)).get_content().replace("\r\n", "\n")
        assert mail["To"] == "abuse@pirate.test" and "通知书" in mail["Subject"]
        assert "通知书" in body and all(value in body for value in HOLDER.values())
        assert f"《{pirate.masters[0].work}》" in body
        blocks = dict(re.findall(r"^\d+\. 网络地址：(\S+)\n(.*?)(?=^\d+\. |^证据核验)", body,
                                 re.M | re.S))  # fmt: skip
        assert sorted(blocks) == sorted(urls)
        for block in blocks.values():
            assert re.search(r"抓取响应的 SHA-256：[0-9a-f]{64}$", block, re.M)
            assert re.search(r"可信时间戳（RFC 3161）：\d{4}-\d{2}-\d{2} \d{2}:\d{2}，", block)
        files = {part.get_filename(): part.get_content() for part in mail.iter_attachments()}
        manifests = sorted(name for name in files if name.endswith("-manifest.json"))
        tokens = sorted(name for name in files if name.endswith("-timestamp.tsr"))
        assert len(manifests) == len(tokens) == 8 and len(files) == 16
        (tmp_path / "mailed").mkdir()
        for name in (manifests[0], tokens[0]):
            (tmp_path / "mailed" / name).write_bytes(files[name])
        mailed = openssl_verify(tmp_path / "mailed" / manifests[0],
                                tmp_path / "mailed" / tokens[0], tsa.ca_file)  # fmt: skip
        assert mailed.returncode == 0 and "Verification: OK" in mailed.stdout
        # The dry run printed that very text (it could not know the stamps' times yet).
        shown = printed.split("\n\n", 1)[1].rsplit("\n\nAttachments (", 1)[0]

        def comparable(text: str) -> str:
            text = re.sub(r"^ *可信时间戳.*\n|^ *证据包.*\n", "", text, flags=re.M)
            return re.sub(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}", "DATE", text)

        assert comparable(shown + "\n") == comparable(body)

        # The CSV a legal team opens in Excel: a UTF-8 byte-order mark first.
        capsys.readouterr()
        assert main(["report", "--format", "csv"]) == 0
        assert capsys.readouterr().out.startswith("\ufeffdate,")

        # The site removes 4 pages and rewrites 2.
        served = pirate.bodies[pirate.paths[0]]
        for k in (1, 2, 3, 4):
            pirate.remove(k)
        for k in (5, 6):
            pirate.rewrite(k)

        # The bundle of a removed page: exactly the bytes served, a token that verifies.
        out = tmp_path / "bundle"
        assert main(["evidence", "export", urls[0], "--out", str(out)]) == 0
        manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
        warc = (out / manifest["warc"]["file"]).read_bytes()
        response = next(r for r in parse_records(warc) if r.type == "response")
        assert response.payload == served and response.target_uri == urls[0]
        checked = openssl_verify(out / "manifest.json", out / "timestamp.tsr", tsa.ca_file)
        assert checked.returncode == 0 and "Verification: OK" in checked.stdout
        assert main(["evidence", "verify", str(out), "--ca-file", str(tsa.ca_file)]) == 0
        flipped = bytearray(warc)
        flipped[len(flipped) // 3] ^= 0x20
        (out / manifest["warc"]["file"]).write_bytes(bytes(flipped))
        assert main(["evidence", "verify", str(out), "--ca-file", str(tsa.ca_file)]) == 1

        # The takedown check: 8 noticed, 6 removed, 2 live.
        capsys.readouterr()
        assert main(["takedown", "check"]) == 0
        site = takedown_status(capsys)
        assert (site["noticed"], site["removed"], site["live"], site["reappeared"]) == (8, 6, 2, 0)
        assert site["removal_rate"] == 0.75
        assert site["median_hours_to_removal"] is not None

        # One page comes back: reappeared 1, live 3, removed 5.
        pirate.restore(1)
        assert main(["takedown", "check"]) == 0
        site = takedown_status(capsys)
        assert (site["noticed"], site["removed"], site["live"], site["reappeared"]) == (8, 5, 3, 1)
        assert site["removal_rate"] == 0.625

        # The report says the same.
        assert main(["report", "--format", "json"]) == 0
        report = json.loads(capsys.readouterr().out)
        (entry,) = report["takedown"]
        assert {k: entry[k] for k in ("site", "noticed", "removed", "live", "reappeared")} == {
            "site": "127.0.0.1",
            "noticed": 8,
            "removed": 5,
            "live": 3,
            "reappeared": 1,
        }
        assert entry["removal_rate"] == 0.625
    finally:
        hook.close()
        smtp.close()
        tsa.close()
        pirate.close()


FIVE = ["chain", "ecdsa", "sha512-named", "basic-auth", "signer-only"]


def test_five_tsas_through_the_takedown_loop(
    runtime, settings, cli_env, monkeypatch, tmp_path, capsys
):
    """After a crawl, the notice and the pages' removal, each removed page's evidence exported
    against one of five local TSAs (each its own CA): ``openssl ts -verify`` accepts
    ``timestamp.tsr``, ``evidence verify --ca-file`` exits 0; the WACZ export verifies too (and
    passes ``wacz validate``); VERIFY.txt gives the steps in Chinese and English."""
    pirate = PirateSite(len(FIVE))
    smtp = LocalSmtp(tmp_path / "smtp")
    tsas = {name: LocalTsa(tmp_path / name, name) for name in FIVE}
    try:
        enforcing(pirate, smtp, tmp_path, monkeypatch)
        MasterLibrary.from_runtime(runtime).ingest(pirate.masters)
        crawl("novel", settings, tmp_path, {"start_url": pirate.url + "book/"})
        assert main(["notices", "send", "--site", "127.0.0.1"]) == 0
        for k in range(1, len(FIVE) + 1):
            pirate.remove(k)
        assert main(["takedown", "check"]) == 0
        assert takedown_status(capsys)["removed"] == len(FIVE)

        for k, name in enumerate(FIVE, 1):
            tsa = tsas[name]
            monkeypatch.setenv("TRACKER_TSA_URL", tsa.url)
            monkeypatch.setenv("TRACKER_TSA_CA_FILE", str(tsa.ca_file))
            url, out = pirate.page_url(k), tmp_path / f"bundle-{name}"
            assert main(["evidence", "export", url, "--out", str(out)]) == 0, name
            checked = openssl_verify(out / "manifest.json", out / "timestamp.tsr", tsa.ca_file)
            assert checked.returncode == 0 and "Verification: OK" in checked.stdout, name
            capsys.readouterr()
            assert main(["evidence", "verify", str(out), "--ca-file", str(tsa.ca_file)]) == 0
            printed = capsys.readouterr().out
            assert "$ openssl ts -verify -data manifest.json -in timestamp.tsr" in printed
            assert "verified up to the CA" in printed
            guide = (out / "VERIFY.txt").read_text(encoding="utf-8")
            assert "核验步骤" in guide and "Steps:" in guide and f"Test TSA {name}" in guide
            assert "sha256sum capture-" in guide
            assert "openssl ts -verify -data manifest.json -in timestamp.tsr" in guide
            # The same steps by hand: the hashes VERIFY.txt gives are the files'.
            manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
            assert manifest["warc"]["sha256"] in guide

            wacz_dir = tmp_path / f"wacz-{name}"
            fmt = ["--format", "wacz"]
            assert main(["evidence", "export", url, "--out", str(wacz_dir), *fmt]) == 0
            (wacz,) = wacz_dir.glob("*.wacz")
            if k == 1:  # the package's layout does not depend on the TSA: validated once
                validated = subprocess.run(
                    [str(Path(sys.executable).with_name("wacz")), "validate", "-f", str(wacz)],
                    capture_output=True, text=True, check=False,
                )  # fmt: skip
                assert validated.returncode == 0, validated.stdout + validated.stderr
            checked = openssl_verify(
                wacz_dir / "datapackage-digest.json",
                wacz_dir / "datapackage-digest.tsr",
                tsa.ca_file,
            )
            assert checked.returncode == 0, checked.stderr
            capsys.readouterr()
            assert main(["evidence", "verify", str(wacz_dir), "--ca-file", str(tsa.ca_file)]) == 0
        # An altered WACZ is caught.
        data = bytearray(wacz.read_bytes())
        data[len(data) // 2] ^= 0x01
        wacz.write_bytes(bytes(data))
        assert main(["evidence", "verify", str(wacz_dir), "--ca-file", str(tsa.ca_file)]) == 1
    finally:
        for server in tsas.values():
            server.close()
        smtp.close()
        pirate.close()
