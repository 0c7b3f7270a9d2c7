"""SQL for the key/value knowledge base."""

from __future__ import annotations

import apsw

from agorad.store.connection import one, rows


def get(db: apsw.Connection, key: str) -> dict | None:
    return one(db.execute("SELECT key, value, author, updated_at FROM kb WHERE key = ?", (key,)))


def put(db: apsw.Connection, key: str, value: str, author: str, now: float) -> None:
    db.execute(
        "INSERT INTO kb (key, value, author, updated_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value, author = excluded.author, "
        "updated_at = excluded.updated_at",
        (key, value, author, now),
    )


def delete(db: apsw.Connection, key: str) -> bool:
    db.execute("DELETE FROM kb WHERE key = ?", (key,))
    return db.changes() > 0


def list_prefix(db: apsw.Connection, prefix: str, limit: int, after: str = "") -> list[dict]:
    """Up to `limit` entries whose key starts with `prefix` and sorts after `after`, by key."""
    # A range scan on the primary key, not LIKE, so '%' and '_' in a prefix mean themselves.
    return rows(
        db.execute(
            "SELECT key, value, author, updated_at FROM kb WHERE key >= ? AND key < ? AND key > ? ORDER BY key LIMIT ?",
            (prefix, prefix + "\U0010ffff", after, limit),
        )
    )


def move(db: apsw.Connection, old_key: str, new_key: str) -> None:
    db.execute("UPDATE kb SET key = ? WHERE key = ?", (new_key, old_key))
