"""A consistent copy of a live database through SQLite's online backup API, and what a copy holds.

The copy reads through a connection of its own, opened read-only. In WAL mode a reader never
waits for the writer and the writer never waits for it: the reader's transaction sees the
database as of its first read (the main file plus every frame committed to the WAL by then,
checkpointed or not). Copying every page in one `step` keeps the whole copy inside that one read
transaction, so it is one committed state of the hub, never a mix: a copy made in several steps
starts over whenever another connection writes, which a busy hub would do forever.
"""

from __future__ import annotations

import os

import apsw

from agorad.store.connection import BUSY_TIMEOUT_MS, rows, sqlite_path


def open_readonly(path: str | os.PathLike) -> apsw.Connection:
    """A read-only connection to `path`; it never creates the file."""
    db = apsw.Connection(sqlite_path(path), flags=apsw.SQLITE_OPEN_READONLY)
    db.setbusytimeout(BUSY_TIMEOUT_MS)
    return db


def open_own_copy(path: str | os.PathLike) -> apsw.Connection:
    """A read-write connection to a copy no one else uses (never created here). Closing it, the
    last connection, removes any -wal and -shm it made: a read-only one would leave them behind."""
    db = apsw.Connection(sqlite_path(path), flags=apsw.SQLITE_OPEN_READWRITE)
    db.setbusytimeout(BUSY_TIMEOUT_MS)
    return db


def copy_into(source: apsw.Connection, target: str | os.PathLike) -> None:
    """Copy `source` into a new database file at `target`, all pages in one read transaction.

    The copy is left in rollback-journal mode: one self-contained file, with no -wal or -shm
    beside it to lose on the way to wherever backups are kept (the hub turns WAL back on when it
    opens a restored copy).
    """
    dest = apsw.Connection(sqlite_path(target), flags=apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE)
    try:
        with dest.backup("main", source, "main") as copy:
            copy.step(-1)
        dest.execute("PRAGMA journal_mode=DELETE")
    finally:
        dest.close()


def summary(db: apsw.Connection) -> dict:
    """What a database holds, in the numbers a backup reports: messages, agents, and each
    agent's last delivery id (ids count up per agent, so that is how far its notify file goes)."""
    agents = db.execute("SELECT COUNT(*) FROM agents").fetchone()[0]
    messages = db.execute("SELECT COALESCE(SUM(head), 0) FROM channels").fetchone()[0]  # seqs are gapless
    heads = db.execute("SELECT 1 FROM sqlite_schema WHERE name = 'delivery_heads'").fetchone()
    newest = ("(SELECT last_id FROM delivery_heads h WHERE h.agent_pk = a.pk)" if heads
              else "(SELECT MAX(d.id) FROM deliveries d WHERE d.agent_pk = a.pk)")  # a copy from before 0009
    last = rows(db.execute(f"SELECT a.id AS agent, {newest} AS last FROM agents a ORDER BY a.id"))
    return {"messages": messages, "agents": agents,
            "last_delivery_id": {row["agent"]: row["last"] or 0 for row in last}}
