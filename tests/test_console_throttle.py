"""Password guessing against the console (issue 28): failed sign-ins counted per account and
per client address in the real Redis, locks answered 429 with ``Retry-After`` and growing,
the right password refused while they last, other users unaffected. Time is the test's own
clock, so no test waits for a lock to end."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from fastapi.testclient import TestClient

from tracker.console import create_app
from tracker.console.throttle import LoginThrottle, subject_address
from tracker.console.users import Users

pytestmark = pytest.mark.integration

ALICE = ("alice", "alice's long passphrase")
BOB = ("bob", "bob's long passphrase")


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture()
def clock() -> Clock:
    return Clock()


def console_client(settings, runtime, clock: Clock, address: str = "192.0.2.10") -> TestClient:
    """A console on the test's servers, its throttle on ``clock``, called from ``address``."""
    app = create_app(settings, runtime)
    app.state.console.auth.throttle.clock = clock
    return TestClient(app, client=(address, 50000))


@pytest.fixture()
def users(runtime) -> None:
    store = Users(runtime.db)
    store.add(*ALICE[:1], "viewer", ALICE[1])
    store.add(*BOB[:1], "operator", BOB[1])


def test_twelve_wrong_passwords_lock_the_account_and_only_it(settings, runtime, users, clock):
    with console_client(settings, runtime, clock) as client:
        assert client.get("/api/jobs", auth=ALICE).status_code == 200
        answers = [client.get("/api/jobs", auth=("alice", f"wrong {i}")) for i in range(12)]
        assert [a.status_code for a in answers] == [401] * 4 + [429] * 8
        locked = answers[-1]
        assert locked.headers["retry-after"] == "60"
        assert locked.json()["error"].startswith("too many failed sign-ins")
        assert "1 minute" in locked.json()["error"]
        right = client.get("/api/jobs", auth=ALICE)  # remembered from before, and refused
        assert right.status_code == 429 and int(right.headers["retry-after"]) <= 60
        assert client.get("/api/jobs", auth=BOB).status_code == 200  # another user

        clock.now += 30
        assert client.get("/api/jobs", auth=ALICE).headers["retry-after"] == "30"
        clock.now += 31
        assert client.get("/api/jobs", auth=("alice", "wrong again")).status_code == 429
        doubled = client.get("/api/jobs", auth=ALICE)
        assert doubled.status_code == 429 and doubled.headers["retry-after"] == "120"
        clock.now += 121
        assert client.get("/api/jobs", auth=ALICE).status_code == 200  # and the count reset
        answers = [client.get("/api/jobs", auth=("alice", f"wrong {i}")) for i in range(4)]
        assert [a.status_code for a in answers] == [401] * 4


def test_the_form_says_how_long_to_wait(settings, runtime, users, clock):
    with console_client(settings, runtime, clock) as client:

        def sign_in(password: str):
            form = client.get("/login")
            token = re.search(r'name="token" value="([0-9a-f]+)"', form.text)[1]
            data = {"name": "alice", "password": password, "token": token, "next": "/"}
            return client.post("/login", data=data, follow_redirects=False)

        assert [sign_in(f"wrong {i}").status_code for i in range(4)] == [401] * 4
        locked = sign_in("wrong 5")
        assert locked.status_code == 429 and locked.headers["retry-after"] == "60"
        assert "Too many failed sign-ins" in locked.text and "try again in 1 minute" in locked.text
        assert sign_in(ALICE[1]).status_code == 429  # the right password, while locked
        clock.now += 60.5
        assert sign_in(ALICE[1]).status_code == 303  # signed in: the session cookie is set


