"""Backup and restore of the embedded SecantusDB (``tracker services backup|restore``).

* **Backup**, while it runs: SecantusDB's own ``secantusAdmin.backupArchive`` command takes a
  checkpoint and writes the storage files of that checkpoint as one ``.tar.gz`` (a consistent
  copy of every collection at one moment, which ``mongodump`` is not without ``--oplog``). It
  is written under a temporary name and renamed when complete, mode 0600 (it holds everything,
  the console users' password hashes too).
* **Restore**: the archive is extracted beside the data by SecantusDB's own
  ``secantus-restore-archive`` (which refuses what is not one of its archives); then, under the
  services lock (so no other command restarts the server meanwhile), the server is stopped, its
  data moved aside to ``db.before-restore-<time>`` (kept: delete it once satisfied), the
  restored data put in its place, and the server started again, its user given this machine's
  password (an archive from another machine carries that machine's).

Redis is not backed up: everything the tracker keeps there is rebuilt from MongoDB (``tracker
index rebuild``: the index and the stored pages' index) or relearned (site boilerplate, mirror
group centres). A configured ``MONGO_URL`` is backed up with the server's own tools
(``mongodump``, ``mongorestore``): see deploy/README.md.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from datetime import UTC, datetime
from pathlib import Path

from tracker.config import Settings
from tracker.servers import services
from tracker.servers.services import ServiceError


def backup(settings: Settings, target: Path) -> int:
    """Write a consistent archive of the embedded MongoDB server to ``target`` (a new file);
    returns its size in bytes."""
    _embedded_only(settings, "back up", "mongodump")
    target = Path(target).expanduser().absolute()
    if target.exists():
        raise ServiceError(f"{target} exists: give the backup a new file name")
    if not target.parent.is_dir():
        raise ServiceError(f"no such directory: {target.parent}")
    import pymongo

    draft = target.with_name(f".{target.name}.part")
    url = services.ensure_service(settings, "mongo")
    try:
        with pymongo.MongoClient(url, serverSelectionTimeoutMS=10_000) as client:
            client.admin.command("secantusAdmin.backupArchive", outputPath=str(draft))
        draft.chmod(0o600)
        draft.rename(target)
    finally:
        draft.unlink(missing_ok=True)
    return target.stat().st_size


def restore(settings: Settings, archive: Path) -> tuple[Path, int | None, int]:
    """Replace the embedded MongoDB server's data with the backup ``archive``; returns where
    the data it had went, and the server's port before and after (the same unless another
    process took it meanwhile: see :func:`tracker.servers.services.replace_data`)."""
    _embedded_only(settings, "restore", "mongorestore")
    archive = Path(archive).expanduser().absolute()
    if not archive.is_file():
        raise ServiceError(f"no such backup file: {archive}")
    if not tarfile.is_tarfile(archive):
        raise ServiceError(f"{archive} is not a backup (a .tar.gz made by tracker services backup)")
    home = services.services_dir(settings) / "mongo"
    home.mkdir(parents=True, exist_ok=True)
    staging = home / "db.restoring"
    shutil.rmtree(staging, ignore_errors=True)
    done = subprocess.run(
        [_restore_command(), "--archive", str(archive), "--target-dir", str(staging)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        said = (done.stderr or done.stdout).strip().splitlines()
        raise ServiceError(f"{archive} could not be restored: {said[-1] if said else done}")
    aside = home / f"db.before-restore-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"

    def swap(home: Path) -> None:
        if (home / "db").exists():
            (home / "db").rename(aside)
        staging.rename(home / "db")

    before, after = services.replace_data(settings, "mongo", swap)
    return aside, before, after


def _embedded_only(settings: Settings, verb: str, tool: str) -> None:
    if settings.mongo_url:
        raise ServiceError(
            f"MONGO_URL is set: {verb} that server with its own tools ({tool}, see "
            "deploy/README.md); tracker services backup|restore are for the embedded one"
        )


def _restore_command() -> str:
    exe = Path(sys.executable).parent / "secantus-restore-archive"
    found = str(exe) if exe.exists() else shutil.which("secantus-restore-archive")
    if not found:
        raise ServiceError("secantus-restore-archive not found: install the SecantusDB package")
    return found
