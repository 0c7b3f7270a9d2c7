"""Cadence reminders: the hub surfaces a promise its owner declared, and never authors work.

An open claim whose owner declared a check-in cadence (cadence_minutes) and wrote no receipt
for that long gets ONE reminder: a message the hub itself posts in the claim's channel
(sender `agora-hub`, no sender agent), addressed to the owner, flagged `reminder`, that puts
a debt on the owner in the owed ledger, so the wake's owed=, `agora inbox`, `digest` and
`owed` show it like any debt. It never escalates. At most one stands per (channel, owner): a
second claim of the same owner falling due in the same channel waits until the first is
discharged. A receipt, a park, a done, or removing the cadence discharges (or silences) it;
a reply to it discharges it as a reply discharges any ask. After its reminder a claim stays
quiet until its next receipt. A claim with no cadence never wakes anyone.

The time a claim falls due is stored (claims.remind_at), a fixed share of the cadence late,
derived from the claim's id (`jitter`): claims a fleet opens together fall due spread out,
not in one herd. Stored, so a hub pause can hold reminders and a resume move them on by the
time it was paused (`shift`). Like escalations, the reminder of a dormant or expired owner
waits until the owner is back.
"""

from __future__ import annotations

import apsw

from agorad.domain import messages
from agorad.domain import registry
from agorad.domain.delivery import deliver
from agorad.store import agents as agents_sql
from agorad.store import channels as channels_sql
from agorad.store import claims as sql
from agorad.store import debts as debts_sql
from agorad.surface import settings
from agorad.surface.vocab import ASK_ANY, CLAIM_OPEN, REMINDER_FLAG

_GOLDEN = 2654435761  # Knuth's multiplicative hash: consecutive ids land far apart in [0, 1)


def jitter(claim_pk: int, cadence_minutes: int) -> float:
    """Seconds a claim's reminder comes after its cadence: a share of at most CADENCE_JITTER of the
    cadence, the same for a claim on every hub and after every restart."""
    share = (claim_pk * _GOLDEN % (1 << 32)) / (1 << 32)
    return share * settings.CADENCE_JITTER * cadence_minutes * 60


def remind_at(claim_pk: int, cadence_minutes: int, quiet_since: float) -> float:
    return quiet_since + cadence_minutes * 60 + jitter(claim_pk, cadence_minutes)


def after_change(db: apsw.Connection, claim: dict, changes: dict, now: float) -> dict:
    """The cadence columns a change to a claim's state or cadence implies (claims.update).

    Leaving `open` or removing the cadence discharges a standing reminder and silences the next.
    Reopening, or declaring a cadence where there was none, starts the count now; changing a
    cadence recounts from the same start. A claim whose reminder stands keeps quiet until a receipt.
    """
    if "state" not in changes and "cadence_minutes" not in changes:
        return {}
    state = changes.get("state", claim["state"])
    minutes = changes.get("cadence_minutes", claim["cadence_minutes"])
    if state != CLAIM_OPEN or minutes is None:
        sql.discharge_reminder(db, claim, now)
        return {"remind_at": None}
    if claim["reminder"] is not None:
        return {}
    restart = changes.get("state") == CLAIM_OPEN or claim["cadence_minutes"] is None
    if not restart and claim["remind_at"] is None and claim["reminder_pk"] is not None:
        return {}  # its one reminder went out (and was answered): quiet until the next receipt
    since = now if restart else claim["quiet_since"]
    return {"quiet_since": since, "remind_at": remind_at(claim["pk"], minutes, since)}


def after_receipt(db: apsw.Connection, claim: dict, now: float) -> int:
    """A receipt: the count starts again now; a standing reminder is discharged (how many: 0 or 1)."""
    discharged = sql.discharge_reminder(db, claim, now)
    due = remind_at(claim["pk"], claim["cadence_minutes"], now) \
        if claim["state"] == CLAIM_OPEN and claim["cadence_minutes"] else None
    sql.set_quiet(db, claim["pk"], now, now, due)
    return discharged


def remind_due(db: apsw.Connection, now: float, ttl: float) -> list[dict]:
    """The reminder pass (the hub's sweep runs it): post each due reminder whose owner is there to
    hear it and has none standing in that channel; return the deliveries to notify."""
    events = []
    for claim in sql.due(db, now):
        owner = registry.view(agents_sql.by_pk(db, claim["owner_pk"]), now, ttl)
        if owner["status"] == "dormant" or owner["expired"]:
            continue  # it waits, as escalations do: nobody is there to hear it
        if channels_sql.membership(db, claim["owner_pk"], claim["channel_pk"]) is None:
            continue  # the owner left the channel: it could not read the reminder (it waits for a rejoin)
        if sql.standing_reminder(db, claim["channel_pk"], claim["owner_pk"]) is not None:
            continue  # one at a time per (channel, owner); this one waits for that one's discharge
        events += _post(db, claim, now)
    return events


def _post(db: apsw.Connection, claim: dict, now: float) -> list[dict]:
    channel = channels_sql.by_pk(db, claim["channel_pk"])
    ref, minutes = sql.ref_of(claim["pk"]), claim["cadence_minutes"]
    quiet = int((now - claim["quiet_since"]) // 60)
    body = (f"@{claim['owner']}: you declared a check-in cadence of {minutes} minutes on {ref} "
            f"({claim['title']}), and no receipt came for {quiet} minutes. Post one "
            f"(`agora claim receipt {ref} TEXT`), park it, mark it done, or remove the cadence "
            f"(`agora claim update {ref} --version N --cadence none`): any of them discharges this "
            "reminder. This is the only reminder until the next receipt.")
    message = messages.post_as_hub(db, channel, f"reminder: {ref} {claim['title']}", body, [claim["owner_pk"]], now,
                                   ask=True)
    debts_sql.create(db, message["pk"], debts_sql.HUB_ASKER_PK, [claim["owner_pk"]], now, None,  # None: never escalates
                     ASK_ANY)
    sql.reminded(db, claim["pk"], message["pk"])
    flags = {"to-me", "open", REMINDER_FLAG} | ({"dm"} if channel["kind"] == "dm" else set())
    return deliver(db, message, {claim["owner_pk"]: flags}, {claim["owner_pk"]: claim["owner"]}, now)


def reminder_due_in(db: apsw.Connection, after: float, now: float) -> float | None:
    """Seconds until the soonest reminder due later than `after` (the last reminder pass), or None."""
    due = sql.next_due_after(db, after)
    return None if due is None else max(0.0, due - now)


def shift(db: apsw.Connection, paused_at: float, resumed_at: float) -> int:
    """A hub resume: each open claim's count moves later by the part of the pause it lived through, so
    a pause neither rings the reminders that fell due in it nor counts as silence (steward.py)."""
    return sql.shift_reminders(db, paused_at, resumed_at)