def test_one_address_guessing_many_accounts_is_locked_out(settings, runtime, users, clock):
    settings = replace(settings, console_login_address_failures=8)
    with console_client(settings, runtime, clock, "198.51.100.7") as guesser:
        names = [f"user{i}" for i in range(8)]  # 1 failure each: no account is locked
        answers = [guesser.get("/api/jobs", auth=(name, "guess")) for name in names]
        assert [a.status_code for a in answers] == [401] * 7 + [429]
        assert guesser.get("/api/jobs", auth=BOB).status_code == 429  # from this address
        with console_client(settings, runtime, clock, "203.0.113.5") as elsewhere:
            assert elsewhere.get("/api/jobs", auth=BOB).status_code == 200
            assert elsewhere.get("/api/jobs", auth=("user1", "guess")).status_code == 401
        clock.now += 61
        assert guesser.get("/api/jobs", auth=BOB).status_code == 200
        # A success does not clear the address: one more failure locks it again, for longer.
        assert guesser.get("/api/jobs", auth=("user9", "guess")).headers["retry-after"] == "120"


def test_forwarded_addresses_count_only_from_a_trusted_proxy(settings, runtime, users, clock):
    """X-Forwarded-For names the client only when uvicorn trusts the peer that sent it (its
    ProxyHeadersMiddleware, which ``tracker serve`` runs with ``--forwarded-allow-ips``)."""
    from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

    settings = replace(settings, console_login_address_failures=3)
    app = create_app(settings, runtime)
    app.state.console.auth.throttle.clock = clock
    proxied = ProxyHeadersMiddleware(app, trusted_hosts="192.0.2.1")
    with TestClient(proxied, client=("192.0.2.1", 50000)) as proxy:
        for i in range(3):  # three clients behind the proxy, one failure each
            forwarded = {"X-Forwarded-For": f"203.0.113.{i}"}
            answer = proxy.get("/api/jobs", auth=(f"user{i}", "guess"), headers=forwarded)
            assert answer.status_code == 401
    with TestClient(proxied, client=("198.51.100.9", 50000)) as direct:
        for i in range(3):  # one client naming itself three ways: one address
            forwarded = {"X-Forwarded-For": f"203.0.113.{i + 10}"}
            answer = direct.get("/api/jobs", auth=(f"user{i + 10}", "guess"), headers=forwarded)
        assert answer.status_code == 429  # the address's third failure: locked


def test_the_state_is_shared_by_the_workers_and_expires(settings, runtime, users, clock):
    """Two consoles on one Redis (two uvicorn workers, two machines) count together."""
    with (
        console_client(settings, runtime, clock) as first,
        console_client(settings, runtime, clock) as second,
    ):
        for i in range(5):
            client = (first, second)[i % 2]
            client.get("/api/jobs", auth=("alice", f"wrong {i}"))
        assert first.get("/api/jobs", auth=ALICE).status_code == 429
        assert second.get("/api/jobs", auth=ALICE).status_code == 429
    keys = list(runtime.redis.scan_iter(match=settings.redis_prefix + "login:*"))
    assert len(keys) == 2  # the account and the address
    assert all(0 < runtime.redis.ttl(key) <= 60 + 900 for key in keys)


def test_limits_are_settings(settings, runtime, clock):
    throttle = LoginThrottle.from_settings(
        runtime.redis, replace(settings, console_login_failures=2, console_login_lock_s=5), clock
    )
    assert throttle.failed("carol", "192.0.2.1") == 0
    assert throttle.failed("carol", "192.0.2.1") == 5
    assert throttle.wait("carol", "192.0.2.1") == 5
    assert throttle.failed("carol", "192.0.2.1") == 10  # doubling (refused attempts aside)
    clock.now += 10
    assert throttle.wait("carol", "192.0.2.1") == 0
    for _ in range(20):
        throttle.failed("carol", "192.0.2.1")
    assert throttle.wait("carol", "192.0.2.1") == 3600  # capped
    throttle.succeeded("carol")
    assert throttle.wait("carol", "192.0.2.1") == 0


def test_addresses_are_counted_per_host_and_ipv6_per_64():
    assert subject_address("192.0.2.1") == "192.0.2.1"
    assert subject_address("2001:db8:1:2:aaaa::1") == subject_address("2001:db8:1:2:bbbb::9")
    assert subject_address("2001:db8:1:2::1") == "2001:db8:1:2::/64"
    assert subject_address("::ffff:192.0.2.1") == "192.0.2.1"
    assert subject_address("testclient") == "testclient"
