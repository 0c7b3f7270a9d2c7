"""SQL for the agent registry and rename aliases."""

from __future__ import annotations

import json

import apsw

from agorad.store.connection import Database, one, rows

# The dormant rule in SQL (registry.view_of is the same rule for rows already read).
_DUE_DORMANT = "(liveness_mode = 'async' AND COALESCE(last_seen, created_at) + 2 * interval_s < :now)"
_DUE_EXPIRED = ("(liveness_mode = 'ephemeral' "
                "AND (expired_at IS NOT NULL OR COALESCE(last_seen, created_at) + :ttl < :now))")
_COLUMNS = ("pk, id, key_hash, liveness_mode, interval_s, interval_source, declared_interval_s, "
            "status, task, meta, created_at, last_seen, expired_at")
# What agents.update may set (registry.update); names are never taken from a request.
_UPDATABLE = ("liveness_mode", "interval_s", "interval_source", "declared_interval_s", "meta", "key_hash")


def insert(db: apsw.Connection, agent: dict) -> int:
    db.execute(
        "INSERT INTO agents (id, key_hash, liveness_mode, interval_s, interval_source, status, meta, created_at) "
        "VALUES (:id, :key_hash, :liveness_mode, :interval_s, :interval_source, 'idle', :meta, :created_at)",
        agent,
    )
    return db.last_insert_rowid()


def by_id(db: apsw.Connection, agent_id: str) -> dict | None:
    return one(db.execute(f"SELECT {_COLUMNS} FROM agents WHERE id = ?", (agent_id,)))


def by_pk(db: apsw.Connection, pk: int) -> dict | None:
    return one(db.execute(f"SELECT {_COLUMNS} FROM agents WHERE pk = ?", (pk,)))


def alias(db: apsw.Connection, old_id: str) -> dict | None:
    return one(db.execute("SELECT old_id, agent_pk, reason, renamed_at FROM aliases WHERE old_id = ?", (old_id,)))


def former_ids(db: apsw.Connection) -> list[tuple[str, str]]:
    """(former id, current id) of every rename alias."""
    return list(db.execute("SELECT x.old_id, a.id FROM aliases x JOIN agents a ON a.pk = x.agent_pk"))


def all_agents(db: apsw.Connection) -> list[dict]:
    return rows(db.execute(f"SELECT {_COLUMNS} FROM agents ORDER BY id"))


# What registry.view shows of a row, in the order of registry.view_of's parameters.
VIEW_COLUMNS = ("id, liveness_mode, interval_s, interval_source, declared_interval_s, status, task, meta, "
                "created_at, last_seen, expired_at")


def view_values(db: apsw.Connection, after: str, limit: int, unexpired_at: tuple[float, float] | None) -> list[tuple]:
    """Up to `limit` agents' VIEW_COLUMNS as tuples, by id, from after `after`: agents.list at 10,000
    seats, no dict per row. With `unexpired_at` (now, ttl), none that has expired by then: a hub's
    expired ephemeral seats stay in the table, and a listing skips them here, not one by one."""
    if unexpired_at is None:
        return db.execute(f"SELECT {VIEW_COLUMNS} FROM agents WHERE id > :after ORDER BY id LIMIT :limit",
                          {"after": after, "limit": limit}).fetchall()
    now, ttl = unexpired_at
    return db.execute(f"SELECT {VIEW_COLUMNS} FROM agents WHERE id > :after AND NOT {_DUE_EXPIRED} "
                      "ORDER BY id LIMIT :limit", {"after": after, "limit": limit, "now": now, "ttl": ttl}).fetchall()


def pks_by_id(db: apsw.Connection, ids: list[str]) -> dict[str, int]:
    """{id: pk} of the agents among `ids` (one JSON array, not an IN list: SQLite caps parameters at 32,766)."""
    return dict(db.execute("SELECT id, pk FROM agents WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(ids),)))


def census(db: apsw.Connection, now: float, ttl: float) -> dict[str, int]:
    """{effective status: agents} over the agents not expired, by the rules the sweep writes
    (registry.view applies the same ones to one row)."""
    return dict(db.execute(
        f"SELECT CASE WHEN {_DUE_DORMANT} THEN 'dormant' ELSE status END AS effective, COUNT(*) FROM agents "
        f"WHERE NOT {_DUE_EXPIRED} GROUP BY effective", {"now": now, "ttl": ttl}))


def aliases_of(db: apsw.Connection, pk: int) -> list[dict]:
    return rows(db.execute("SELECT old_id, reason, renamed_at FROM aliases WHERE agent_pk = ? ORDER BY renamed_at", (pk,)))


def update(db: apsw.Connection, pk: int, changes: dict) -> None:
    """Set the given columns of one agent (a subset of _UPDATABLE)."""
    unknown = set(changes) - set(_UPDATABLE)
    if unknown:
        raise ValueError(f"not updatable: {sorted(unknown)}")
    if changes:
        assignments = ", ".join(f"{column} = :{column}" for column in changes)
        db.execute(f"UPDATE agents SET {assignments} WHERE pk = :pk", {**changes, "pk": pk})


def record_heartbeat(db: Database, pk: int, status: str | None, task: str | None, now: float) -> tuple | None:
    """Stamp last_seen and apply the status rule; return (id, status, task, last_seen), or None if no such agent.

    A heartbeat that says its status (or a task, which means `working`) sets it;
    its outcome is known, so the id comes back None (RETURNING would cost a
    temporary table). With neither, the agent keeps what it last said, except
    that a dormant one (stored, or due: async and silent 2x its interval) comes
    back idle, and the row is read back.
    """
    if status is not None or task is not None:
        status = status or "working"
        # Usually the status is unchanged: leaving it out of SET skips its CHECK, whose
        # five-word IN list SQLite builds as a temporary index on every run.
        db.step("UPDATE agents SET task = ?, last_seen = ?, expired_at = NULL WHERE pk = ? AND status = ?",
                (task, now, pk, status))
        if not db.changes():
            db.step("UPDATE agents SET status = ?, task = ?, last_seen = ?, expired_at = NULL WHERE pk = ?",
                    (status, task, now, pk))
            if not db.changes():
                return None
        return None, status, task, now
    found = db.step(
        f"""UPDATE agents SET
             status = CASE
               WHEN status = 'dormant' OR {_DUE_DORMANT} THEN 'idle'
               ELSE status END,
             task = CASE
               WHEN status = 'dormant' OR {_DUE_DORMANT} THEN NULL
               ELSE task END,
             last_seen = :now, expired_at = NULL
           WHERE pk = :pk
           RETURNING id, status, task, last_seen""",
        {"now": now, "pk": pk},
    ).fetchall()  # all of it: a RETURNING statement left unfinished would count as in progress at COMMIT
    return found[0] if found else None


def mark_dormant(db: apsw.Connection, now: float) -> int:
    """Async agents silent for 2x their interval become dormant, task cleared."""
    db.execute(f"UPDATE agents SET status = 'dormant', task = NULL WHERE status != 'dormant' AND {_DUE_DORMANT}", {"now": now})
    return db.changes()


def mark_expired(db: apsw.Connection, now: float, ttl: float) -> int:
    """Ephemeral agents silent for longer than the TTL leave the list."""
    db.execute(f"UPDATE agents SET expired_at = :now WHERE expired_at IS NULL AND {_DUE_EXPIRED}", {"now": now, "ttl": ttl})
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
