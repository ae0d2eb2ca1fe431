"""MongoDB at scale: every index made at start (and only then), the write concern and read
preference settings, and a replica set named in the URL (a SecantusDB started without
``--standalone`` answers as a one-member replica set, so pymongo runs its replica-set topology
against it; the embedded server is a standalone)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime

import pymongo
import pytest
from pymongo import monitoring
from pymongo.errors import WriteConcernError
from pymongo.read_preferences import ReadPreference
from pymongo.write_concern import WriteConcern

from tracker.cli import main
from tracker.config import ConfigError, Settings
from tracker.servers import connect as servers_connect
from tracker.servers import services
from tracker.servers.runtime import Runtime
from tracker.stores.evidence import CaptureStore
from tracker.stores.indexes import INDEXES, ensure_indexes, key_of, missing_indexes
from tracker.stores.pages import MatchStore


class Commands(monitoring.CommandListener):
    """The names of the commands a client sends."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        self.names.append(event.command_name)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


def test_every_index_is_made_at_start_and_only_checked_after(runtime):
    db = runtime.db  # opening the database makes them
    assert missing_indexes(db) == {}
    declared = {(name, key_of(m.document["key"])) for name, ms in INDEXES.items() for m in ms}
    assert len(declared) == sum(len(models) for models in INDEXES.values()) > 20

    # The next process only lists them: one listIndexes per collection, nothing written.
    listener = Commands()
    client = pymongo.MongoClient(runtime.mongo_url, event_listeners=[listener])
    try:
        assert ensure_indexes(client[runtime.settings.mongo_db]) == []
        sent = [name for name in listener.names if not name.startswith("sasl")]  # logging in
    finally:
        client.close()
    assert sent == ["listIndexes"] * len(INDEXES)

    # The index on masters.n is plain (sharding needs it so; the counter hands out each n
    # once). An operator's variant of an index (a unique one on masters.n, as libraries made
    # before have) counts as present; an index that went missing is made again at next start.
    assert "unique" not in db["masters"].index_information()["n_1"]
    db["masters"].drop_index("n_1")
    db["masters"].create_index("n", unique=True)
    db["pages"].drop_index("match_state_1")
    assert Runtime(runtime.settings).db is not None
    info = db["masters"].index_information()
    assert info["n_1"].get("unique")
    assert "match_state_1" in db["pages"].index_information()


def _plan(cursor) -> str:
    return json.dumps(cursor.explain()["queryPlanner"]["winningPlan"], default=str)


