"""The one connection factory and the write-transaction helper.

WAL with synchronous=FULL (the default) syncs the WAL before COMMIT returns,
so an acknowledged transaction survives power loss. NORMAL syncs it only at
checkpoints: it survives a crash of the process (kill -9), but a power cut
loses every transaction committed since the last checkpoint, acknowledged or
not (measured by tests/reliability/test_power_loss.py; RELIABILITY.md).
"""

from __future__ import annotations

import os
from pathlib import Path

import apsw

from agorad.surface import settings
from agorad.surface.filenames import NotRegularFile, made_private, open_regular
from agorad.surface.paths import FILE_MODE
from agorad.surface.vocab import SYNCHRONOUS_LEVELS

BUSY_TIMEOUT_MS = 5000
SYNCHRONOUS = tuple(level.upper() for level in SYNCHRONOUS_LEVELS)


class Database(apsw.Connection):
    """An apsw connection with one reusable cursor for the request path.

    `Connection.execute` makes a new cursor for every statement (~0.45 us here,
    about as much as running a simple UPDATE); `step` and `step_many` reuse one.
    The next `step` resets that cursor, so they are only for statements whose
    rows are all read before the next statement runs (fetchone, or a list).
    """

    def __init__(self, filename: str, vfs: str | None = None):
        # NOMUTEX: SQLite's per-connection mutex is taken on every API call (~150 per send). The
        # hub's connection lives on the event-loop thread only (the checkpointer opens its own),
        # and apsw refuses to let two threads use one connection or cursor at once.
        super().__init__(filename, flags=apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE | apsw.SQLITE_OPEN_NOMUTEX,
                         vfs=vfs)
        cursor = self.cursor()
        self.step = cursor.execute
        self.step_many = cursor.executemany


def sqlite_path(path: str | os.PathLike) -> str:
    """`path` as SQLite opens it. SQLite takes file names in UTF-8, while a Linux name may hold any bytes
    (Python carries those as lone surrogates): such a path is refused here with an OSError that names it,
    where apsw failed with a bare UnicodeEncodeError (a traceback from `agora backup`, `agorad`)."""
    text = os.fspath(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise OSError(f"{text}: the path is not valid UTF-8, and SQLite opens only paths in UTF-8; "
                      "rename the file or directory, or give another path") from None
    return text


def connect(path: Path, synchronous: str = settings.SYNCHRONOUS.upper(), vfs: str | None = None) -> Database:
    """Open (creating 0600 if needed) the database at `path`, WAL mode, foreign keys on.

    `vfs` is for tests that open the database through their own VFS (tests/reliability/powercut.py).
    apsw's Python VFS files have no shared-memory methods, and SQLite runs WAL without them only in
    exclusive locking mode (the WAL index then lives in the heap), so such a connection is the
    database's only one.
    """
    if synchronous not in SYNCHRONOUS:
        raise ValueError(f"synchronous must be one of {SYNCHRONOUS}")
    name = sqlite_path(path)
    _create_private(path)
    db = Database(name, vfs)
    db.setbusytimeout(BUSY_TIMEOUT_MS)
    if vfs is not None:
        db.execute("PRAGMA locking_mode=EXCLUSIVE")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={synchronous}")
    db.execute("PRAGMA foreign_keys=ON")
    # A WAL grown while a long read held a snapshot (agora check or agora backup beside a busy hub: 900 MB in
    # 40 s, a review measured) kept that size on disk for good; past this, the next write after a complete
    # checkpoint truncates it (SQLite docs, "journal_size_limit").
    db.execute(f"PRAGMA journal_size_limit={settings.WAL_KEEP_MIB * 1024 * 1024}")
    # Savepoint journals and the ephemeral tables of multi-row UPDATEs are temp files by default:
    # creating one costs ~80 us per statement on the send path. Memory keeps them off the disk.
    db.execute("PRAGMA temp_store=MEMORY")
    # apsw's SQLite is built with STAT4, whose planner may look at bound values; a statement
    # whose plan did is marked expired at every bind and re-prepared at every run (measured:
    # two of a send's statements, ~15% of its instructions). No plan here depends on a value,
    # so the Query Planner Stability Guarantee costs nothing and keeps each statement prepared.
    db.config(apsw.SQLITE_DBCONFIG_ENABLE_QPSG, 1)
    return db


def _create_private(path: Path) -> None:
    """Make the database file 0600 (SQLite gives a new -wal and -shm the main file's mode, so this covers
    all three), tightening one that exists wider (copied in as 0644, say), and its -wal and -shm."""
    try:
        fd = open_regular(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE)
    except OSError as exc:
        raise OSError(f"opening the database {path}: {exc.strerror}") from exc
    try:
        made_private(fd)
    finally:
        os.close(fd)
    for suffix in ("-wal", "-shm"):
        try:
            fd = open_regular(f"{path}{suffix}", os.O_RDONLY | os.O_NOFOLLOW)
        except NotRegularFile:  # a FIFO: SQLite's open would not fail, its first read would wait forever
            raise OSError(f"opening the database {path}: {path}{suffix} is not a regular file; move it away") from None
        except OSError:
            continue  # none yet, or a link: SQLite says so when it opens it
        try:
            made_private(fd)
        finally:
            os.close(fd)



class write:
    """One logical write, all or nothing: `with write(db): ...`.

    Alone it is BEGIN IMMEDIATE ... COMMIT. Inside an open transaction (the
    server's group commit) it is a SAVEPOINT, so a failing request undoes only
    its own changes and the batch goes on. A class, not a generator context
    manager: it runs on every request.

    `savepoint=False`, inside the batch, takes no SAVEPOINT (a send's savepoint cost ~28k
    instructions, most of it SQLite copying every page the request touches into the
    savepoint journal). Still all or nothing: a block that fails after it changed a row rolls
    back the whole batch transaction, which `Batch` settles as lost (every waiting reply
    becomes an error); one that fails before changing anything costs nothing. Only for a
    block whose every refusal comes before its first write, so that what rolls the batch back
    is a storage error or a bug (`messages.send` for a plain draft; tests/test_batch.py).
    """

    __slots__ = ("db", "nested", "guarded", "changes")

    def __init__(self, db: apsw.Connection, savepoint: bool = True):
        self.db = db
        self.nested = db.in_transaction
        self.guarded = savepoint or not self.nested

    def __enter__(self) -> Database:
        if self.guarded:
            self.db.step("SAVEPOINT op" if self.nested else "BEGIN IMMEDIATE")
        else:
            self.changes = self.db.total_changes()
        return self.db

    def __exit__(self, kind, value, traceback) -> bool:
        if not self.guarded:
            if kind is not None and self.db.in_transaction and self.db.total_changes() != self.changes:
                self.db.step("ROLLBACK")  # the batch is lost rather than half of this block committed
        elif kind is None:
            self.db.step("RELEASE op" if self.nested else "COMMIT")
        elif not self.db.in_transaction:
            pass  # SQLite already rolled the whole transaction back (FULL, IOERR, NOMEM): let that error show
        elif self.nested:
            self.db.step("ROLLBACK TO op")
            self.db.step("RELEASE op")
        else:
            self.db.step("ROLLBACK")
        return False


def rows(cursor) -> list[dict]:
    """Materialise an apsw cursor as a list of dicts keyed by column name."""
    out = []
    names = None
    for row in cursor:
        if names is None:
            names = [d[0] for d in cursor.get_description()]
        out.append(dict(zip(names, row)))
    return out


def one(cursor) -> dict | None:
    found = rows(cursor)
    return found[0] if found else None
