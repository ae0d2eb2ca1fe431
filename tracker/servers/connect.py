"""Reaching the servers: within :data:`SERVER_TIMEOUT_S`, or one line naming the server (its
URL, password masked) and the fix (:func:`describe`), for every command, the warm checker and the
console alike.

Commands that write check both servers before their first write (:func:`connect`), so that an
unreachable Redis does not leave a master stored in MongoDB and missing from the index.
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING

from tracker.config import Settings, mask_password
from tracker.servers.services import ServiceError

if TYPE_CHECKING:
    from tracker.servers.runtime import Runtime

#: How long a command waits for a configured server that does not answer (pymongo's own
#: default server selection timeout is 30 s, the runtime's 10 s).
SERVER_TIMEOUT_S = 3.0
#: An embedded server the command has just started may need a few seconds more before it
#: serves (SecantusDB checks its storage first).
EMBEDDED_TIMEOUT_S = 30.0


class ServerError(ServiceError):
    """A configured or embedded server cannot be reached or refused the command."""


def connect(settings: Settings, redis: bool = True, indexes_ensured: bool = False) -> Runtime:
    """A :class:`Runtime` whose MongoDB (and Redis, unless ``redis`` is False) answered a ping
    within :data:`SERVER_TIMEOUT_S` each (an embedded one, :data:`EMBEDDED_TIMEOUT_S`); raises
    :class:`ServerError` otherwise. ``indexes_ensured``: see :class:`Runtime`."""
    _without_pyopenssl(settings.mongo_url)
    import pymongo

    from tracker.servers.runtime import Runtime

    runtime = Runtime(settings, indexes_ensured=indexes_ensured)
    try:
        with pymongo.timeout(SERVER_TIMEOUT_S if settings.mongo_url else EMBEDDED_TIMEOUT_S):
            runtime.mongo.admin.command("ping")
        if redis:
            wait = SERVER_TIMEOUT_S if settings.redis_url else EMBEDDED_TIMEOUT_S
            _ping_redis(runtime.redis_url, settings.redis_cluster, wait)
    except Exception as exc:
        runtime.close()
        message = describe(exc, settings)
        if message is None:
            raise
        raise ServerError(message) from None
    return runtime


def _ping_redis(url: str, cluster: bool, wait: float) -> None:
    """Redis answers within ``wait`` seconds (a cluster: every primary)."""
    if cluster:
        from tracker.servers.redis_cluster import connect as connect_cluster

        probe = connect_cluster(url, socket_connect_timeout=wait, socket_timeout=wait)
        try:
            probe.ping(target_nodes=probe.PRIMARIES)
        finally:
            probe.close()
        return
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=wait, socket_timeout=wait)
    try:
        client.ping()
    finally:
        client.close()


def _without_pyopenssl(url: str | None) -> None:
    """Spare a command the 0.3 s of loading PyOpenSSL (cryptography, requests…), which
    pymongo loads whenever it is installed (Scrapy's dependency) for OCSP checks of TLS
    certificates, when the MongoDB URL does not ask for TLS: pymongo then falls back to the
    standard ``ssl`` module."""
    if "pymongo" in sys.modules:
        return
    url = (url or "").lower()
    if url.startswith("mongodb+srv://") or re.search(r"[?&](tls|ssl)=true", url):
        return
    sys.modules.setdefault("pymongo.pyopenssl_context", None)  # type: ignore[arg-type]


def describe(exc: BaseException, settings: Settings) -> str | None:
    """One line for a MongoDB or Redis error: which server, what happened, the fix; None for
    any other error."""
    module = type(exc).__module__
    if module == "tracker.servers.redis_cluster":  # a node failed: the message names it
        fix = "start it, or repair the cluster (CLUSTER NODES shows its state)"
        return f"{mask_password(str(exc))}; {fix}"
    if module.startswith(("pymongo", "bson")):
        name, url, env = "MongoDB", settings.mongo_url, "MONGO_URL"
    elif module.startswith("redis"):
        name, url, env = "Redis", settings.redis_url, "REDIS_URL"
    else:
        return None
    where = mask_password(url) if url else "the embedded server"
    reason = _reason(exc, SERVER_TIMEOUT_S if url else EMBEDDED_TIMEOUT_S)
    if "auth" in reason.lower() or type(exc).__name__ == "AuthenticationError":
        fix = f"check the user and password in {env}" if url else "run `tracker services stop`"
    elif "replica set name" in reason:
        fix = f"check the replicaSet= name in {env} (the set's members answer to another)"
    elif url:
        fix = f"start it, or set {env} to a server that runs"
    else:
        fix = "see `tracker services status`"
    return f"{name} at {where}: {reason}; {fix}"


def _reason(exc: BaseException, waited: float) -> str:
    text = str(exc).split("\n", 1)[0]
    # pymongo: "127.0.0.1:1: [Errno 111] Connection refused (configured timeouts: …), Timeout:
    # 4s, Topology Description: …"
    text = re.split(r" \(configured timeouts|, Timeout: |, full error: ", text, maxsplit=1)[0]
    text = re.sub(r"^\S+:\d+: ", "", text)  # the host is in the URL already
    text = re.sub(r"^\[Errno \d+\] |^Error \d+ connecting to \S+ ", "", text).rstrip(". ")
    if type(exc).__name__ == "ServerSelectionTimeoutError":
        text += f" (no answer within {waited:g} s)"
    return mask_password(text) or type(exc).__name__
