"""Turning a stored message into per-agent deliveries: ids, flags, owed counts.

A delivery is what rings: one row per (agent, event), whose id is the notify
line's id. Sends deliver to every member but the sender; escalations deliver
the same message again to a debtor, flagged `escalated`.
"""

from __future__ import annotations

import apsw

from agorad.notify import preview
from agorad.store import debts as debts_sql
from agorad.store import messages as sql

FLAG_ORDER = ("to-me", "dm", "open", "escalated")


def flag_text(flags: set[str]) -> str:
    return ",".join(f for f in FLAG_ORDER if f in flags)


def deliver(db: apsw.Connection, message: dict, recipients: dict[int, set[str]], now: float) -> list[dict]:
    """Record one delivery per recipient pk (with its flags); return the rows notify lines are made of."""
    if not recipients:
        return []
    ids = sql.take_delivery_ids(db, list(recipients))
    owed = debts_sql.open_counts(db, recipients)
    shown = preview(message["body"])  # once per message, not once per recipient
    rows = []
    for pk, flags in recipients.items():
        agent_id, delivery_id = ids[pk]
        rows.append({
            "agent_pk": pk, "id": delivery_id, "ts": now, "agent": agent_id, "channel": message["channel"],
            "seq": message["seq"], "sender": message["sender"], "title": message["title"], "body": message["body"],
            "flags": flag_text(flags), "owed": owed.get(pk, 0), "preview": shown,
        })
    sql.insert_deliveries(db, [(r["agent_pk"], r["id"], message["pk"], r["flags"], r["owed"], now) for r in rows])
    return rows
