"""SQL for the owed ledger: debts created by asks, discharged by replies, escalated on schedule."""

from __future__ import annotations

import apsw

from agorad.store.connection import rows

# The asker of a debt the hub itself holds (a claim's cadence reminder): no agent has pk 0, so
# nobody's owed_to_me lists it.
HUB_ASKER_PK = 0

_OPEN = "d.discharged_at IS NULL"
_DEBT = ("d.message_pk, d.debtor_pk, a.id AS debtor, d.created_at, d.level, d.due_at, d.rule, d.frozen_s, "
         "c.name AS channel, m.seq, m.sender AS asker, m.sender_pk AS asker_pk, m.title, m.urgency")
_JOINS = "FROM debts d JOIN agents a ON a.pk = d.debtor_pk JOIN messages m ON m.pk = d.message_pk JOIN channels c ON c.pk = m.channel_pk"


def create(db: apsw.Connection, message_pk: int, asker_pk: int, debtor_pks, now: float, due_at: float | None,
           rule: str) -> None:
    db.executemany("INSERT OR IGNORE INTO debts (message_pk, debtor_pk, asker_pk, created_at, due_at, rule) "
                   "VALUES (?, ?, ?, ?, ?, ?)", [(message_pk, pk, asker_pk, now, due_at, rule) for pk in debtor_pks])


def next_due_after(db: apsw.Connection, now: float) -> float | None:
    """The soonest escalation still ahead of `now` (the open-due index holds it first)."""
    return db.execute("SELECT MIN(due_at) FROM debts WHERE discharged_at IS NULL AND due_at > ?", (now,)).fetchone()[0]


def debtor_pks(db: apsw.Connection, message_pk: int) -> set[int]:
    return {r[0] for r in db.execute("SELECT debtor_pk FROM debts WHERE message_pk = ?", (message_pk,))}


def discharge(db: apsw.Connection, message_pk: int, by_message_pk: int, now: float) -> int:
    db.execute("UPDATE debts SET discharged_at = ?, discharged_by = ?, due_at = NULL "
               "WHERE message_pk = ? AND discharged_at IS NULL", (now, by_message_pk, message_pk))
    return db.changes()


def discharge_one(db: apsw.Connection, message_pk: int, debtor_pk: int, by_message_pk: int, now: float,
                  declined: bool) -> int:
    db.execute("UPDATE debts SET discharged_at = ?, discharged_by = ?, due_at = NULL, declined = ? "
               "WHERE message_pk = ? AND debtor_pk = ? AND discharged_at IS NULL",
               (now, by_message_pk, int(declined), message_pk, debtor_pk))
    return db.changes()


def release_asker(db: apsw.Connection, asker_pk: int, now: float) -> int:
    """Settle every open debt on the asks of `asker_pk`, an agent being removed: nobody is left to answer
    (discharged_by stays NULL: no message settled them). Return how many."""
    db.execute("UPDATE debts SET discharged_at = ?, due_at = NULL WHERE asker_pk = ? AND discharged_at IS NULL",
               (now, asker_pk))
    return db.changes()


def debt_of(db: apsw.Connection, message_pk: int, debtor_pk: int) -> dict | None:
    """One debtor's debt on an ask, open or settled: {rule, open, declined, discharged_by}."""
    found = db.execute("SELECT rule, discharged_at IS NULL, declined, discharged_by FROM debts "
                       "WHERE message_pk = ? AND debtor_pk = ?", (message_pk, debtor_pk)).fetchone()
    if found is None:
        return None
    return {"rule": found[0], "open": bool(found[1]), "declined": bool(found[2]), "discharged_by": found[3]}


def rule_of(db: apsw.Connection, message_pk: int) -> str | None:
    """The discharge rule an ask was made under (None for an ask nobody owed, e.g. every addressee removed)."""
    found = db.execute("SELECT rule FROM debts WHERE message_pk = ? LIMIT 1", (message_pk,)).fetchone()
    return found[0] if found else None


def freeze(db: apsw.Connection, paused_at: float, resumed_at: float) -> int:
    """A pause from `paused_at` to `resumed_at` ended: every open debt's clock stood still for the part
    of the pause it lived through, so its next escalation and its schedule move later by that."""
    db.execute("UPDATE debts SET frozen_s = frozen_s + (?1 - MAX(?2, created_at)), "
               "due_at = due_at + (?1 - MAX(?2, created_at)) WHERE discharged_at IS NULL",
               (resumed_at, paused_at))
    return db.changes()


def declined_to(db: apsw.Connection, asker_pk: int, limit: int) -> list[dict]:
    """The newest declines of `asker_pk`'s asks: the debt, when it was declined and by which message."""
    return rows(db.execute(
        f"SELECT {_DEBT}, d.discharged_at AS declined_at, r.seq AS declined_seq, rc.name AS declined_channel "
        f"{_JOINS} JOIN messages r ON r.pk = d.discharged_by JOIN channels rc ON rc.pk = r.channel_pk "
        "WHERE d.declined = 1 AND d.asker_pk = ? ORDER BY d.discharged_at DESC LIMIT ?", (asker_pk, limit)))


def open_counts_all(db: apsw.Connection) -> dict[int, int]:
    """Open debts per debtor, every debtor (no IN list: SQLite caps bound parameters at 32,766)."""
    return dict(db.execute(f"SELECT debtor_pk, COUNT(*) FROM debts d WHERE {_OPEN} GROUP BY debtor_pk"))


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
