"""SQL for the owed ledger: debts created by asks, discharged by replies, escalated on schedule."""

from __future__ import annotations

import apsw

from agorad.store.connection import rows

# The asker of a debt the hub itself holds (a claim's cadence reminder): no agent has pk 0, so
# nobody's owed_to_me lists it.
HUB_ASKER_PK = 0

_OPEN = "d.discharged_at IS NULL"
_DEBT = ("d.message_pk, d.debtor_pk, a.id AS debtor, d.created_at, d.level, d.due_at, "
         "c.name AS channel, m.seq, m.sender AS asker, m.sender_pk AS asker_pk, m.title, m.urgency")
_JOINS = "FROM debts d JOIN agents a ON a.pk = d.debtor_pk JOIN messages m ON m.pk = d.message_pk JOIN channels c ON c.pk = m.channel_pk"


def create(db: apsw.Connection, message_pk: int, asker_pk: int, debtor_pks, now: float, due_at: float | None) -> None:
    db.executemany("INSERT OR IGNORE INTO debts (message_pk, debtor_pk, asker_pk, created_at, due_at) VALUES (?, ?, ?, ?, ?)",
                   [(message_pk, pk, asker_pk, now, due_at) for pk in debtor_pks])


def next_due_after(db: apsw.Connection, now: float) -> float | None:
    """The soonest escalation still ahead of `now` (the open-due index holds it first)."""
    return db.execute("SELECT MIN(due_at) FROM debts WHERE discharged_at IS NULL AND due_at > ?", (now,)).fetchone()[0]


def debtor_pks(db: apsw.Connection, message_pk: int) -> set[int]:
    return {r[0] for r in db.execute("SELECT debtor_pk FROM debts WHERE message_pk = ?", (message_pk,))}


def discharge(db: apsw.Connection, message_pk: int, by_message_pk: int, now: float) -> int:
    db.execute("UPDATE debts SET discharged_at = ?, discharged_by = ?, due_at = NULL "
               "WHERE message_pk = ? AND discharged_at IS NULL", (now, by_message_pk, message_pk))
    return db.changes()


def open_counts(db: apsw.Connection, agent_pks) -> dict[int, int]:
    pks = list(agent_pks)
    if not pks:
        return {}
    marks = ",".join("?" * len(pks))
    return dict(db.execute(f"SELECT debtor_pk, COUNT(*) FROM debts d WHERE {_OPEN} AND debtor_pk IN ({marks}) GROUP BY debtor_pk", pks))


def owed_by(db: apsw.Connection, agent_pk: int) -> list[dict]:
    return rows(db.execute(f"SELECT {_DEBT} {_JOINS} WHERE {_OPEN} AND d.debtor_pk = ? ORDER BY d.created_at", (agent_pk,)))


def owed_to(db: apsw.Connection, agent_pk: int) -> list[dict]:
    return rows(db.execute(f"SELECT {_DEBT} {_JOINS} WHERE {_OPEN} AND d.asker_pk = ? ORDER BY d.created_at", (agent_pk,)))


def due(db: apsw.Connection, now: float) -> list[dict]:
    return rows(db.execute(f"SELECT {_DEBT} {_JOINS} WHERE {_OPEN} AND d.due_at <= ? ORDER BY d.due_at", (now,)))


def escalate_to(db: apsw.Connection, message_pk: int, debtor_pk: int, level: int, due_at: float | None) -> None:
    db.execute("UPDATE debts SET level = ?, due_at = ? WHERE message_pk = ? AND debtor_pk = ?",
               (level, due_at, message_pk, debtor_pk))


def is_open_for(db: apsw.Connection, message_pk: int, agent_pk: int) -> bool:
    return db.execute("SELECT 1 FROM debts WHERE message_pk = ? AND debtor_pk = ? AND discharged_at IS NULL",
                      (message_pk, agent_pk)).fetchone() is not None


def past_last_escalation(db: apsw.Connection, levels: int) -> list[dict]:
    """Open debts that have had every escalation the schedule has (`levels` steps) and still stand."""
    return rows(db.execute(f"SELECT {_DEBT} {_JOINS} WHERE {_OPEN} AND d.due_at IS NULL AND d.level >= ? "
                           "AND d.asker_pk != ? ORDER BY d.created_at", (levels, HUB_ASKER_PK)))
