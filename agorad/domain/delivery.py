"""Turning a stored message into per-agent deliveries: ids, flags, owed counts.

A delivery is what rings: one row per (agent, event), whose id is the notify
line's id. Sends deliver to every member but the sender; escalations deliver
the same message again to a debtor, flagged `escalated`. A `next_turn` send's
deliveries are flagged `next-turn`: written like every delivery, but `agora
listen` does not ring for them (they wait for the seat's next inbox check).
"""

from __future__ import annotations

import apsw

from agorad.surface.fence import preview
from agorad.store import messages as sql
from agorad.surface.vocab import FLAGS



def flag_text(flags: set[str]) -> str:
    return ",".join([f for f in FLAGS if f in flags])  # a list: join would build one from a generator anyway


def deliver(db: apsw.Connection, message: dict, recipients: dict[int, set[str]], names: dict[int, str],
            now: float, marks: dict[int, tuple[int, int]] | None = None) -> list[dict]:
    """Record one delivery per recipient pk (with its flags); return the rows notify lines are made of.

    `names` maps each recipient pk to its agent id (the notify file it rings). A
    delivery's id is its agent's newest + 1, read in this transaction by the only
    writer: ids stay gapless per agent, and a rolled-back send gives them back. `marks` ({pk: (newest
    id, its seq, open debts)} of every recipient, and maybe others), when the caller read them earlier
    in this request and nothing since could change them; else they are read here.
    """
    if not recipients:
        return []
    if marks is None or not recipients.keys() <= marks.keys():
        marks = sql.recipient_marks(db, list(recipients))
    shown = preview(message["body"])  # once per message, not once per recipient
    channel, seq, sender, title, body, message_pk = (message["channel"], message["seq"], message["sender"],
                                                     message["title"], message["body"], message["pk"])
    texts: dict[int, str] = {}  # id(flags set) -> its text: a channel's recipients share a few sets (see send)
    rows, inserts = [], []
    for pk, flags in recipients.items():
        newest, last, owed = marks[pk]
        text = texts.get(id(flags))
        if text is None:
            text = texts[id(flags)] = flag_text(flags)
        rows.append({
            "agent_pk": pk, "id": newest + 1, "ts": now, "agent": names[pk], "channel": channel,
            "seq": seq, "sender": sender, "title": title, "body": body, "flags": text, "owed": owed, "preview": shown,
        })
        inserts.append((pk, newest + 1, last, message_pk, text, owed, now))
    sql.insert_deliveries(db, inserts)
    return rows
