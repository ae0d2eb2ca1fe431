"""Shared fixtures: the real servers (embedded SecantusDB and valkey, or MONGO_URL/REDIS_URL)."""

from __future__ import annotations

import os
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from tracker.config import Settings
from tracker.index.storage import MemoryStorage, RedisStorage
from tracker.servers import services
from tracker.servers.runtime import Runtime

# Checks run by the tests in subprocesses leave no warm checker behind (one test turns it on).
os.environ["TRACKER_CHECK_WARM_S"] = "0"


@pytest.fixture(scope="session")
def server_settings(tmp_path_factory) -> Settings:
    """Settings pointing at servers shared by the whole test session."""
    data_dir = Path(tmp_path_factory.mktemp("tracker-data"))
    settings = Settings(
        data_dir=data_dir,
        mongo_url=os.environ.get("MONGO_URL"),
        redis_url=os.environ.get("REDIS_URL"),
    )
    runtime = Runtime(settings)
    settings = replace(settings, mongo_url=runtime.mongo_url, redis_url=runtime.redis_url)
    yield settings
    runtime.close()
    services.stop(replace(settings, mongo_url=None, redis_url=None))


@pytest.fixture()
def settings(server_settings: Settings) -> Settings:
    """Per-test isolation: a fresh database name and Redis key prefix on the shared servers."""
    tag = uuid.uuid4().hex[:10]
    return replace(server_settings, mongo_db=f"test_{tag}", redis_prefix=f"test{tag}:")


@pytest.fixture()
def server_env(settings: Settings, tmp_path: Path) -> dict[str, str]:
    """The environment of a tracker process a test starts: the test's servers, database and
    key prefix, a data directory of its own, nothing inherited from a Scrapy project."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACKER_", "SCRAPY"))}
    env.update(
        MONGO_URL=settings.mongo_url or "",
        REDIS_URL=settings.redis_url or "",
        TRACKER_MONGO_DB=settings.mongo_db,
        TRACKER_REDIS_PREFIX=settings.redis_prefix,
        TRACKER_DATA_DIR=str(tmp_path / "data"),
        TRACKER_CHECK_WARM_S="0",
    )
    return env


@pytest.fixture()
def cli_env(monkeypatch, settings: Settings) -> None:
    """``tracker.cli.main`` in this process on the test's servers, database and key prefix."""
    monkeypatch.setenv("MONGO_URL", settings.mongo_url)
    monkeypatch.setenv("REDIS_URL", settings.redis_url)
    monkeypatch.setenv("TRACKER_MONGO_DB", settings.mongo_db)
    monkeypatch.setenv("TRACKER_REDIS_PREFIX", settings.redis_prefix)
    monkeypatch.setenv("TRACKER_DATA_DIR", str(settings.data_dir))


@pytest.fixture(params=["memory", "redis"])
def storage(request):
    """An index storage: in memory, or on the session's Redis under the test's key prefix."""
    if request.param == "memory":
        return MemoryStorage()
    runtime = request.getfixturevalue("runtime")
    return RedisStorage(runtime.redis, runtime.settings.redis_prefix + "ix:")


@pytest.fixture()
def runtime(settings: Settings):
    rt = Runtime(settings)
    yield rt
    rt.mongo.drop_database(settings.mongo_db)
    RedisStorage(rt.redis, settings.redis_prefix).clear()
    rt.close()


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory) -> services.LocalCluster:
    """A 3-node Redis Cluster of valkey servers on loopback, started on first use and shared by
    the session (tests that kill a node start their own)."""
    cluster = services.start_cluster(tmp_path_factory.mktemp("redis-cluster"))
    yield cluster
    cluster.stop()


@pytest.fixture()
def cluster_runtime(settings: Settings, redis_cluster: services.LocalCluster):
    """A runtime with the index on the cluster (``redis_cluster``), MongoDB as ``runtime``'s,
    the same per-test database name and key prefix."""
    rt = Runtime(replace(settings, redis_url=redis_cluster.url, redis_cluster=True))
    yield rt
    rt.mongo.drop_database(settings.mongo_db)
    RedisStorage(rt.redis, settings.redis_prefix).clear()
    rt.close()