def test_a_database_made_before_loses_the_indexes_no_query_reads(runtime):
    """A database made before: pages.content_hash, matches.first_seen and captures.stamp.state
    are dropped at next start, the full indexes of pages.match_state and of the captures'
    stamps made again partial (a matched page and a new capture have no entry); the queries
    they serve still read an index and find what they found."""
    db = runtime.db
    db["pages"].drop_index("match_state_1")
    db["captures"].drop_index("stamp.state_1_stamp.failing_since_1")
    db["pages"].create_index("content_hash")
    db["pages"].create_index("match_state")
    db["matches"].create_index([("first_seen", pymongo.DESCENDING)])
    db["captures"].create_index("stamp.state")
    db["captures"].create_index([("stamp.state", 1), ("stamp.failing_since", 1)])
    db["taken"].create_index("x")  # an index of a collection the tracker does not declare
    old = datetime(2031, 3, 1, tzinfo=UTC)
    db["pages"].insert_many(
        [{"_id": f"u{i}", "match_state": "failed" if i % 3 == 0 else "ok"} for i in range(9)]
    )
    stamps = ["none", "pending", "stamped", "pending"]
    db["captures"].insert_many(
        [
            {"_id": f"c{i}", "url": "u", "stamp": {"state": state, "failing_since": old}}
            for i, state in enumerate(stamps)
        ]
    )
    lacking = missing_indexes(db)  # the full indexes do not count for the partial ones
    assert {name: [m.document["name"] for m in ms] for name, ms in lacking.items()} == {
        "pages": ["match_state_1"],
        "captures": ["stamp.state_1_stamp.failing_since_1"],
    }

    assert Runtime(replace(runtime.settings)).db is not None  # the next start
    pages, captures = db["pages"].index_information(), db["captures"].index_information()
    assert "content_hash_1" not in pages
    assert "first_seen_-1" not in db["matches"].index_information()
    assert "stamp.state_1" not in captures
    assert pages["match_state_1"]["partialFilterExpression"] == {"match_state": "failed"}
    stamp = captures["stamp.state_1_stamp.failing_since_1"]
    assert stamp["partialFilterExpression"] == {"stamp.state": "pending"}
    assert "x_1" in db["taken"].index_information()
    assert missing_indexes(db) == {}

    failed = db["pages"].find({"match_state": "failed"})
    assert "IXSCAN" in _plan(failed) and "COLLSCAN" not in _plan(failed)
    assert sorted(doc["_id"] for doc in failed) == ["u0", "u3", "u6"]
    pending = db["captures"].find({"stamp.state": "pending"})
    overdue = db["captures"].find(
        {"stamp.state": "pending", "stamp.failing_since": {"$lt": datetime(2031, 3, 2)}}
    )
    for cursor in (pending, overdue):
        assert "IXSCAN" in _plan(cursor) and "COLLSCAN" not in _plan(cursor)
    store = CaptureStore(db)
    assert sorted(doc["_id"] for doc in store.pending()) == ["c1", "c3"]
    assert sorted(doc["_id"] for doc in store.overdue(datetime(2031, 3, 2, tzinfo=UTC))) == [
        "c1",
        "c3",
    ]
    # Another start drops nothing and creates nothing.
    assert ensure_indexes(db) == []
    assert "match_state_1" in db["pages"].index_information()


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("TRACKER_MONGO_WRITE_CONCERN", "Majority", "majority"),
        ("TRACKER_MONGO_WRITE_CONCERN", "2", "2"),
        ("TRACKER_MONGO_READ_PREFERENCE", "secondarypreferred", "secondaryPreferred"),
        ("TRACKER_MONGO_READ_PREFERENCE", "NEAREST", "nearest"),
    ],
)
def test_write_concern_and_read_preference_settings(monkeypatch, variable, value, expected):
    monkeypatch.setenv(variable, value)
    settings = Settings.load()
    assert getattr(settings, variable.removeprefix("TRACKER_").lower()) == expected


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("TRACKER_MONGO_WRITE_CONCERN", "0", "number of members ≥ 1"),
        ("TRACKER_MONGO_WRITE_CONCERN", "majorty", "not a write concern"),
        ("TRACKER_MONGO_READ_PREFERENCE", "fastest", "secondaryPreferred"),
    ],
)
def test_bad_write_concern_or_read_preference_is_refused(monkeypatch, variable, value, named):
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=variable) as raised:
        Settings.load()
    assert named in str(raised.value)


