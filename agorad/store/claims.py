"""SQL for claims, their receipts, and the cadence reminders the hub posts for them."""

from __future__ import annotations

import apsw

from agorad.store.connection import one, rows

# A claim as every read shows it: its channel's and owner's current names, and whether the
# reminder it was last given still stands (its debt is open).
_CLAIM = ("k.pk, k.channel_pk, c.name AS channel, c.kind AS channel_kind, k.owner_pk, a.id AS owner, k.title, "
          "k.state, k.cadence_minutes, k.version, k.link_pk, k.created_at, k.updated_at, k.quiet_since, "
          "k.last_receipt_at, k.remind_at, k.reminder_pk, "
          "(SELECT COUNT(*) FROM claim_receipts r WHERE r.claim_pk = k.pk) AS receipts, "
          "(SELECT c2.name || '#' || m.seq FROM debts d JOIN messages m ON m.pk = d.message_pk "
          " JOIN channels c2 ON c2.pk = m.channel_pk "
          " WHERE d.message_pk = k.reminder_pk AND d.debtor_pk = k.owner_pk AND d.discharged_at IS NULL) AS reminder")
_JOINS = "FROM claims k JOIN channels c ON c.pk = k.channel_pk JOIN agents a ON a.pk = k.owner_pk"

# Fields claims.update may change, each a column of the same name.
CHANGEABLE = ("title", "state", "cadence_minutes", "link_pk", "quiet_since", "remind_at")

REF_PREFIX = "claim:"  # a claim's ref as users type it (agora-rpc(7) "Claim"): `claim:<n>`, numbered across the hub


def ref_of(pk: int) -> str:
    return f"{REF_PREFIX}{pk}"


def insert(db: apsw.Connection, channel_pk: int, owner_pk: int, title: str, cadence_minutes: int | None,
           link_pk: int | None, now: float) -> int:
    db.execute("INSERT INTO claims (channel_pk, owner_pk, title, cadence_minutes, link_pk, created_at, updated_at, "
               "quiet_since) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
               (channel_pk, owner_pk, title, cadence_minutes, link_pk, now, now, now))
    return db.last_insert_rowid()


def owns_in(db: apsw.Connection, owner_pk: int, channel_pk: int) -> bool:
    """Whether the agent owns a claim in the channel (claims_by_owner answers it)."""
    return db.execute("SELECT 1 FROM claims WHERE owner_pk = ? AND channel_pk = ? LIMIT 1",
                      (owner_pk, channel_pk)).fetchone() is not None


def by_pk(db: apsw.Connection, pk: int) -> dict | None:
    return one(db.execute(f"SELECT {_CLAIM} {_JOINS} WHERE k.pk = ?", (pk,)))


def listing(db: apsw.Connection, viewer_pk: int | None, channel_pk: int | None, state: str | None,
            owner_pk: int | None, limit: int, after_pk: int = 0) -> list[dict]:
    """Claims after `after_pk`, oldest first, filtered; `viewer_pk`: only those that agent owns or
    that are in channels it is a member of."""
    where, args = ["k.pk > ?"], [after_pk]
    for clause, value in (("k.channel_pk = ?", channel_pk), ("k.state = ?", state), ("k.owner_pk = ?", owner_pk),
                          ("(k.owner_pk = ? OR EXISTS (SELECT 1 FROM members mb "
                           "WHERE mb.channel_pk = k.channel_pk AND mb.agent_pk = ?))", viewer_pk)):
        if value is not None:
            where.append(clause)
            args.extend([value] * clause.count("?"))
    return rows(db.execute(f"SELECT {_CLAIM} {_JOINS} WHERE {' AND '.join(where)} ORDER BY k.pk LIMIT ?",
                           (*args, limit)))


def update(db: apsw.Connection, pk: int, version: int, changes: dict, now: float) -> bool:
    """Apply `changes` (columns of CHANGEABLE) and take the next version, if the row is still at
    `version`; False if it is not."""
    unknown = set(changes) - set(CHANGEABLE)
    if unknown:
        raise ValueError(f"not changeable: {sorted(unknown)}")
    columns = [f"{name} = ?" for name in changes] + ["updated_at = ?", "version = version + 1"]
    db.execute(f"UPDATE claims SET {', '.join(columns)} WHERE pk = ? AND version = ?",
               (*changes.values(), now, pk, version))
    return db.changes() == 1


def add_receipt(db: apsw.Connection, claim_pk: int, text: str, now: float) -> int:
    """Append a receipt; return its number (1, 2, ... per claim)."""
    n = db.execute("SELECT COALESCE(MAX(n), 0) + 1 FROM claim_receipts WHERE claim_pk = ?", (claim_pk,)).fetchone()[0]
    db.execute("INSERT INTO claim_receipts (claim_pk, n, text, created_at) VALUES (?, ?, ?, ?)", (claim_pk, n, text, now))
    return n


