"""Redis Cluster: the client, the slots the index's keys go to, and failures that name the node.

With ``redis_cluster`` on (``TRACKER_REDIS_CLUSTER=1``),
:attr:`tracker.servers.runtime.Runtime.redis` is redis-py's cluster client
(:class:`redis.cluster.RedisCluster`) on ``REDIS_URL``, any node of the cluster. A cluster keeps a
key in one of 16,384 hash slots (CRC16 of the key mod 16,384), each served by one primary, and
refuses a command whose keys lie in two slots (``MGET``, a Lua script's ``KEYS``, ``MULTI``): only
the part of a key between its first ``{`` and the next ``}``, its *hash tag*, is hashed when it has
one.

**The index's buckets** (tens of thousands per table) are spread by hash tags over
:data:`GROUPS` slots chosen one per 1/64 of the slot range (:func:`group_tags`): bucket ``b``
goes to group ``b mod 64``. Any contiguous split of the slots between nodes (what
``CLUSTER ADDSLOTSRANGE`` and ``valkey-cli --cluster create``/``rebalance`` make) then gives
each node the share of every table that it has of the slots (a table's keys were 34 %, 31 %
and 34 % on three nodes at 100,000 masters), and a batch of lookups costs one ``MGET`` per
group touched, each node's pipelined together (:func:`per_slot`), instead of one ``GET`` per
bucket: for 400 buckets of 300 bytes on loopback, 1.0 ms on 3 nodes against 0.9 ms for one
``MGET`` on one server, where a ``GET`` each took 4-8 ms. 16 groups instead of 64 cost about
the same: the round trip to each node is what a lookup pays. 64 groups bound how far one
table can spread: over at most 64 primaries.

**Singletons** (the library version and master count, written together in one ``MULTI``; the
page index's high-water mark; the count of mirror groups) and **locks** carry the tag
``{state}``: one slot, on one node.

**Failures.** The client of :func:`connect` turns a node that cannot be reached, or the
``CLUSTERDOWN`` its failure causes, into :class:`ClusterNodeError`, a
:class:`redis.exceptions.ConnectionError` whose message names the node(s) and their slots: a
lookup never returns empty buckets for a node that did not answer. A node that answers again
having lost writes is told by the marks each group of buckets keeps
(:meth:`tracker.index.storage.Storage.advance_marks`).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from typing import Any

import redis
from redis.cluster import ClusterNode, RedisCluster
from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot
from redis.exceptions import (
    AskError,
    ClusterDownError,
    RedisClusterException,
    SlotNotCoveredError,
    TryAgainError,
)

GROUPS = 64
STATE_TAG = "{state}"
PROBE_TIMEOUT_S = 2.0  # how long a node is given to answer when the cluster is down


class ClusterNodeError(redis.exceptions.ConnectionError):
    """A node of the Redis Cluster failed (unreachable, or the cluster is down because of
    it); ``nodes`` names them (``host:port``)."""

    def __init__(self, message: str, nodes: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.nodes = list(nodes)


def is_cluster(client: Any) -> bool:
    return isinstance(client, RedisCluster)


@cache
def group_tags() -> tuple[str, ...]:
    """:data:`GROUPS` hash tags, the ``g``-th hashing into slots ``[g, g + 1) × 16384 / 64``:
    the first string ``t<n>`` found for each range (a few hundred CRC16s, once)."""
    tags: list[str | None] = [None] * GROUPS
    missing, n = GROUPS, 0
    while missing:
        tag = f"t{n}"
        group = key_slot(tag.encode()) * GROUPS // REDIS_CLUSTER_HASH_SLOTS
        if tags[group] is None:
            tags[group] = tag
            missing -= 1
        n += 1
    return tuple(t for t in tags if t is not None)


def on_state_slot(client: Any, key: str) -> str:
    """``key`` on the ``{state}`` slot of a cluster, where the library state, the counters and
    the locks live together (unchanged on one server)."""
    return key + STATE_TAG if is_cluster(client) else key


def per_slot(
    client: RedisCluster, commands: Sequence[tuple[int, Sequence[Any]]], idempotent: bool = True
) -> list[Any]:
    """Run ``(slot, command arguments)`` pairs: each sent to its slot's primary, every node's
    commands pipelined on one of its connections, all nodes written before any is read.

    redis-py's cluster pipeline does the same with ~50 µs of bookkeeping per command: a
    chapter's lookup, one ``MGET`` for each of the 64 groups, took 3.1 ms through it against
    1.5 ms sent directly (best of 7, on this shared 2-core machine; 0.56 ms for one server).
    The commands a node did not run (its slot moved: ``MOVED``/``ASK``/``TRYAGAIN``; the
    cluster down; no connection) go again through redis-py's pipeline, which follows
    redirections, refreshes the slot table, retries, and raises what remains. A node lost
    after its commands were sent may or may not have run them: they are sent again only if
    ``idempotent`` (an ``APPEND`` twice would file a record twice); otherwise the node is
    named in a :class:`ClusterNodeError` (the library's journal then repairs the change).
    """
    with naming_failed_nodes(client):
        table = client.nodes_manager.slots_cache
        nodes: dict[str, tuple[ClusterNode, list[int]]] = {}
        for at, (slot, _) in enumerate(commands):
            owners = table.get(slot)
            if not owners:
                return _through_pipeline(client, commands)  # nothing sent yet
            nodes.setdefault(owners[0].name, (owners[0], []))[1].append(at)
        replies: list[Any] = [_UNSENT] * len(commands)
        for node, chosen, failure in _send_and_read(nodes.values(), commands, replies):
            if not idempotent:  # a node failed after its commands were sent
                _refresh(client)
                raise ClusterNodeError(
                    f"Redis Cluster node {node.name} (slots {slot_ranges(client, node)}) "
                    f"failed: {_first_line(failure)}",
                    [node.name],
                ) from failure
            for at in chosen:
                if replies[at] is _LOST:
                    replies[at] = _UNSENT
        again = [at for at, r in enumerate(replies) if r is _UNSENT or isinstance(r, _REFUSED)]
        if again:
            for at, reply in zip(
                again, _through_pipeline(client, [commands[at] for at in again]), strict=True
            ):
                replies[at] = reply
        return replies


_UNSENT, _LOST = object(), object()  # not run (safe to send again); may have run
_AWAY = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)
#: Replies of a node that did not run the command and tell where to send it again.
_REFUSED = (AskError, TryAgainError, ClusterDownError)


def _send_and_read(
    nodes: Iterable[tuple[ClusterNode, list[int]]],
    commands: Sequence[tuple[int, Sequence[Any]]],
    replies: list[Any],
) -> list[tuple[ClusterNode, list[int], BaseException]]:
    """Write each node's commands, then read all the replies into ``replies``: a redirection
    or ``CLUSTERDOWN`` (the command was not run) as its exception, a command whose node was
    lost after it was sent as ``_LOST``; returns ``(node, its commands, the error)`` of each
    node lost so. Any other error reply is raised once every reply is read."""
    sent: list[list] = []
    lost, error = [], None
    try:
        for node, chosen in nodes:
            pool = node.redis_connection.connection_pool
            try:
                connection = pool.get_connection()
            except _AWAY:
                continue  # nothing sent: its commands stay _UNSENT
            sent.append([node, chosen, pool, connection, None])
            try:
                packed = connection.pack_commands([commands[at][1] for at in chosen])
                connection.send_packed_command(packed, check_health=False)
            except _AWAY as exc:
                sent[-1][4] = exc
        for node, chosen, _, connection, failure in sent:
            for at in chosen:
                if failure is None:
                    try:
                        replies[at] = connection.read_response()
                        continue
                    except _REFUSED as refused:
                        replies[at] = refused
                        continue
                    except redis.exceptions.ResponseError as exc:
                        replies[at], error = exc, error or exc
                        continue
                    except _AWAY as exc:
                        failure = exc
                replies[at] = _LOST
            if failure is not None:
                connection.disconnect()  # replies may be left unread: never reuse it
                lost.append((node, chosen, failure))
    except BaseException:
        for _, _, _, connection, _ in sent:  # interrupted: replies may be left unread
            connection.disconnect()
        raise
    finally:
        for _, _, pool, connection, _ in sent:
            pool.release(connection)
    if error is not None:
        raise error
    return lost


def _refresh(client: RedisCluster) -> None:
    """Reload the slot table after a node failed (a replica may have taken its slots)."""
    with contextlib.suppress(redis.exceptions.RedisError, RedisClusterException):
        client.nodes_manager.initialize()


def _through_pipeline(
    client: RedisCluster, commands: Sequence[tuple[int, Sequence[Any]]]
) -> list[Any]:
    pipe = client.pipeline(transaction=False)
    for slot, args in commands:
        pipe.execute_command(*args, target_nodes=[client.nodes_manager.get_node_from_slot(slot)])
    return pipe.execute()


def connect(url: str, **options: Any) -> RedisCluster:
    """The cluster client on ``url`` (any node); the others are found from it."""
    try:
        return _NamingCluster.from_url(url, **options)
    except (ClusterNodeError, redis.exceptions.AuthenticationError):
        raise
    except (RedisClusterException, redis.exceptions.RedisError) as exc:
        # "Redis Cluster cannot be connected. Please provide at least one reachable node:
        # Error 111 connecting to 127.0.0.1:7000. Connection refused."
        reason = _first_line(exc).split("reachable node: ", 1)[-1]
        found = _NODE.search(reason)
        where = f"node {found.group(1)}" if found else "the node of REDIS_URL"
        reason = re.sub(r"^Error \d+ connecting to \S+ ", "", reason).rstrip(". ")
        raise ClusterNodeError(
            f"Redis Cluster {where} did not answer, so the cluster could not be reached: {reason}",
            [found.group(1)] if found else [],
        ) from None


def used_memory(client: Any) -> int:
    """``INFO memory`` ``used_memory`` of the server, summed over the primaries of a cluster."""
    if not is_cluster(client):
        return int(client.info("memory")["used_memory"])
    return sum(
        int(node.redis_connection.info("memory")["used_memory"]) for node in client.get_primaries()
    )


def keys_per_node(client: RedisCluster, match: str) -> dict[str, int]:
    """How many keys matching ``match`` each primary holds (``host:port`` → count)."""
    counts = {}
    for node in client.get_primaries():
        counts[node.name] = sum(1 for _ in node.redis_connection.scan_iter(match=match, count=5000))
    return counts


def slot_ranges(client: RedisCluster, node: ClusterNode | str) -> str:
    """The slots ``node`` serves, as ``0-5460,…``, from the client's slot table."""
    name = node if isinstance(node, str) else node.name
    slots = sorted(
        slot
        for slot, owners in client.nodes_manager.slots_cache.items()
        if owners and owners[0].name == name
    )
    ranges, start = [], None
    for i, slot in enumerate(slots):
        if start is None:
            start = slot
        if i + 1 == len(slots) or slots[i + 1] != slot + 1:
            ranges.append(f"{start}-{slot}" if slot != start else str(slot))
            start = None
    return ",".join(ranges) or "none"


class _NamingCluster(RedisCluster):
    """redis-py's cluster client, with node failures raised as :class:`ClusterNodeError`."""

    def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        with naming_failed_nodes(self):
            return super().execute_command(*args, **kwargs)

    def pipeline(self, transaction: Any = None, shard_hint: Any = None) -> Any:
        pipe = super().pipeline(transaction, shard_hint)
        execute = pipe.execute

        def execute_naming_nodes(raise_on_error: bool = True) -> list[Any]:
            with naming_failed_nodes(self):
                return execute(raise_on_error)

        pipe.execute = execute_naming_nodes  # type: ignore[method-assign]
        return pipe


_NODE = re.compile(r"(?:connecting to |reading from |writing to |^|\s)([\w.\-\[\]:]+:\d+)")


@contextmanager
def naming_failed_nodes(client: RedisCluster) -> Iterator[None]:
    """Raise a node failure met inside as :class:`ClusterNodeError` naming the node."""
    try:
        yield
    except (ClusterNodeError, redis.exceptions.AuthenticationError):
        raise
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
        # "Error 111 connecting to 127.0.0.1:7002. Connection refused.", "Timeout reading
        # from 127.0.0.1:7002": redis-py names the node it could not reach.
        found = _NODE.search(str(exc))
        if found is None:
            raise _down(client, exc) from exc
        name = found.group(1)
        reason = re.sub(r"^Error \d+ connecting to \S+ ", "", _first_line(exc)).rstrip(". ")
        raise ClusterNodeError(
            f"Redis Cluster node {name} (slots {slot_ranges(client, name)}) failed: {reason}",
            [name],
        ) from exc
    except (ClusterDownError, SlotNotCoveredError) as exc:
        raise _down(client, exc) from exc


def _down(client: RedisCluster, exc: BaseException) -> ClusterNodeError:
    """The cluster refuses commands (``CLUSTERDOWN``), or a node did not answer without
    redis-py saying which: name the nodes that do not answer a probe or that the others see
    failing (``CLUSTER NODES`` flags ``fail``/``fail?``)."""
    failing: dict[str, str] = {}
    for node in list(client.nodes_manager.nodes_cache.values()):
        options = node.redis_connection.connection_pool.connection_kwargs
        probe = redis.Redis(
            host=node.host,
            port=node.port,
            username=options.get("username"),
            password=options.get("password"),
            socket_timeout=PROBE_TIMEOUT_S,
            socket_connect_timeout=PROBE_TIMEOUT_S,
        )
        try:
            view = probe.execute_command("CLUSTER NODES")
        except redis.exceptions.RedisError as error:
            failing.setdefault(node.name, _first_line(error))
            continue
        finally:
            probe.close()
        for name, state in view.items():
            flags = state.get("flags", "")
            if "fail" in flags.split(",") or "fail?" in flags.split(","):
                failing.setdefault(name.split("@")[0], f"marked {flags} by the others")
    named = "; ".join(
        f"node {name} (slots {slot_ranges(client, name)}): {why}" for name, why in failing.items()
    )
    return ClusterNodeError(
        f"Redis Cluster is down ({_first_line(exc)}): "
        + (named or "no failing node found (see CLUSTER NODES)"),
        list(failing),
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).split("\n", 1)[0]
    # redis-py's pipelines prefix "Command # 3 (MGET k1 k2 …) of pipeline caused error: ".
    text = re.sub(r"^Command # \d+ \(.*\) of pipeline caused error: ", "", text)
    return (text or type(exc).__name__).strip()
