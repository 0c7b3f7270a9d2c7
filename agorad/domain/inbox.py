"""The inbox: what an agent has not handled yet, read through its per-channel cursors.

`check` is a seat's reception pass: the charters it has not read yet (`charter`), then its
owed block, then the open phases of its channels, then unread headlines by channel. `digest`
summarises per channel cheaply enough for the top of every turn, `ack` moves the cursor. Only the
ack cursor says "handled": reading never acks, and an ack never discharges a debt.
"""

from __future__ import annotations

import apsw

from agorad.domain import channels
from agorad.domain import charters
from agorad.domain import obligations
from agorad.domain import phases
from agorad.domain.policy import Actor
from agorad.domain.text import each_once
from agorad.store import agents as agents_sql
from agorad.store import channels as channels_sql
from agorad.store import debts as debts_sql
from agorad.store import messages as sql
from agorad.store import write
from agorad.surface import settings
from agorad.surface.errors import InvalidParams
from agorad.surface.vocab import REMINDER_FLAG

DIGEST_SCAN = 50  # newest unread per channel the digest looks at for senders and titles
DIGEST_TITLES = 3
DIGEST_DEBTS = 20  # one screen: the oldest debts each way, and their totals


def check(db: apsw.Connection, actor: Actor, now: float, limit: int = settings.INBOX_LIMIT,
          important: bool = False) -> dict:
    """Unread charters, debts owed, open phases, then unread headlines by channel; `important`: only
    headlines flagged to-me, dm or open (the stop-hook backstop's question), so a busy channel's chatter
    cannot crowd them out of `limit`. Charters and phases are read from small tables by index (their
    store functions say how): this runs at every arm, turn end and wake."""
    owed = obligations.i_owe(db, actor, now)
    open_refs = {debt["ref"] for debt in owed}
    owed_total, owed = len(owed), owed[:limit]  # the oldest first; the count says how many in all
    listed, total = [], 0
    for channel in sql.unread_channels(db, actor.agent_pk):
        if channel["unread"] <= 0:
            continue
        total += channel["unread"]
        room = limit - sum(len(c["messages"]) for c in listed)
        if important and channel["kind"] != "dm":  # every unread DM is to-me
            # Past a filled limit one row is still asked for: a channel with none is left out there too (agora-rpc(7)).
            headlines = sql.unread_important_in(db, actor.agent_pk, channel["channel_pk"], channel["acked"], max(room, 1))
            if not headlines:  # none of its unread is for this agent
                continue
            headlines = headlines[:max(room, 0)]
        else:
            headlines = sql.unread_in(db, actor.agent_pk, channel["channel_pk"], channel["acked"], max(room, 0))
        to_me = _addressed(db, actor.agent_pk, [h["pk"] for h in headlines])
        listed.append({
            "channel": channel["channel"], "unread": channel["unread"],
            "messages": [_headline(channel, h, to_me, open_refs) for h in headlines],
        })
    open_phases = phases.open_for(db, actor)
    return {"charter": charters.unread(db, actor), "owed": owed, "owed_total": owed_total,
            "phases": open_phases[:limit], "phases_total": len(open_phases), "channels": listed, "unread": total}


def _addressed(db, agent_pk: int, message_pks: list[int]) -> set[int]:
    if not message_pks:
        return set()
    marks = ",".join("?" * len(message_pks))
    return {r[0] for r in db.execute(
        f"SELECT message_pk FROM addressees WHERE agent_pk = ? AND message_pk IN ({marks})", (agent_pk, *message_pks))}