def receipts(db: apsw.Connection, claim_pk: int, limit: int) -> list[dict]:
    """The newest `limit` receipts, oldest of them first."""
    return list(reversed(rows(db.execute(
        "SELECT n, text, created_at FROM claim_receipts WHERE claim_pk = ? ORDER BY n DESC LIMIT ?", (claim_pk, limit)))))


# --- cadence reminders -----------------------------------------------------------------------

def set_remind_at(db: apsw.Connection, pk: int, remind_at: float | None) -> None:
    db.execute("UPDATE claims SET remind_at = ? WHERE pk = ?", (remind_at, pk))


def set_quiet(db: apsw.Connection, pk: int, quiet_since: float, last_receipt_at: float, remind_at: float | None) -> None:
    """A receipt: the cadence counts again from `quiet_since`."""
    db.execute("UPDATE claims SET quiet_since = ?, last_receipt_at = ?, remind_at = ? WHERE pk = ?",
               (quiet_since, last_receipt_at, remind_at, pk))


def due(db: apsw.Connection, now: float) -> list[dict]:
    """Open claims with a cadence whose reminder time has come, soonest first."""
    return rows(db.execute(f"SELECT {_CLAIM} {_JOINS} WHERE k.remind_at <= ? AND k.state = 'open' "
                           "AND k.cadence_minutes IS NOT NULL ORDER BY k.remind_at, k.pk", (now,)))


def next_due_after(db: apsw.Connection, after: float) -> float | None:
    """The soonest reminder time later than `after` (the claims_remind_due index holds it first)."""
    return db.execute("SELECT MIN(remind_at) FROM claims WHERE remind_at > ?", (after,)).fetchone()[0]


def standing_reminder(db: apsw.Connection, channel_pk: int, owner_pk: int) -> int | None:
    """The claim whose reminder still stands for this owner in this channel, if any."""
    found = db.execute(
        "SELECT k.pk FROM claims k JOIN debts d ON d.message_pk = k.reminder_pk AND d.debtor_pk = k.owner_pk "
        "WHERE k.channel_pk = ? AND k.owner_pk = ? AND d.discharged_at IS NULL LIMIT 1",
        (channel_pk, owner_pk)).fetchone()
    return found[0] if found else None


def reminded(db: apsw.Connection, pk: int, message_pk: int) -> None:
    """The claim's one reminder went out: no other until a receipt (or a new cadence) starts the count again."""
    db.execute("UPDATE claims SET reminder_pk = ?, remind_at = NULL WHERE pk = ?", (message_pk, pk))


def discharge_reminder(db: apsw.Connection, claim: dict, now: float) -> int:
    """Discharge the claim's standing reminder, if one stands; return how many debts that closed."""
    if claim["reminder_pk"] is None:
        return 0
    db.execute("UPDATE debts SET discharged_at = ?, due_at = NULL "
               "WHERE message_pk = ? AND debtor_pk = ? AND discharged_at IS NULL",
               (now, claim["reminder_pk"], claim["owner_pk"]))
    return db.changes()


def version_links_to_owner(db: apsw.Connection, owner_pk: int, now: float) -> int:
    """Before an owner's claims are deleted (agents.remove): the other claims linking to them are
    about to lose the link (ON DELETE SET NULL), so each moves to a new version."""
    db.execute("UPDATE claims SET version = version + 1, updated_at = ? WHERE owner_pk <> ? AND link_pk IN "
               "(SELECT pk FROM claims WHERE owner_pk = ?)", (now, owner_pk, owner_pk))
    return db.changes()


def shift_reminders(db: apsw.Connection, paused_at: float, resumed_at: float) -> int:
    """A hub resume: every open claim's count (its quiet time and its pending reminder) moves later by
    the part of the pause it lived through (a count that began during the pause starts at the resume)."""
    db.execute("UPDATE claims SET remind_at = remind_at + (:resumed - MAX(:paused, quiet_since)), "
               "quiet_since = quiet_since + (:resumed - MAX(:paused, quiet_since)) "
               "WHERE state = 'open' AND quiet_since < :resumed", {"paused": paused_at, "resumed": resumed_at})
    return db.changes()


# --- the steward -----------------------------------------------------------------------------

def open_claims(db: apsw.Connection) -> list[dict]:
    return rows(db.execute(f"SELECT {_CLAIM} {_JOINS} WHERE k.state = 'open' ORDER BY k.pk"))


def open_claim_counts(db: apsw.Connection) -> dict[int, int]:
    return dict(db.execute("SELECT owner_pk, COUNT(*) FROM claims WHERE state = 'open' GROUP BY owner_pk"))
