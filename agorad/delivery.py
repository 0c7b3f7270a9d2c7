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


def deliver(db: apsw.Connection, message: dict, recipients: dict[int, set[str]], names: dict[int, str],
            now: float) -> list[dict]:
    """Record one delivery per recipient pk (with its flags); return the rows notify lines are made of.

    `names` maps each recipient pk to its agent id (the notify file it rings).
    """
    if not recipients:
        return []
    owed = debts_sql.open_counts(db, recipients)
    shown = preview(message["body"])  # once per message, not once per recipient
    stored = [(pk, flag_text(flags), owed.get(pk, 0)) for pk, flags in recipients.items()]
    ids = sql.insert_deliveries(db, message["pk"], now, stored)
    return [{
        "agent_pk": pk, "id": delivery_id, "ts": now, "agent": names[pk], "channel": message["channel"],
        "seq": message["seq"], "sender": message["sender"], "title": message["title"], "body": message["body"],
        "flags": flags, "owed": owed_count, "preview": shown,
    } for (pk, flags, owed_count), delivery_id in zip(stored, ids)]
