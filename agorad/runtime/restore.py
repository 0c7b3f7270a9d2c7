"""`agora restore`: install a backup as the home's database, and notify files that match it.

Only with no hub on the home: the hub's connection would keep serving the old database (or
write the new one's pages from its old cache). The home's lock (`agorad.lock`, what `agora up`
takes) is held throughout, so no hub can start half way either.

Nothing of the home changes until the file is known good: it is copied into the home first,
and that copy is checked (an SQLite database, Agora's tables, a schema no newer than this
code's migrations, `integrity_check`) before it replaces anything.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import apsw

from agorad.runtime import homelock
from agorad.runtime.notify_rebuild import install, prepare
from agorad.store import integrity, snapshot
from agorad.store.connection import connect
from agorad.store.migrations import available, migrate
from agorad.surface.errors import AgoraError
from agorad.surface.filenames import FILE_MODE, sync_path
from agorad.surface.paths import Home


def restore(home: Home, source: Path, notify_dir: Path | None, rotate_bytes: int) -> dict:
    """Install `source` as the home's database and remake the notify files in `notify_dir`
    (None: notify files are off); return what the restored database holds."""
    source = Path(os.path.abspath(source))
    if not source.is_file():
        raise AgoraError(f"no file {source} to restore")
    reading = _open_source(source)  # before the home is touched: a refused file made the home, keys/ and the lock
    try:
        return _restore_from(reading, home, source, notify_dir, rotate_bytes)
    finally:
        reading.close()


def _restore_from(reading: apsw.Connection, home: Home, source: Path, notify_dir: Path | None,
                  rotate_bytes: int) -> dict:
    home.ensure()
    lock = homelock.take(home)
    if lock is None or homelock.socket_answers(home):
        if lock is not None:
            os.close(lock)
        pid = homelock.running_hub(home)
        if lock is None and pid is None:
            raise AgoraError(f"cannot restore now: {homelock.held_elsewhere(home)}")
        raise AgoraError(f"a hub is running on {home.root} (pid {pid or '?'}); stop it before restoring")
    try:
        staged = home.root / f".{home.db.name}.restore.{os.getpid()}"
        files = None
        try:
            facts = _stage(reading, source, staged)
            _upgrade(staged)
            agents = list(facts["last_delivery_id"])
            # The notify files are made before anything is replaced: if they cannot be (a full disk,
            # a directory not writable), the home keeps its database and its files.
            files = _notify_files(staged, notify_dir, agents, rotate_bytes) if notify_dir is not None else None
            _install(home, staged)
        except BaseException:
            if files is not None:
                shutil.rmtree(files, ignore_errors=True)
            raise
        finally:
            staged.unlink(missing_ok=True)
        if files is not None:
            install(files, notify_dir, agents)
    finally:
        os.close(lock)
    return {"path": str(home.db), "source": str(source), **facts}


def _stage(reading: apsw.Connection, source: Path, staged: Path) -> dict:
    """Copy `source`, open in `reading`, to `staged` (0600) and check the copy; what it holds, or an error
    naming the file.

    The copy goes through SQLite (a read-only connection and the backup API, as `agora backup` makes
    one), not byte for byte: a database in WAL mode, such as a home's agora.db left by a hub killed
    with -9, keeps committed transactions in its -wal beside it, which a copy of the main file alone
    would silently drop (acknowledged sends lost, and the report's counts none the wiser).
    """
    try:
        os.close(os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE))
    except OSError as exc:
        raise OSError(f"copying {source} into the home: {exc.strerror}") from None
    with _refused_as_unsound(source):
        snapshot.copy_into(reading, staged)
        sync_path(staged)
        db = snapshot.open_own_copy(staged)
        try:
            _check(db, source)
            return snapshot.summary(db)
        finally:
            db.close()


def _open_source(source: Path) -> apsw.Connection:
    """`source` opened read-only, refused at once, reading it only, if it is no database or not an Agora
    one (or a newer one). The staged copy is checked again, and whole (`_check`)."""
    with _refused_as_unsound(source):
        reading = snapshot.open_readonly(source)
        try:
            reading.execute("PRAGMA schema_version").fetchall()  # a file that is no database says so here
            _check_schema(reading, source)
        except BaseException:
            reading.close()
            raise
        return reading


@contextlib.contextmanager
def _refused_as_unsound(source: Path):
    """SQLite's error reading `source`, or its copy, as the refusal that names the file."""
    try:
        yield
    except apsw.Error as exc:
        raise AgoraError(f"{source} is not a sound Agora database ({exc}); nothing was changed") from None


def _upgrade(staged: Path) -> None:
    """Bring the checked copy to this code's schema, as the hub would at start: the notify files are
    remade from it, through the newest schema's tables (a backup may be older)."""
    db = connect(staged)
    try:
        migrate(db)
    finally:
        db.close()


def _check(db: apsw.Connection, source: Path) -> None:
    _check_schema(db, source)
    found = integrity.problems(db)
    if found:
        first = found[0].replace("\n", "; ")[:200]
        raise AgoraError(f"{source} fails integrity_check ({first} ...); nothing was changed")


def _check_schema(db: apsw.Connection, source: Path) -> None:
    version = integrity.schema_version(db)
    if version is None:
        raise AgoraError(f"{source} is an SQLite database but not an Agora one (no agents, channels, messages, "
                         "deliveries or schema_migrations table); nothing was changed")
    newest = max(number for number, _, _ in available())
    if version > newest:
        raise AgoraError(f"{source} is at schema {version}, newer than this agora knows ({newest}); "
                         "upgrade agora to restore it; nothing was changed")


def _install(home: Home, staged: Path) -> None:
    """The checked copy becomes agora.db. The old -wal and -shm go first: SQLite would replay a
    WAL left beside the new file into it, writing the old database's pages over the new one's."""
    database, wal, shm = home.db_files
    for companion in (wal, shm):
        companion.unlink(missing_ok=True)
    os.replace(staged, database)
    sync_path(home.root)


def _notify_files(staged: Path, notify_dir: Path, agents: list[str], rotate_bytes: int) -> Path:
    db = snapshot.open_own_copy(staged)  # the home's lock is held: no hub shares it
    try:
        return prepare(db, notify_dir, agents, rotate_bytes)
    finally:
        db.close()
