"""SQL for charters: their versions, the current one per scope, and each seat's read receipts.

`scope` is 0 for the hub's charter, else a channel's pk (migration 0008).
"""

from __future__ import annotations

import apsw

from agorad.store.connection import one, rows

HUB_SCOPE = 0
_VERSION = "v.version, v.body AS text, v.set_by, v.set_at"


def current(db: apsw.Connection, scope: int) -> dict | None:
    """The scope's current version, or None if it never had a charter."""
    return one(db.execute(f"SELECT {_VERSION} FROM charters h JOIN charter_versions v "
                          "ON v.scope = h.scope AND v.version = h.version WHERE h.scope = ?", (scope,)))


def version(db: apsw.Connection, scope: int, number: int) -> dict | None:
    return one(db.execute(f"SELECT {_VERSION} FROM charter_versions v WHERE v.scope = ? AND v.version = ?",
                          (scope, number)))


def add_version(db: apsw.Connection, scope: int, number: int, body: str, set_by: str, now: float) -> None:
    """Store version `number` of the scope's charter and make it the current one."""
    db.execute("INSERT INTO charter_versions (scope, version, body, set_by, set_at) VALUES (?, ?, ?, ?, ?)",
               (scope, number, body, set_by, now))
    db.execute("INSERT INTO charters (scope, version) VALUES (?, ?) "
               "ON CONFLICT(scope) DO UPDATE SET version = excluded.version", (scope, number))


def record_receipt(db: apsw.Connection, agent_pk: int, scope: int, number: int, now: float) -> None:
    """The seat has read version `number`: its receipt moves up to it (never down)."""
    db.execute("INSERT INTO charter_receipts (agent_pk, scope, version, read_at) VALUES (?, ?, ?, ?) "
               "ON CONFLICT(agent_pk, scope) DO UPDATE SET version = excluded.version, read_at = excluded.read_at "
               "WHERE excluded.version > charter_receipts.version", (agent_pk, scope, number, now))


def receipt(db: apsw.Connection, agent_pk: int, scope: int) -> int:
    """The newest version of the scope's charter the seat has read (0: none)."""
    found = db.execute("SELECT version FROM charter_receipts WHERE agent_pk = ? AND scope = ?",
                       (agent_pk, scope)).fetchone()
    return found[0] if found else 0


# The charters binding seat ?1 (the hub's, scope ?2, and those of channels it is in) whose current
# version it has not read: the hub's first, then by channel name. On the inbox check's path: it walks
# `charters` (one row per chartered scope, a handful) and probes members, charter_receipts and
# charter_versions by their keys; an empty table costs one seek. tests/test_charters.py holds the plan.
UNREAD = (
    "SELECT c.name AS channel, h.version, v.set_by, v.set_at FROM charters h "
    "JOIN charter_versions v ON v.scope = h.scope AND v.version = h.version "
    "LEFT JOIN channels c ON c.pk = h.scope "
    "WHERE (h.scope = ?2 OR EXISTS (SELECT 1 FROM members m WHERE m.agent_pk = ?1 AND m.channel_pk = h.scope)) "
    "AND NOT EXISTS (SELECT 1 FROM charter_receipts r WHERE r.agent_pk = ?1 AND r.scope = h.scope "
    "AND r.version >= h.version) "
    "ORDER BY h.scope != ?2, c.name")


def unread_by(db: apsw.Connection, agent_pk: int) -> list[dict]:
    """The charters binding the seat whose current version it has not read (`UNREAD`)."""
    return rows(db.execute(UNREAD, (agent_pk, HUB_SCOPE)))
