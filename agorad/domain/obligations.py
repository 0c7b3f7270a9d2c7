"""The owed ledger: an ask puts a debt on each addressee. Under the rule `any` (--ask) the first
reply from any of them discharges it for all; under `each` (--ask-each) a reply discharges only
its sender's own debt. The rule is stored with the debts, so asks keep the rule they were made
under. A decline (--decline) settles only the decliner's debt, on the record, without an answer.
Debts escalate on a schedule (offsets from the ask, plus the time the hub stood paused), each
step re-notifying the debtor with the flag `escalated`; debts of dormant or offline seats wait.
"""

from __future__ import annotations

import apsw

from agorad.domain import registry
from agorad.domain.delivery import deliver
from agorad.domain.policy import Actor
from agorad.store import agents as agents_sql
from agorad.store import debts as sql
from agorad.store import messages as messages_sql
from agorad.surface import settings
from agorad.surface.errors import InvalidParams
from agorad.surface.vocab import ASK_ANY



ESCALATION_GAP = 0.05  # seconds: escalations falling due closer together than this go out in one pass


def escalation_due_in(db: apsw.Connection, after: float, now: float) -> float | None:
    """Seconds until the soonest escalation due later than `after` (the last escalation pass,
    which handled or left waiting everything due by then), or None if there is none.
    So a 15 min step comes at 15 min, not up to a sweep interval later."""
    due = sql.next_due_after(db, after)
    return None if due is None else max(ESCALATION_GAP, due - now)


def first_due(now: float, schedule: tuple[float, ...]) -> float | None:
    return now + schedule[0] if schedule else None


def open_debts(db: apsw.Connection, message_pk: int, asker_pk: int, debtor_pks: set[int], now: float, schedule,
               rule: str = ASK_ANY) -> None:
    sql.create(db, message_pk, asker_pk, debtor_pks, now, first_due(now, schedule), rule)


def check_decline(db: apsw.Connection, original: dict | None, actor: Actor) -> None:
    """A decline answers an ask the decliner still owes; anything else is refused before a write."""
    if original is None:
        raise InvalidParams("a decline answers an ask: give reply_to, the ask's ref", field="decline")
    ref = f"{original['channel']}#{original['seq']}"
    if not original["ask"]:
        raise InvalidParams(f"{ref} is not an ask, so there is nothing to decline", field="decline")
    debt = sql.debt_of(db, original["pk"], actor.agent_pk)
    if debt is None or not debt["open"]:
        settled = "it is already settled" if debt else "it asks nothing of you"
        raise InvalidParams(f"{actor.agent_id} owes no reply to {ref} ({settled}), so there is nothing to decline",
                            field="decline")


def discharge_by_reply(db: apsw.Connection, original: dict, replier_pk: int, reply_pk: int, now: float,
                       decline: bool = False) -> int:
    """A reply from a debtor of `original` (never its asker): under `any` it discharges every open debt
    of the ask, under `each` only the replier's; a decline settles only the replier's, as declined."""
    if replier_pk == original["sender_pk"]:
        return 0
    debt = sql.debt_of(db, original["pk"], replier_pk)
    if debt is None:
        return 0
    if decline or debt["rule"] != ASK_ANY:
        return sql.discharge_one(db, original["pk"], replier_pk, reply_pk, now, decline)
    return sql.discharge(db, original["pk"], reply_pk, now)


def owed(db: apsw.Connection, actor: Actor, now: float) -> dict:
    return {"i_owe": i_owe(db, actor, now), "owed_to_me": [_shown(d, now) for d in sql.owed_to(db, actor.agent_pk)]}


def declined_to_me(db: apsw.Connection, actor: Actor, now: float) -> list[dict]:
    """The newest debts on the actor's asks that their debtors declined, with the declining message."""
    return [{**_shown(d, now), "declined_at": d["declined_at"], "declined_by": f"{d['declined_channel']}#{d['declined_seq']}"}
            for d in sql.declined_to(db, actor.agent_pk, settings.DECLINED_SHOWN)]


def i_owe(db: apsw.Connection, actor: Actor, now: float) -> list[dict]:
    return [_shown(d, now) for d in sql.owed_by(db, actor.agent_pk)]


def _shown(debt: dict, now: float) -> dict:
    return {
        "ref": f"{debt['channel']}#{debt['seq']}", "asker": debt["asker"], "debtor": debt["debtor"],
        "title": debt["title"], "urgency": debt["urgency"], "asked_at": debt["created_at"], "age": now - debt["created_at"],
        "escalations": debt["level"], "next_escalation_at": debt["due_at"], "rule": debt["rule"],
        "reminder": debt["asker_pk"] is None,  # the hub's own ask: a claim's cadence reminder (cadence.py)
    }


def escalate_due(db: apsw.Connection, now: float, ttl: float, schedule: tuple[float, ...]) -> list[dict]:
    """Escalate every due debt whose debtor is reachable; return the deliveries to notify."""
    events = []
    for debt in sql.due(db, now):
        debtor = registry.view(agents_sql.by_pk(db, debt["debtor_pk"]), now, ttl)
        if debtor["status"] == "dormant" or debtor["expired"]:
            continue  # it waits: nobody is there to hear it
        start = debt["created_at"] + debt["frozen_s"]  # its clock stood still while the hub was paused
        level = max(debt["level"] + 1, sum(1 for offset in schedule if offset <= now - start))
        due_at = start + schedule[level] if level < len(schedule) else None
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
