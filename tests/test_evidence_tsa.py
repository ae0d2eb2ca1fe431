"""RFC 3161 tokens of every kind a standard verifier accepts, from local ``openssl ts -reply``
TSAs each with its own CA (tests/tsa.py), and saved tokens of real public TSAs; and the bad
answers refused with an error naming the TSA."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tsa import PROFILES, LocalTsa, Profile, openssl_verify
from tracker.enforcement.timestamp import Tsa, TsaError, parse, stamp, verify_token

DATA = '{"url": "http://pirate.test/1.html", "正文": "第一章"}\n'.encode()
FIXTURES = Path(__file__).parent / "fixtures" / "tsa"


@pytest.fixture(scope="module")
def tsas(tmp_path_factory):
    """One local TSA of each kind, started on first use."""
    started: dict[str, LocalTsa] = {}

    def get(name: str) -> LocalTsa:
        if name not in started:
            started[name] = LocalTsa(tmp_path_factory.mktemp(name), name)
        return started[name]

    yield get
    for server in started.values():
        server.close()


def configured(server: LocalTsa, **changes) -> Tsa:
    """The settings a user gives for ``server``: its URL, CA, and for a TSA whose tokens carry
    no certificate its own certificate; its client certificate when it asks for one."""
    return Tsa(
        server.url,
        5.0,
        str(changes.get("ca_file", server.ca_file)),
        str(server.pki.tsa_cert) if server.profile.certs == "none" else "",
        str(server.client_cert) if server.profile.client_ca else "",
    )


@pytest.mark.parametrize("name", list(PROFILES))
def test_every_kind_of_tsa_stamps_and_verifies(tsas, name, tmp_path, monkeypatch):
    server = tsas(name)
    if server.profile.client_ca:
        monkeypatch.setenv("SSL_CERT_FILE", str(server.server_ca))
    token = stamp(DATA, configured(server))
    assert token.signer == f"CN=Test TSA {name}"
    (tmp_path / "manifest.json").write_bytes(DATA)
    (tmp_path / "timestamp.tsr").write_bytes(token.response)
    untrusted = server.pki.tsa_cert if server.profile.certs == "none" else None
    checked = openssl_verify(
        tmp_path / "manifest.json", tmp_path / "timestamp.tsr", server.ca_file, untrusted
    )
    assert checked.returncode == 0 and "Verification: OK" in checked.stdout, checked.stderr
    check = verify_token(token.response, DATA, server.ca_file, untrusted)
    assert check.ok and check.chain, check.message
    assert not verify_token(token.response, DATA + b" ", server.ca_file, untrusted).ok


@pytest.mark.parametrize("name", ["chain", "ber"])
def test_tokens_the_strict_der_parser_refuses_are_the_ones_reencoded(tsas, name):
    """The chain-order and BER tokens are what rfc3161-client's own parser refuses: the test
    above covers the case of the issue, not a token that would have passed anyway."""
    from rfc3161_client import decode_timestamp_response

    server = tsas(name)
    token = stamp(DATA, configured(server))
    with pytest.raises(Exception):  # noqa: B017 (the parser's own error type)
        decode_timestamp_response(token.response)
    assert parse(token.response).tst_info.serial_number == token.serial


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("other-hash", "another hash"),
        ("other-nonce", "nonce"),
        ("no-eku", "timeStamping"),
        ("truncated", "not an RFC 3161 time-stamp response"),
        ("garbage", "not an RFC 3161 time-stamp response"),
        ("down", "HTTP 503"),
    ],
)
def test_bad_answers_are_refused_naming_the_tsa(tsas, mode, said):
    server = tsas("chain")
    server.mode = mode
    try:
        for ca in (str(server.ca_file), ""):  # refused with or without a CA configured
            with pytest.raises(TsaError, match=said) as raised:
                stamp(DATA, Tsa(server.url, 5.0, ca))
            assert server.url in str(raised.value)
    finally:
        server.mode = "ok"


def test_an_expired_certificate_is_refused(tmp_path):
    with LocalTsa(tmp_path / "expired", Profile("expired", expired=True)) as server:
        for ca in (str(server.ca_file), ""):
            with pytest.raises(TsaError, match="not valid when it signed"):
                stamp(DATA, Tsa(server.url, 5.0, ca))


def test_a_token_of_another_ca_is_refused(tsas):
    server, other = tsas("ecdsa"), tsas("signer-only")
    with pytest.raises(TsaError, match="does not verify up to the CA") as raised:
        stamp(DATA, configured(server, ca_file=other.ca_file))
    assert server.url in str(raised.value)
    # A token without certificates, with a TSA certificate of another CA configured.
    bare = tsas("no-certs")
    wrong = Tsa(bare.url, 5.0, str(other.ca_file), str(bare.pki.tsa_cert))
    with pytest.raises(TsaError, match="does not verify"):
        stamp(DATA, wrong)


def test_a_token_without_certificates_needs_the_tsa_certificate(tsas):
    server = tsas("no-certs")
    with pytest.raises(TsaError, match="tsa_cert_file"):
        stamp(DATA, Tsa(server.url, 5.0, str(server.ca_file)))


def test_basic_auth_and_client_certificates_are_required(tsas, monkeypatch):
    server = tsas("basic-auth")
    with pytest.raises(TsaError, match="HTTP 401") as raised:
        stamp(DATA, Tsa(server.plain_url, 5.0, str(server.ca_file)))
    assert "s3cret" not in str(raised.value)
    wrong = Tsa(server.url.replace("s3cret", "wrong"), 5.0, str(server.ca_file))
    with pytest.raises(TsaError, match="HTTP 401") as raised:
        stamp(DATA, wrong)
    assert "wrong" not in str(raised.value) and "***" in str(raised.value)  # password masked
    tls = tsas("client-cert")
    monkeypatch.setenv("SSL_CERT_FILE", str(tls.server_ca))
    with pytest.raises(TsaError, match="cannot be reached"):
        stamp(DATA, Tsa(tls.url, 5.0, str(tls.ca_file)))  # no client certificate


@pytest.mark.parametrize(
    ("token", "root", "tsa_cert", "hash_name", "signer"),
    [
        ("identrust-sha512.tsr", "identrust-root.pem", None, "sha512", "TrustID Timestamp"),
        ("sigstage-sha384.tsr", "sigstage-root.pem", None, "sha384", "sigstore-tsa"),
        ("sigstage-no-certs.tsr", "sigstage-root.pem", "sigstage-tsa.pem", "sha256", "sigstore"),
    ],
)
def test_saved_tokens_of_real_tsas_verify(token, root, tsa_cert, hash_name, signer):
    """Tokens of IdenTrust's and Sigstore's public TSAs over b"hello" (fixtures/tsa/README)."""
    reply = (FIXTURES / token).read_bytes()
    cert = FIXTURES / tsa_cert if tsa_cert else None
    check = verify_token(reply, b"hello", FIXTURES / root, cert)
    assert check.ok and check.chain and check.hash_name == hash_name, check.message
    assert signer in check.signer
    assert not verify_token(reply, b"hellO", FIXTURES / root, cert).ok
    other = "sigstage-root.pem" if root == "identrust-root.pem" else "identrust-root.pem"
    assert not verify_token(reply, b"hello", FIXTURES / other, cert).ok
