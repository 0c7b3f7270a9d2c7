"""SQL for the agent registry and rename aliases."""

from __future__ import annotations

import apsw

from agorad.store.connection import one, rows

_COLUMNS = "pk, id, key_hash, liveness_mode, interval_s, status, task, meta, created_at, last_seen, expired_at"


def insert(db: apsw.Connection, agent: dict) -> int:
    db.execute(
        "INSERT INTO agents (id, key_hash, liveness_mode, interval_s, status, meta, created_at) "
        "VALUES (:id, :key_hash, :liveness_mode, :interval_s, 'idle', :meta, :created_at)",
        agent,
    )
    return db.last_insert_rowid()


def by_id(db: apsw.Connection, agent_id: str) -> dict | None:
    return one(db.execute(f"SELECT {_COLUMNS} FROM agents WHERE id = ?", (agent_id,)))


def by_pk(db: apsw.Connection, pk: int) -> dict | None:
    return one(db.execute(f"SELECT {_COLUMNS} FROM agents WHERE pk = ?", (pk,)))


def alias(db: apsw.Connection, old_id: str) -> dict | None:
    return one(db.execute("SELECT old_id, agent_pk, reason, renamed_at FROM aliases WHERE old_id = ?", (old_id,)))


def all_agents(db: apsw.Connection) -> list[dict]:
    return rows(db.execute(f"SELECT {_COLUMNS} FROM agents ORDER BY id"))


def aliases_of(db: apsw.Connection, pk: int) -> list[dict]:
    return rows(db.execute("SELECT old_id, reason, renamed_at FROM aliases WHERE agent_pk = ? ORDER BY renamed_at", (pk,)))


def record_heartbeat(db: apsw.Connection, pk: int, status: str, task: str | None, now: float) -> None:
    db.execute(
        "UPDATE agents SET status = ?, task = ?, last_seen = ?, expired_at = NULL WHERE pk = ?",
        (status, task, now, pk),
    )


def mark_dormant(db: apsw.Connection, now: float) -> int:
    """Async agents silent for 2x their interval become dormant, task cleared."""
    db.execute(
        "UPDATE agents SET status = 'dormant', task = NULL "
        "WHERE liveness_mode = 'async' AND status != 'dormant' "
        "AND COALESCE(last_seen, created_at) + 2 * interval_s < ?",
        (now,),
    )
    return db.changes()


def mark_expired(db: apsw.Connection, now: float, ttl: float) -> int:
    """Ephemeral agents silent for longer than the TTL leave the list."""
    db.execute(
        "UPDATE agents SET expired_at = ? "
        "WHERE liveness_mode = 'ephemeral' AND expired_at IS NULL "
        "AND COALESCE(last_seen, created_at) + ? < ?",
        (now, ttl, now),
    )
    return db.changes()


def rename(db: apsw.Connection, pk: int, old_id: str, new_id: str, reason: str, now: float) -> None:
    db.execute("DELETE FROM aliases WHERE old_id = ? AND agent_pk = ?", (new_id, pk))
    db.execute("UPDATE agents SET id = ? WHERE pk = ?", (new_id, pk))
    db.execute(
        "INSERT INTO aliases (old_id, agent_pk, reason, renamed_at) VALUES (?, ?, ?, ?)",
        (old_id, pk, reason, now),
    )


def delete(db: apsw.Connection, pk: int) -> None:
    db.execute("DELETE FROM agents WHERE pk = ?", (pk,))


def counts(db: apsw.Connection) -> dict:
    return {
        "agents": db.execute("SELECT COUNT(*) FROM agents").fetchone()[0],
        "aliases": db.execute("SELECT COUNT(*) FROM aliases").fetchone()[0],
        "kb": db.execute("SELECT COUNT(*) FROM kb").fetchone()[0],
    }
