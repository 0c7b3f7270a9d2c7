"""Turning a stored message into per-agent deliveries: ids, flags, owed counts.

A delivery is what rings: one row per (agent, event), whose id is the notify
line's id. Sends deliver to every member but the sender; escalations deliver
the same message again to a debtor, flagged `escalated`. A `next_turn` send's
deliveries are flagged `next-turn`: written like every delivery, but `agora
listen` does not ring for them (they wait for the seat's next inbox check).

The deliveries of one event are a `Deliveries`: what they share once, and per
recipient only its pk, agent id, delivery id, flags and owed count. A post to
1,000 members built a dict of 12 keys for each (0.8 us a member here); the
notify writer formats each line from the shared part and the five (runtime/notify.py).
"""

from __future__ import annotations

from collections.abc import Container, Sequence

import apsw

from agorad.surface.fence import preview
from agorad.store import messages as sql
from agorad.surface.vocab import FLAGS

Recipient = tuple[int, str, int, str, int]  # (agent pk, agent id, delivery id, flags text, owed)


class Deliveries(Sequence):
    """One event's deliveries. Each item is the row of one delivery as a dict (the notify line's
    fields, notify.line_fields, with `agent_pk` and `body`), made when asked for."""

    __slots__ = ("event", "recipients", "lines")

    def __init__(self, event: dict, recipients: list[Recipient]):
        self.event = event            # ts, channel, seq, sender, title, body, preview
        self.recipients = recipients
        self.lines: list[bytes] | None = None  # each recipient's notify line, if formatted ahead (runtime/notify.py)

    def __len__(self) -> int:
        return len(self.recipients)

    def __getitem__(self, index: int) -> dict:
        pk, agent, delivery_id, flags, owed = self.recipients[index]
        return {"agent_pk": pk, "id": delivery_id, "agent": agent, "flags": flags, "owed": owed, **self.event}


def rows_for(events: Sequence[dict], agent_pks: Container[int]) -> list[dict]:
    """The rows among `events` (one event's Deliveries, or rows) whose agent is in `agent_pks`:
    a push to a few subscribers need not make a row for every member."""
    if isinstance(events, Deliveries):
        return [events[i] for i, recipient in enumerate(events.recipients) if recipient[0] in agent_pks]
    return [row for row in events if row["agent_pk"] in agent_pks]


def flag_text(flags: set[str]) -> str:
    return ",".join([f for f in FLAGS if f in flags])  # a list: join would build one from a generator anyway


def _event(message: dict, now: float) -> dict:
    return {"ts": now, "channel": message["channel"], "seq": message["seq"], "sender": message["sender"],
            "title": message["title"], "body": message["body"], "preview": preview(message["body"])}


def deliver(db: apsw.Connection, message: dict, recipients: dict[int, set[str]], names: dict[int, str],
            now: float, marks: dict[int, tuple[int, int | None, int]] | None = None) -> Deliveries:
    """Record one delivery per recipient pk (with its flags); return them, to notify.

    `names` maps each recipient pk to its agent id (the notify file it rings). A
    delivery's id is its agent's newest + 1, read in this transaction by the only
    writer: ids stay gapless per agent, and a rolled-back send gives them back. `marks` ({pk: (newest
    id, its seq, open debts)} of every recipient, and maybe others), when the caller read them earlier
    in this request and nothing since could change them; else they are read here.
    """
    if not recipients:
        return Deliveries({}, [])
    if marks is None or not recipients.keys() <= marks.keys():
        marks = sql.recipient_marks(db, list(recipients))
    message_pk = message["pk"]
    texts: dict[int, str] = {}  # id(flags set) -> its text: recipients often share one set
    each, inserts = [], []
    for pk, flags in recipients.items():
        newest, last, owed = marks[pk]
        text = texts.get(id(flags))
        if text is None:
            text = texts[id(flags)] = flag_text(flags)
        each.append((pk, names[pk], newest + 1, text, owed))
        inserts.append((pk, newest + 1, last, message_pk, text, owed, now))
    sql.insert_deliveries(db, inserts)
    return Deliveries(_event(message, now), each)


def deliver_to_members(db: apsw.Connection, message: dict, sender_pk: int, addressees: set[int],
                       addressed: set[str], bystander: set[str], now: float) -> Deliveries:
    """Record one delivery for every member of the message's channel but the sender, flagged
    `addressed` for `addressees` and `bystander` for the rest; return them, to notify.

    One statement reads each member's marks and writes its row, in SQLite, not a Python tuple a member
    (sql.insert_member_deliveries); ids, flags and owed counts are read back from the rows written.
    """
    each = sql.insert_member_deliveries(db, message["pk"], message["channel_pk"], sender_pk, addressees,
                                        flag_text(addressed), flag_text(bystander), now)
    return Deliveries(_event(message, now), each)
