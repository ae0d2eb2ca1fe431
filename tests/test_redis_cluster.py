"""The index and every other Redis user on a 3-node Redis Cluster (valkey, loopback): the same
matches as on one server, buckets spread over the nodes, the library state atomic on one slot,
changes, clear, the page index and rematch, boilerplate, locks, and a killed node named in the
error, never a silent miss."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import replace

import pytest
from redis.crc import key_slot

from tests.disguise import typos, with_ads
from tests.stages import process
from tests.texts import ARTICLE, OTHER_ARTICLE, prose
from tracker.cli import main
from tracker.config import ConfigError, Settings
from tracker.crawling.crawl import crawl_environment
from tracker.crawling.distributed import queue_redis_url, refuse_cluster_node
from tracker.index.page_index import PageIndex
from tracker.index.storage import RedisStorage
from tracker.matching.library import MasterLibrary
from tracker.matching.rematch import Rematcher
from tracker.model import MasterDocument
from tracker.reports.clustering import CentreIndex
from tracker.servers import services
from tracker.servers.locks import HeldLock, LockBusy
from tracker.servers.redis_cluster import (
    GROUPS,
    ClusterNodeError,
    group_tags,
    keys_per_node,
)
from tracker.servers.runtime import Runtime
from tracker.text.site_boilerplate import SiteBoilerplate

pytestmark = pytest.mark.integration


def chapters(n: int = 24, seed: int = 4100) -> list[MasterDocument]:
    return [
        MasterDocument(f"簇之书/{i:03d}", "簇之书", f"第{i}章", prose(seed + i, 2500))
        for i in range(n)
    ] + [MasterDocument("新闻/1", "新闻", "村口", ARTICLE)]


def copies(masters: list[MasterDocument]) -> list[str]:
    """Pages that copy masters in several ways, and one that copies nothing."""
    return [
        with_ads(masters[0].text),
        typos(masters[1].text, 0.08, seed=1),
        prose(9100, 1500) + masters[2].text[:600] + prose(9101, 1500),  # a passage
        masters[3].text + "\n" + masters[4].text,  # two chapters on one page
        "转载：" + ARTICLE,
        OTHER_ARTICLE + prose(9102, 800),
    ]


def test_group_tags_spread_a_table_evenly_over_the_slots():
    tags = group_tags()
    assert len(tags) == GROUPS == len(set(tags))
    width = 16384 // GROUPS
    assert [key_slot(tag.encode()) // width for tag in tags] == list(range(GROUPS))


def test_keys_of_one_server_keep_their_layout_and_cluster_keys_carry_tags(runtime, cluster_runtime):
    single = RedisStorage(runtime.redis, "p:ix:")
    assert single.bucket_key("ans", 0x3FA2) == b"p:ix:ans:3fa2"
    assert single.key("version") == b"p:ix:version"
    on_cluster = RedisStorage(cluster_runtime.redis, "p:ix:")
    tag = group_tags()[0x3FA2 % GROUPS]
    assert on_cluster.bucket_key("ans", 0x3FA2) == f"p:ix:ans:{{{tag}}}3fa2".encode()
    assert key_slot(on_cluster.key("version")) == key_slot(on_cluster.key("count"))
    with pytest.raises(ValueError, match="brace"):
        RedisStorage(cluster_runtime.redis, "p{x}:")


def test_a_crawl_process_is_told_the_index_is_on_a_cluster(monkeypatch, tmp_path):
    monkeypatch.setenv("TRACKER_REDIS_CLUSTER", "1")  # of this process: not passed on as such
    plain = crawl_environment(Settings(data_dir=tmp_path))
    assert plain["TRACKER_REDIS_CLUSTER"] == "0" and not plain["TRACKER_CRAWL_REDIS_URL"]
    on_cluster = Settings(
        data_dir=tmp_path,
        redis_url="redis://127.0.0.1:7000/0",
        redis_cluster=True,
        crawl_redis_url="redis://127.0.0.1:6379/0",
    )
    env = crawl_environment(on_cluster)
    assert env["TRACKER_REDIS_CLUSTER"] == "1" and env["REDIS_URL"] == on_cluster.redis_url
    assert env["TRACKER_CRAWL_REDIS_URL"] == on_cluster.crawl_redis_url


def test_settings_for_a_cluster(monkeypatch, tmp_path):
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.setenv("TRACKER_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("TRACKER_REDIS_CLUSTER", "1")
    with pytest.raises(ConfigError, match="needs REDIS_URL"):
        Settings.load()
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:7000/0")
    monkeypatch.setenv("TRACKER_REDIS_PREFIX", "t{1}:")
    with pytest.raises(ConfigError, match="redis_prefix"):
        Settings.load()
    monkeypatch.delenv("TRACKER_REDIS_PREFIX")
    assert Settings.load().redis_cluster


def test_the_library_on_a_cluster_finds_what_one_server_finds(runtime, cluster_runtime):
    masters = chapters()
    single = MasterLibrary.from_runtime(runtime)
    clustered = MasterLibrary.from_runtime(cluster_runtime)
    single.ingest(masters)
    clustered.ingest(masters)
    pages = copies(masters)
    expected = [[m.to_dict() for m in found] for found in single.detector().check_many(pages)]
    found = [[m.to_dict() for m in found] for found in clustered.detector().check_many(pages)]
    assert found == expected
    assert [{m["doc_id"] for m in f} for f in found] == [
        {masters[0].doc_id},
        {masters[1].doc_id},
        {masters[2].doc_id},
        {masters[3].doc_id, masters[4].doc_id},
        {"新闻/1"},
        set(),
    ]
    # The buckets spread over the three primaries; the state is MongoDB's.
    spread = keys_per_node(cluster_runtime.redis, cluster_runtime.settings.redis_prefix + "*")
    assert len(spread) == 3
    assert min(spread.values()) >= 0.2 * sum(spread.values()), spread
    assert clustered.index.state() == (clustered.store.version(), len(masters))
    assert clustered.verify().action == "ok"


def test_library_state_is_one_transaction_on_one_slot(cluster_runtime):
    library = MasterLibrary.from_runtime(cluster_runtime)
    index = library.index
    assert key_slot(index.version_key) == key_slot(index.count_key)
    index.set_state(7, 3)
    assert index.state() == (7, 3)
    # MULTI across two slots is refused, so the pair above was one transaction on one node.
    other = index.storage.bucket_key("ans", 1)
    with pytest.raises(Exception, match="slot"):
        index.storage.set_values({index.version_key: 8, other: 1})
    assert index.state() == (7, 3)


def test_replace_remove_and_clear_on_a_cluster(cluster_runtime, monkeypatch, capsys):
    masters = chapters(6, seed=4300)
    library = MasterLibrary.from_runtime(cluster_runtime)
    library.ingest(masters)
    detector = library.detector()
    old_text, new_text = masters[0].text, prose(4399, 2500)
    library.ingest([replace(masters[0], text=new_text)])  # the same id, new text
    assert [m.doc_id for m in detector.check(new_text)] == [masters[0].doc_id]
    assert detector.check(old_text) == []
    assert library.delete(masters[1].doc_id)
    assert detector.check(masters[1].text) == []
    assert [m.doc_id for m in detector.check(masters[2].text)] == [masters[2].doc_id]
    assert library.verify().action == "ok"

    prefix = cluster_runtime.settings.redis_prefix + "ix:*"
    assert all(keys_per_node(cluster_runtime.redis, prefix).values())
    library.index.clear()
    assert set(keys_per_node(cluster_runtime.redis, prefix).values()) == {0}
    assert library.verify().action == "rebuilt"  # the lost index is noticed and rebuilt
    assert [m.doc_id for m in detector.check(masters[2].text)] == [masters[2].doc_id]

    # The commands, on the cluster.
    settings = cluster_runtime.settings
    for name, value in crawl_environment(settings).items():
        monkeypatch.setenv(name, value)
    assert main(["index", "rebuild"]) == 0
    assert "re-indexed 6 master documents" in capsys.readouterr().out
    assert main(["index", "stats"]) == 0
    assert "index:   6 master documents" in capsys.readouterr().out


def _lose_writes(cluster: services.LocalCluster, node: int, match: str) -> int:
    """Delete the keys matching ``match`` on one node: what it holds after it restarted
    empty (or a replica that lagged took over); returns how many."""
    import redis

    client = redis.Redis(port=cluster.ports[node], password=cluster.password)
    try:
        keys = list(client.scan_iter(match=match, count=1000))
        for key in keys:
            client.delete(key)
        return len(keys)
    finally:
        client.close()


def test_a_node_that_lost_writes_is_noticed_and_the_index_rebuilt(cluster_runtime, redis_cluster):
    masters = chapters(6, seed=4200)
    library = MasterLibrary.from_runtime(cluster_runtime)
    library.ingest(masters)
    assert library.index.lagging(library.store.version()) == 0
    state = cluster_runtime.redis.get_node_from_key(library.index.version_key)
    lost = next(i for i, port in enumerate(redis_cluster.ports) if port != state.port)
    assert _lose_writes(redis_cluster, lost, cluster_runtime.settings.redis_prefix + "ix:*") > 0
    assert library.index.lagging(library.store.version()) > 0  # its groups' marks are gone
    found = library.verify()
    assert found.action == "rebuilt" and "lost writes" in found.reason
    assert library.verify().action == "ok"
    pages = copies(masters)
    assert [m.doc_id for m in library.detector().check(pages[0])] == [masters[0].doc_id]


def test_crawl_pipelines_page_index_and_rematch_on_a_cluster(cluster_runtime, redis_cluster):
    """Pages go through the crawl's pipelines (boilerplate counts, match, store with the page
    index) on the cluster; a chapter registered later is found by rematch."""
    from scrapy.utils.test import get_crawler

    from pipelines.boilerplate import SiteBoilerplatePipeline
    from pipelines.fingerprint import FingerprintPipeline
    from pipelines.match import MatchPipeline
    from pipelines.store import StorePipeline
    from tracker.crawling.context import TrackerContext
    from tracker.crawling.items import PageItem

    masters = chapters(4, seed=4500)
    late = MasterDocument("迟到/1", "迟到", "第一章", prose(4599, 2500))
    library = MasterLibrary.from_runtime(cluster_runtime)
    library.ingest(masters)
    crawler = get_crawler(settings_dict={"TRACKER_BOILERPLATE_MIN_PAGES": 2})
    crawler.stats.open_spider()
    crawler._tracker_context = TrackerContext(cluster_runtime)
    stages = [
        SiteBoilerplatePipeline.from_crawler(crawler),
        FingerprintPipeline.from_crawler(crawler),
        MatchPipeline.from_crawler(crawler),
        StorePipeline.from_crawler(crawler),
    ]
    stamp = "本站域名 www.pirate.example 手机阅读请访问"
    for i, text in enumerate([masters[0].text, typos(late.text, 0.05, seed=3), prose(4601)]):
        item = PageItem(url=f"http://pirate.example/{i}.html", text=f"{stamp}\n{text}", status=200)
        for stage in stages:
            item = process(stage, item)
    stats = crawler.stats.get_stats()
    assert stats.get("tracker/boilerplate_lines") == 2  # the stamp, from the second page on
    assert "tracker/errors/index" not in stats
    page_index = PageIndex.from_runtime(cluster_runtime)
    assert page_index.max_n() == 3
    assert Rematcher(cluster_runtime, library).verify_page_index() == 0  # marks every node
    # A node loses the page index's postings it held: the pages are filed again.
    _lose_writes(redis_cluster, 1, cluster_runtime.settings.redis_prefix + "pix:*")
    assert page_index.max_n() == 0
    assert Rematcher(cluster_runtime, library).verify_page_index() == 3
    assert page_index.max_n() == 3 and page_index.lowest_mark() == 3
    matches = cluster_runtime.db["matches"]
    assert {m["doc_id"] for m in matches.find({"active": True})} == {masters[0].doc_id}

    library.ingest([late])
    summary = Rematcher(cluster_runtime, library).run()
    assert (summary.candidate_pages, summary.new_matches) == (1, 1)  # via the page index
    assert matches.find_one({"doc_id": late.doc_id})["url"] == "http://pirate.example/1.html"


def test_a_node_that_stops_answering_mid_batch(cluster_runtime, redis_cluster):
    """Node 1 pauses (``CLIENT PAUSE``) longer than the client waits: a lookup is sent again
    and answered; appends it may have run are not sent twice, the error names the node."""
    import redis

    from tracker.servers.redis_cluster import connect

    client = connect(redis_cluster.url, socket_timeout=0.3)
    storage = RedisStorage(client, cluster_runtime.settings.redis_prefix + "pause:")
    keys = [storage.bucket_key("t", bucket) for bucket in range(GROUPS)]  # every node
    storage.append(dict.fromkeys(keys, b"ab"))
    node = redis.Redis(port=redis_cluster.ports[1], password=redis_cluster.password)
    try:
        node.execute_command("CLIENT PAUSE", 1200, "ALL")
        assert storage.get(keys) == [b"ab"] * len(keys)  # waited for, not missed
        node.execute_command("CLIENT PAUSE", 1200, "ALL")
        name = f"127.0.0.1:{redis_cluster.ports[1]}"
        with pytest.raises(ClusterNodeError, match=f"node {name} .*failed") as caught:
            storage.append(dict.fromkeys(keys, b"cd"))
        assert caught.value.nodes == [name]
        time.sleep(1.3)
        paused = [client.get_node_from_key(key).port == redis_cluster.ports[1] for key in keys]
        found = storage.get(keys)
        assert {f for f, p in zip(found, paused, strict=True) if not p} == {b"abcd"}
        # The paused node dropped the commands of the connection given up, or ran them once.
        assert {f for f, p in zip(found, paused, strict=True) if p} <= {b"ab", b"abcd"}
    finally:
        node.close()
        client.close()


def test_boilerplate_keys_of_a_site_share_a_slot(cluster_runtime):
    boilerplate = SiteBoilerplate(cluster_runtime.redis, cluster_runtime.settings.redis_prefix, 2)
    slots = {key_slot(boilerplate._key("a.example", kind).encode()) for kind in ("", "-urls")}
    assert len(slots) == 1
    page = "第一行\n请收藏本站\n" + ARTICLE
    assert boilerplate.mask("a.example", page, "http://a.example/1")[1] == 0
    assert boilerplate.mask("a.example", page, "http://a.example/2")[1] == 2
    assert boilerplate.mask("a.example", page, "http://a.example/2")[1] == 2  # counted once


def test_locks_and_the_mirror_group_index_on_a_cluster(cluster_runtime):
    client, prefix = cluster_runtime.redis, cluster_runtime.settings.redis_prefix
    state = MasterLibrary.from_runtime(cluster_runtime).index.version_key
    lock = HeldLock(client, prefix + "library:lock", 5)
    assert key_slot(lock.name.encode()) == key_slot(state)  # locks and state: one slot
    with lock as held:
        assert HeldLock.holder(client, prefix + "library:lock") == held.token
        with pytest.raises(LockBusy), HeldLock(client, prefix + "library:lock", 5):
            pass
    assert HeldLock.holder(client, prefix + "library:lock") is None

    centres = CentreIndex(client, prefix + "cl:")
    assert centres.rebuild([(1, 0xFFFF0000FFFF0000), (2, 0x0123456789ABCDEF)]) == 2
    centres.add([(3, 0x0F0F0F0F0F0F0F0F)])
    assert centres.nearest(0xFFFF0000FFFF0001) == (1, 1)
    assert centres.nearest(0x0F0F0F0F0F0F0F0F) == (3, 0)
    assert centres.size() == 3
    assert key_slot(centres._count.encode()) == key_slot(state)


def test_a_distributed_crawl_needs_a_redis_that_is_not_a_cluster(
    server_settings, redis_cluster, runtime
):
    on_cluster = replace(server_settings, redis_url=redis_cluster.url, redis_cluster=True)
    with pytest.raises(ValueError, match="crawl_redis_url"):
        queue_redis_url(on_cluster)
    plain = server_settings.redis_url
    assert queue_redis_url(replace(on_cluster, crawl_redis_url=plain)) == plain
    node = Runtime(replace(server_settings, redis_url=redis_cluster.url))
    try:
        with pytest.raises(ValueError, match="not a cluster node"):
            refuse_cluster_node(node.redis)
    finally:
        node.close()
    refuse_cluster_node(runtime.redis)  # one server: fine


# -------------------------------------------------------------------------- a node killed


@pytest.fixture()
def doomed(tmp_path, settings):
    """A cluster of this test's own (one of its nodes will be killed), nodes failed after
    1 s without an answer; the runtime with the index on it."""
    cluster = services.start_cluster(tmp_path / "cluster", node_timeout_ms=1000)
    runtime = Runtime(replace(settings, redis_url=cluster.url, redis_cluster=True))
    yield cluster, runtime
    runtime.mongo.drop_database(settings.mongo_db)
    runtime.close()
    cluster.stop()


def test_a_killed_node_is_named_never_a_silent_miss(doomed, monkeypatch):
    from scrapy.utils.test import get_crawler

    from pipelines.fingerprint import FingerprintPipeline
    from pipelines.match import MatchPipeline
    from tracker.crawling import context as context_module
    from tracker.crawling.context import TrackerContext
    from tracker.crawling.items import PageItem

    cluster, runtime = doomed
    masters = chapters(6, seed=4700)
    library = MasterLibrary.from_runtime(runtime)
    library.ingest(masters)
    detector = library.detector()
    assert [m.doc_id for m in detector.check(masters[5].text)] == [masters[5].doc_id]

    # A slot of the index moves to another node (resharding) behind the client's back: the
    # lookups follow it (MOVED), and nothing is missed.
    slot = key_slot(group_tags()[0].encode())
    moved = _migrate(cluster, slot, source=0, target=2)
    assert moved > 0
    assert [m.doc_id for m in detector.check(masters[5].text)] == [masters[5].doc_id]
    assert runtime.redis.nodes_manager.slots_cache[slot][0].port == cluster.ports[2]
    dead = f"127.0.0.1:{cluster.ports[1]}"
    cluster.kill(1)

    with pytest.raises(ClusterNodeError, match=f"node {dead} \\(slots 5461-10921\\)") as caught:
        detector.check(masters[5].text)
    assert caught.value.nodes == [dead]

    env = {k: v for k, v in os.environ.items() if k not in ("MONGO_URL", "REDIS_URL")}
    env.update(
        TRACKER_DATA_DIR=str(runtime.settings.data_dir),
        MONGO_URL=runtime.settings.mongo_url,
        REDIS_URL=cluster.url,
        TRACKER_REDIS_CLUSTER="1",
        TRACKER_MONGO_DB=runtime.settings.mongo_db,
        TRACKER_REDIS_PREFIX=runtime.settings.redis_prefix,
    )
    for url in (cluster.url, cluster.node_url(1)):  # REDIS_URL names a live node, the dead one
        done = subprocess.run(
            [sys.executable, "-m", "tracker.cli", "check", "-"],
            input=masters[5].text,
            env={**env, "REDIS_URL": url},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("tracker: error: "), done.stderr
        assert dead in lines[0] and cluster.password not in lines[0]

    # The crawl counts it as an index error, the page as unmatched.
    monkeypatch.setattr(context_module, "RETRY_PAUSES_S", (0.1,))
    crawler = get_crawler()
    crawler.stats.open_spider()
    crawler._tracker_context = TrackerContext(runtime)
    item = PageItem(url="http://pirate.example/1.html", text=masters[5].text, status=200)
    fingerprinted = process(FingerprintPipeline.from_crawler(crawler), item)
    process(MatchPipeline.from_crawler(crawler), fingerprinted)
    stats = crawler.stats.get_stats()
    assert stats["tracker/errors/index"] == 1 and stats["tracker/degraded/unmatched"] == 1

    # Once the others mark it failed, the cluster is down even for keys they serve: the
    # error still names it.
    state_node = runtime.redis.get_node_from_key(library.index.version_key)
    assert state_node.port != cluster.ports[1]
    deadline = time.monotonic() + 20
    while not _sees_failed(cluster, 0, dead):
        assert time.monotonic() < deadline, "the cluster never marked the killed node failed"
        time.sleep(0.1)
    with pytest.raises(ClusterNodeError, match=f"is down.*node {dead}") as caught:
        library.index.state()
    assert caught.value.nodes == [dead]


def _sees_failed(cluster: services.LocalCluster, i: int, name: str) -> bool:
    import redis

    client = redis.Redis(port=cluster.ports[i], password=cluster.password)
    try:
        flags = client.execute_command("CLUSTER NODES").get(name, {}).get("flags", "")
        return "fail" in flags.split(",")
    finally:
        client.close()


def _migrate(cluster: services.LocalCluster, slot: int, source: int, target: int) -> int:
    """Move ``slot`` and its keys from node ``source`` to node ``target`` as
    ``valkey-cli --cluster reshard`` does; returns how many keys moved."""
    import redis

    nodes = [redis.Redis(port=port, password=cluster.password) for port in cluster.ports]
    ids = [node.execute_command("CLUSTER MYID").decode() for node in nodes]
    src, dst = nodes[source], nodes[target]
    dst.execute_command("CLUSTER SETSLOT", slot, "IMPORTING", ids[source])
    src.execute_command("CLUSTER SETSLOT", slot, "MIGRATING", ids[target])
    moved = 0
    while keys := src.execute_command("CLUSTER GETKEYSINSLOT", slot, 500):
        src.execute_command(
            "MIGRATE", "127.0.0.1", cluster.ports[target], "", 0, 5000,
            "AUTH", cluster.password, "KEYS", *keys,
        )  # fmt: skip
        moved += len(keys)
    for node in nodes:
        node.execute_command("CLUSTER SETSLOT", slot, "NODE", ids[target])
    for node in nodes:
        node.close()
    return moved