@pytest.fixture(scope="module")
def replica_set(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A SecantusDB of this module's own, as a one-member replica set; its URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = services._secantus_command(port, tmp_path_factory.mktemp("set"), auth=False)
    command.remove("--standalone")
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"mongodb://127.0.0.1:{port}/"
    try:
        with pymongo.MongoClient(url, serverSelectionTimeoutMS=60_000) as client:
            client.admin.command("ping")
        yield url
    finally:
        server.terminate()
        server.wait(30)


def replica_set_url(url: str, **options: str) -> str:
    """``url`` naming the replica set its server answers for, with ``options``."""
    with pymongo.MongoClient(url, directConnection=True) as client:
        name = client.admin.command("hello")["setName"]
    query = "&".join(f"{k}={v}" for k, v in {"replicaSet": name, **options}.items())
    return f"{url}?{query}"


def test_the_embedded_server_keeps_no_oplog(runtime):
    """The embedded SecantusDB runs standalone: nothing reads an oplog, and writing one
    costs the server a quarter of its inserts' CPU (bench/secantus_oplog.py)."""
    if os.environ.get("MONGO_URL"):
        pytest.skip("the tests run against the MongoDB of MONGO_URL, not the embedded one")
    hello = runtime.mongo.admin.command("hello")
    assert not hello.get("setName")
    assert "oplog.rs" not in runtime.mongo["local"].list_collection_names()


def test_a_replica_set_url_and_its_options_reach_every_collection(
    replica_set, settings, monkeypatch, capsys
):
    url = replica_set_url(replica_set, readPreference="secondaryPreferred", wTimeoutMS="5000")
    on_set = Runtime(replace(settings, mongo_url=url))
    try:
        on_set.mongo.admin.command("ping")
        assert on_set.mongo.topology_description.topology_type_name == "ReplicaSetWithPrimary"
        # Writers: majority (the default) with the URL's timeout, reading the primary.
        matches = MatchStore(on_set.db)
        assert matches.matches.write_concern == WriteConcern("majority", wtimeout=5000)
        assert matches.page_days.write_concern.document["w"] == "majority"
        assert on_set.db["pages"].read_preference == ReadPreference.PRIMARY
        # Readers of settled data: the URL's read preference.
        assert on_set.read_db["matches"].read_preference == ReadPreference.SECONDARY_PREFERRED

        url_page = "https://pirate.example/1.html"
        found = {"doc_id": "W/1", "work": "W", "title": "一", "score": 1.0, "coverage": 0.9}
        assert matches.record(url_page, [found]) == (1, 0)
        assert matches.record(url_page, [found]) == (0, 0)  # the upsert names the URL too
    finally:
        on_set.close()

    # `tracker report` reads through the replica set with its read preference.
    monkeypatch.setenv("MONGO_URL", url)
    monkeypatch.setenv("REDIS_URL", settings.redis_url or "")
    monkeypatch.setenv("TRACKER_MONGO_DB", settings.mongo_db)
    monkeypatch.setenv("TRACKER_MONGO_READ_PREFERENCE", "nearest")
    day = datetime.now(UTC).date().isoformat()
    assert main(["report", "--format", "json", "--date", day]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [page["url"] for page in report["pages"]] == [url_page]


def test_the_write_concern_setting_reaches_the_server(replica_set, settings):
    """A one-member set cannot acknowledge w=2: the server refuses, so the setting was sent."""
    url = replica_set_url(replica_set, w="1")
    opened = Runtime(replace(settings, mongo_url=url))
    opened.db  # noqa: B018  (the indexes exist: opening the database writes nothing more)
    opened.close()
    strict = Runtime(replace(settings, mongo_url=url, mongo_write_concern="2"))
    try:
        assert strict.db["pages"].write_concern.document == {"w": 2}
        with pytest.raises(WriteConcernError):
            strict.db["pages"].insert_one({"_id": "https://pirate.example/2.html"})
    finally:
        strict.close()
    assert Runtime(replace(settings, mongo_url=url)).db["x"].write_concern.document == {"w": 1}


def test_a_wrong_replica_set_name_is_one_clear_error(replica_set, settings, monkeypatch):
    monkeypatch.setattr(servers_connect, "SERVER_TIMEOUT_S", 0.5)
    url = replica_set_url(replica_set).rsplit("replicaSet=", 1)[0] + "replicaSet=elsewhere"
    with pytest.raises(servers_connect.ServerError) as raised:
        servers_connect.connect(replace(settings, mongo_url=url), redis=False)
    message = str(raised.value)
    assert "elsewhere" in message and "check the replicaSet= name in MONGO_URL" in message
    assert "***@" in message or "@" not in message  # the password masked
