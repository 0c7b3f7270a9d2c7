"""SQL for the hub's pauses: the open one is the paused state (0007_pause_asks.sql)."""

from __future__ import annotations

import json

import apsw

from agorad.store.connection import one


def current(db: apsw.Connection) -> dict | None:
    """The open pause {pk, paused_at, reason, operator_seats (pks)}, or None when the hub runs."""
    found = one(db.execute("SELECT pk, paused_at, reason, operator_seats FROM pauses WHERE resumed_at IS NULL"))
    if found:
        found["operator_seats"] = json.loads(found["operator_seats"])
    return found


def open_pause(db: apsw.Connection, now: float, reason: str, seat_pks: list[int]) -> int:
    db.execute("INSERT INTO pauses (paused_at, reason, operator_seats) VALUES (?, ?, ?)",
               (now, reason, json.dumps(sorted(seat_pks))))
    return db.last_insert_rowid()


def close(db: apsw.Connection, pk: int, now: float) -> None:
    db.execute("UPDATE pauses SET resumed_at = ? WHERE pk = ?", (now, pk))
