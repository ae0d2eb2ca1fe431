"""Throttling of password guessing: failed sign-ins counted per account and per client address
in Redis, so every worker of the console (and every console on the same Redis) sees them.

* **Locks.** After ``console_login_failures`` failures of an account (5), it is locked for
  ``console_login_lock_s`` (60 s), and each further failure locks it for twice as long as the
  one before, up to :data:`MAX_LOCK_S`; a client address gets ``console_login_address_failures``
  (50: many people may sign in from one office's address) before the same. While a lock lasts,
  every attempt is refused (HTTP 429 with ``Retry-After``), the right password too, and without
  checking it: a guesser costs no argon2 work. Attempts refused so are not counted.
* **Forgetting.** A subject's failures are forgotten :data:`WINDOW_S` after its last failure
  (or after the lock that failure set, when it ends later). A success clears the account's
  failures, never the address's: a guesser holding one account of their own could otherwise
  clear them between guesses.
* **Who.** An account is its name as typed (hashed into the key, whatever its length; names
  that do not exist are counted alike, so the answers say nothing about which do). The address
  is the one uvicorn resolved: the peer, or behind a proxy trusted with ``--forwarded-allow-ips``
  the client it forwards for (``X-Forwarded-For`` is ignored from anyone else). An IPv6 address
  counts as its /64, which one machine usually holds whole.

State: one Redis hash per subject (``<prefix>login:account:…``, ``<prefix>login:address:…``:
``failures`` and ``until``, the end of its lock in seconds since the epoch), with a TTL; each
failure is one Lua script on one key, so concurrent workers count every failure once, on a Redis
Cluster too. Times come from ``clock`` (tests pass their own).
"""

from __future__ import annotations

import hashlib
import ipaddress
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis

from tracker.config import Settings
from tracker.formats import duration

MAX_LOCK_S = 3600.0  # the longest lock, however many failures
WINDOW_S = 900.0  # failures are forgotten this long after the last one (or its lock) ends

# KEYS[1]: the subject's hash. ARGV: now, failures allowed, first lock, longest lock, window.
# Returns the lock this failure set, in seconds ("0": none).
_FAILED = """
local failures = redis.call('HINCRBY', KEYS[1], 'failures', 1)
local now, allowed = tonumber(ARGV[1]), tonumber(ARGV[2])
local lock = 0
if allowed > 0 and failures >= allowed then
  lock = math.min(tonumber(ARGV[3]) * 2 ^ (failures - allowed), tonumber(ARGV[4]))
  redis.call('HSET', KEYS[1], 'until', string.format('%.3f', now + lock))
end
redis.call('EXPIRE', KEYS[1], math.ceil(lock + tonumber(ARGV[5])))
return string.format('%.3f', lock)
"""


@dataclass(frozen=True)
class Limit:
    """Failures allowed before a lock (0: no limit), and the first lock's length."""

    failures: int
    lock_s: float


@dataclass(frozen=True)
class Standing:
    wait: float  # seconds before the account may try again from the address (0: now)
    failures: int  # the account's failures not yet forgotten


class Throttled(Exception):
    """Too many failed sign-ins for this account or address: try again in ``wait`` seconds."""

    def __init__(self, wait: float) -> None:
        super().__init__(f"locked for {wait:.0f} s")
        self.wait = wait

    @property
    def message(self) -> str:
        return (
            "too many failed sign-ins for this name or from this address: try again in "
            f"{duration(self.wait)}"
        )

    @property
    def retry_after(self) -> str:
        """The ``Retry-After`` header: whole seconds, rounded up."""
        return str(max(1, int(-(-self.wait // 1))))


class LoginThrottle:
    def __init__(
        self,
        client: redis.Redis,
        prefix: str,
        account: Limit,
        address: Limit,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.prefix = prefix
        self.account = account
        self.address = address
        self.clock = clock
        self._failed = client.register_script(_FAILED)

    @classmethod
    def from_settings(
        cls, client: redis.Redis, settings: Settings, clock: Callable[[], float] = time.time
    ) -> LoginThrottle:
        lock = float(max(1, settings.console_login_lock_s))
        return cls(
            client,
            settings.redis_prefix,
            Limit(settings.console_login_failures, lock),
            Limit(settings.console_login_address_failures, lock),
            clock,
        )

    def account_key(self, name: str) -> str:
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return f"{self.prefix}login:account:{digest}"

    def address_key(self, address: str) -> str:
        return f"{self.prefix}login:address:{subject_address(address)}"

    def standing(self, name: str, address: str) -> Standing:
        """How this account stands from this address: one round trip."""
        pipe = self.client.pipeline(transaction=False)
        pipe.hmget(self.account_key(name), ["until", "failures"])
        pipe.hget(self.address_key(address), "until")
        (account_until, failures), address_until = pipe.execute()
        now = self.clock()
        ends = [float(until) - now for until in (account_until, address_until) if until]
        return Standing(max([0.0, *ends]), int(failures or 0))

    def wait(self, name: str, address: str) -> float:
        """Seconds before this account may try again from this address (0: now)."""
        return self.standing(name, address).wait

    def failed(self, name: str, address: str) -> float:
        """Count a failed sign-in; the wait it leaves (0: none yet)."""
        now = self.clock()
        waits = [
            float(
                self._failed(
                    keys=[key],
                    args=[f"{now:.3f}", limit.failures, limit.lock_s, MAX_LOCK_S, WINDOW_S],
                )
            )
            for key, limit in (
                (self.account_key(name), self.account),
                (self.address_key(address), self.address),
            )
        ]
        return max(waits)

    def succeeded(self, name: str) -> None:
        """A sign-in of this account succeeded: its failures are forgotten."""
        self.client.delete(self.account_key(name))


def subject_address(address: str) -> str:
    """The address failures are counted for: an IPv4 address, an IPv6 address's /64, or
    (no IP: a test client, a Unix socket) the text as given, cut short."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address[:64] or "unknown"
    if ip.version == 6:
        if ip.ipv4_mapped:
            return str(ip.ipv4_mapped)
        return f"{ipaddress.ip_network(f'{ip}/64', strict=False).network_address}/64"
    return str(ip)
