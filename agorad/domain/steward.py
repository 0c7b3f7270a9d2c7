"""The steward's report: what looks stale, for the operator's judgment. It sends nothing and
changes nothing: the hub surfaces, it never orders work.

Stale is: an open claim whose owner is dormant or expired, or that has had no receipt for
`cadences` of its declared cadences; a dormant or expired seat that still holds open claims
or owes replies; a debt still open after the last step of the escalation schedule.
"""

from __future__ import annotations

import apsw

from agorad.domain import claims
from agorad.domain import obligations
from agorad.domain import registry
from agorad.store import agents as agents_sql
from agorad.store import claims as claims_sql
from agorad.store import debts as debts_sql
from agorad.surface.vocab import STEWARD_REASONS

OWNER_DORMANT, OWNER_EXPIRED, NO_RECEIPT = STEWARD_REASONS


def report(db: apsw.Connection, now: float, ttl: float, schedule: tuple[float, ...], cadences: int) -> dict:
    seats = {row["pk"]: registry.view(row, now, ttl) for row in agents_sql.all_agents(db)}
    return {
        "claims": _stale_claims(db, seats, now, cadences),
        "seats": _stale_seats(db, seats),
        "debts": obligations.past_last_escalation(db, now, schedule),
        "cadences": cadences, "now": now,
    }


def _stale_claims(db: apsw.Connection, seats: dict[int, dict], now: float, cadences: int) -> list[dict]:
    found = []
    for claim in claims_sql.open_claims(db):
        owner = seats[claim["owner_pk"]]
        quiet = now - claim["quiet_since"]
        why = [reason for reason, applies in (
            (OWNER_DORMANT, owner["status"] == "dormant"),
            (OWNER_EXPIRED, owner["expired"]),
            (NO_RECEIPT, claim["cadence_minutes"] is not None and quiet >= cadences * claim["cadence_minutes"] * 60),
        ) if applies]
        if why:
            found.append({**claims.view(claim), "why": why, "quiet_for": quiet})
    return found


def _stale_seats(db: apsw.Connection, seats: dict[int, dict]) -> list[dict]:
    held = claims_sql.open_claim_counts(db)
    owed = debts_sql.open_counts_all(db)  # every debtor: an IN list of every seat fails past 32,766
    return [{"agent": seat["id"], "status": seat["status"], "liveness_mode": seat["liveness_mode"],
             "last_seen": seat["last_seen"], "expired": seat["expired"],
             "open_claims": held.get(pk, 0), "owed": owed.get(pk, 0)}
            for pk, seat in seats.items()
            if (seat["status"] == "dormant" or seat["expired"]) and (held.get(pk) or owed.get(pk))]
