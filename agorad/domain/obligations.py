"""The owed ledger: an ask puts a debt on each addressee; the first reply from any of them
discharges it for all. Debts escalate on a schedule (offsets from the ask), each step
re-notifying the debtor with the flag `escalated`; debts of dormant or offline seats wait.
"""

from __future__ import annotations

import apsw

from agorad.domain import registry
from agorad.domain.delivery import deliver
from agorad.domain.policy import Actor
from agorad.store import agents as agents_sql
from agorad.store import debts as sql
from agorad.store import messages as messages_sql



ESCALATION_GAP = 0.05  # seconds: escalations falling due closer together than this go out in one pass


def escalation_due_in(db: apsw.Connection, after: float, now: float) -> float | None:
    """Seconds until the soonest escalation due later than `after` (the last escalation pass,
    which handled or left waiting everything due by then), or None if there is none.
    So a 15 min step comes at 15 min, not up to a sweep interval later."""
    due = sql.next_due_after(db, after)
    return None if due is None else max(ESCALATION_GAP, due - now)


def first_due(now: float, schedule: tuple[float, ...]) -> float | None:
    return now + schedule[0] if schedule else None


def open_debts(db: apsw.Connection, message_pk: int, asker_pk: int, debtor_pks: set[int], now: float, schedule) -> None:
    sql.create(db, message_pk, asker_pk, debtor_pks, now, first_due(now, schedule))


def discharge_by_reply(db: apsw.Connection, original: dict, replier_pk: int, reply_pk: int, now: float) -> int:
    """A reply from any debtor of `original` (never its asker) discharges all its open debts."""
    if replier_pk == original["sender_pk"] or replier_pk not in sql.debtor_pks(db, original["pk"]):
        return 0
    return sql.discharge(db, original["pk"], reply_pk, now)


def owed(db: apsw.Connection, actor: Actor, now: float) -> dict:
    return {"i_owe": i_owe(db, actor, now), "owed_to_me": [_shown(d, now) for d in sql.owed_to(db, actor.agent_pk)]}


def i_owe(db: apsw.Connection, actor: Actor, now: float) -> list[dict]:
    return [_shown(d, now) for d in sql.owed_by(db, actor.agent_pk)]


def _shown(debt: dict, now: float) -> dict:
    return {
        "ref": f"{debt['channel']}#{debt['seq']}", "asker": debt["asker"], "debtor": debt["debtor"],
        "title": debt["title"], "urgency": debt["urgency"], "asked_at": debt["created_at"], "age": now - debt["created_at"],
        "escalations": debt["level"], "next_escalation_at": debt["due_at"],
        "reminder": debt["asker_pk"] is None,  # the hub's own ask: a claim's cadence reminder (cadence.py)
    }


def escalate_due(db: apsw.Connection, now: float, ttl: float, schedule: tuple[float, ...]) -> list[dict]:
    """Escalate every due debt whose debtor is reachable; return the deliveries to notify."""
    events = []
    for debt in sql.due(db, now):
        debtor = registry.view(agents_sql.by_pk(db, debt["debtor_pk"]), now, ttl)
        if debtor["status"] == "dormant" or debtor["expired"]:
            continue  # it waits: nobody is there to hear it
        elapsed = now - debt["created_at"]
        level = max(debt["level"] + 1, sum(1 for offset in schedule if offset <= elapsed))
        due_at = debt["created_at"] + schedule[level] if level < len(schedule) else None
        sql.escalate_to(db, debt["message_pk"], debt["debtor_pk"], level, due_at)
        message = messages_sql.by_pk(db, debt["message_pk"])
        flags = {"to-me", "open", "escalated"} | ({"dm"} if message["channel_kind"] == "dm" else set())
        events += deliver(db, message, {debt["debtor_pk"]: flags}, {debt["debtor_pk"]: debtor["id"]}, now)
    return events


def parse_schedule(text: str) -> tuple[float, ...]:
    """`15m,1h,4h` -> offsets in seconds, strictly increasing; empty means never escalate."""
    from agorad.surface.durations import parse_duration

    offsets = tuple(parse_duration(part) for part in text.split(",") if part.strip())
    if any(b <= a for a, b in zip(offsets, offsets[1:])):
        raise ValueError(f"escalation offsets must increase: {text!r}")
    return offsets


def past_last_escalation(db: apsw.Connection, now: float, schedule: tuple[float, ...]) -> list[dict]:
    """Debts still open after the last step of the escalation schedule (for the steward's report)."""
    return [_shown(d, now) for d in sql.past_last_escalation(db, len(schedule))]