def _headline(channel: dict, message: dict, to_me: set[int], open_refs: set[str]) -> dict:
    ref = f"{channel['channel']}#{message['seq']}"
    flags = [flag for flag, on in (
        ("to-me", message["pk"] in to_me or channel["kind"] == "dm"),
        ("dm", channel["kind"] == "dm"),
        ("open", ref in open_refs),
        (REMINDER_FLAG, message["ask"] and message["from_hub"]),  # the hub asks only in reminders
    ) if on]
    return {"ref": ref, "seq": message["seq"], "sender": message["sender"], "title": message["title"],
            "flags": flags, "ask": bool(message["ask"]), "urgency": message["urgency"], "created_at": message["created_at"]}


def digest(db: apsw.Connection, actor: Actor, now: float) -> dict:
    owed = obligations.owed(db, actor, now)
    summary, total = [], 0
    for channel in sql.unread_channels(db, actor.agent_pk):
        if channel["unread"] <= 0:
            continue
        total += channel["unread"]
        newest = sql.unread_in(db, actor.agent_pk, channel["channel_pk"], channel["acked"], DIGEST_SCAN, newest_first=True)
        summary.append({
            "channel": channel["channel"], "unread": channel["unread"],
            "senders": sorted({m["sender"] for m in newest}),
            "latest": [{"ref": f"{channel['channel']}#{m['seq']}", "sender": m["sender"], "title": m["title"]}
                       for m in newest[:DIGEST_TITLES]],
        })
    return {
        "charter": charters.unread(db, actor), "phases": phases.open_for(db, actor),
        "i_owe": owed["i_owe"][:DIGEST_DEBTS], "i_owe_total": len(owed["i_owe"]),
        "owed_to_me": owed["owed_to_me"][:DIGEST_DEBTS], "owed_to_me_total": len(owed["owed_to_me"]),
        "channels": summary, "unread": total,
    }


def ack(db: apsw.Connection, actor: Actor, ref=None, upto=None, everything: bool = False) -> dict:
    """Mark handled: one or more messages (all or none), everything up to one, or everything."""
    chosen = [name for name, value in (("ref", ref), ("upto", upto), ("all", everything)) if value]
    if len(chosen) != 1:
        raise InvalidParams("ack takes exactly one of: ref, upto, all", field="ref")
    if everything:
        with write(db):
            return {"acked": "all", "channels": channels_sql.ack_all(db, actor.agent_pk)}
    refs = each_once([upto] if upto else ([ref] if isinstance(ref, str) else ref))  # a ref twice: acked once
    targets = [_ack_target(db, actor, target, chosen[0]) for target in refs]  # all checked before any write
    with write(db):
        for channel, seq in targets:
            if upto:
                channels_sql.ack_upto(db, actor.agent_pk, channel["pk"], seq)
            else:
                channels_sql.ack_one(db, actor.agent_pk, channel["pk"], seq)
        cursors = {target: {"channel": channel["name"],
                            "cursor": channels_sql.membership(db, actor.agent_pk, channel["pk"])["acked"]}
                   for target, (channel, _) in zip(refs, targets)}
    return {"acked": refs, "cursors": cursors}


def _ack_target(db, actor: Actor, target, field: str) -> tuple[dict, int]:
    channel, seq = channels.parse_ref(db, target, field, actor)
    channels.require_member(db, actor, channel)
    if seq > channel["head"]:
        raise InvalidParams(f"{target} is beyond the newest message of {channel['name']} (#{channel['head']})", field=field)
    return channel, seq


def add_counts(db: apsw.Connection, agents: list[dict]) -> None:
    """Give each listed agent its `unread` and `owed` counts (for `agora status`)."""
    # Two statements over the listed seats, not one per seat: at 10,000 seats the per-seat unread
    # query made `agora status` take ~300 ms in the hub alone.
    pks = agents_sql.pks_by_id(db, [agent["id"] for agent in agents])  # a page's seats: a big hub lists in pages
    owed = debts_sql.open_counts_all(db)
    unread = sql.unread_totals(db, list(pks.values()))
    for agent in agents:
        pk = pks.get(agent["id"])
        agent["unread"] = unread.get(pk, 0)
        agent["owed"] = owed.get(pk, 0)
