"""Sending and reading messages.

A send is validated completely before its transaction, and written in one:
the message (next gapless seq), its addressees, the debts of an ask, the
discharge a reply makes, and one delivery per member but the sender. Notify
lines and pushes go out after COMMIT (see batch.py and notify.py).
"""

from __future__ import annotations

import re
from collections.abc import Container
from dataclasses import dataclass, field

import apsw

from agorad.domain import channels
from agorad.domain import obligations
from agorad.domain import registry
from agorad.domain.delivery import deliver, deliver_to_members
from agorad.surface.fence import fenced, one_line
from agorad.domain.policy import Actor
from agorad.domain.text import check_line, each_once
from agorad.store import agents as agents_sql
from agorad.store import channels as channels_sql
from agorad.store import debts as debts_sql
from agorad.store import messages as sql
from agorad.store import write
from agorad.surface.errors import InvalidParams, NotFound, TooLarge
from agorad.surface.protocol import encode_text, encode_text_of, is_agent_id
from agorad.surface.vocab import ASK_ANY, ASK_EACH, DEFAULT_URGENCY, HUB_SENDER, NEXT_TURN, NEXT_TURN_FLAG, URGENCIES

MAX_TITLE = 200
MENTION = re.compile(r"(?<![A-Za-z0-9._@-])@([a-z0-9][a-z0-9._-]{0,63})")


@dataclass
class Draft:
    target: str
    title: str
    body: str
    to: list[str] = field(default_factory=list)
    ask: bool = False
    reply_to: str | None = None
    urgency: str = "normal"
    ask_each: bool = False  # an ask whose every addressee owes its own reply (implies ask)
    decline: bool = False   # a reply that declines the ask it answers


def check_draft(draft: Draft, max_body: int) -> None:
    """Everything that can be checked without the database, so a bad send writes nothing."""
    if not isinstance(draft.target, str) or not draft.target:
        raise InvalidParams("target must be a channel name or @agent", field="target")
    check_line(draft.title, "title", MAX_TITLE)
    if not draft.title.strip():
        raise InvalidParams("a message needs a title (a one-line headline)", field="title")
    if not isinstance(draft.body, str):
        raise InvalidParams("body must be a string", field="body")
    try:  # an ASCII string is its own UTF-8 (and holds no surrogate): no copy to measure it
        size = len(draft.body) if draft.body.isascii() else len(draft.body.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidParams("body is not valid Unicode (it holds a lone surrogate)", field="body") from None
    if size > max_body:
        raise TooLarge(f"body is {size} bytes; this hub's limit is {max_body}", field="body", limit=max_body)
    if draft.urgency not in URGENCIES:
        raise InvalidParams(f"urgency must be one of {', '.join(URGENCIES)}", field="urgency")
    if not all(isinstance(a, str) for a in draft.to):
        raise InvalidParams("to must be a list of agent ids", field="to")
    if draft.decline and (draft.ask or draft.ask_each):
        raise InvalidParams("a decline settles an ask; it cannot ask for a reply itself", field="decline")
    if draft.decline and draft.reply_to is None:
        raise InvalidParams("a decline answers an ask: give reply_to, the ask's ref", field="decline")


def send(db: apsw.Connection, actor: Actor, draft: Draft, now: float, schedule) -> tuple[dict, list[dict]]:
    """Store and fan out one message; return the sender's receipt and the deliveries to notify.

    A plain draft (no `to`, `reply_to` or `ask`) can be refused only before the first write (the
    target, a DM's peer and membership are read first; a new DM is created only once they are
    known), so it takes no savepoint: a failure after a write is a storage error or a bug, and
    loses the batch rather than half a send (store.write, savepoint=False).
    """
    plain = _plain(draft)
    with write(db, savepoint=not plain):
        channel, redirect = channels.resolve_target(db, actor, draft.target, now)
        redirects = [redirect] if redirect else []
        dm = channel["kind"] == "dm"
        # A DM's two members come with it (or are read: a DM named by its channel name); a channel's are
        # never read into Python: a few lookups check the ones a send names, one statement delivers.
        names = (channel.get("members") or channels_sql.members(db, channel["pk"])) if dm else None
        members = set(names) if dm else _MembersOf(db, channel["pk"])
        addressees = _addressees(db, actor, channel, members, draft, redirects)
        if draft.ask and not addressees:
            if dm:  # a DM always has its other agent, unless that agent was removed since
                raise InvalidParams(f"an ask needs someone to answer it, and the other agent of {channel['name']} was "
                                    "removed: nobody is left in it to answer", field="ask")
            raise InvalidParams("an ask needs someone to answer it: an addressee in to (CLI: --to ID), an @mention, "
                                "or a DM", field="ask")
        original = _original(db, actor, draft.reply_to)
        if draft.decline:
            obligations.check_decline(db, original, actor)
        if original and original["sender_pk"] != actor.agent_pk and original["sender_pk"] in members:
            addressees.add(original["sender_pk"])  # a reply is for the one who wrote the original
        seq = channels_sql.take_seq(db, channel)
        message = {
            "channel_pk": channel["pk"], "seq": seq, "sender_pk": actor.agent_pk, "sender": actor.agent_id,
            "title": draft.title, "body": draft.body, "ask": int(draft.ask),
            "reply_to": original["pk"] if original else None, "urgency": draft.urgency, "created_at": now,
        }
        message["pk"] = sql.insert(db, message)
        message["channel"] = channel["name"]
        if not dm:  # a DM's addressee is the other party, implied (0003_lean_send.sql)
            sql.add_addressees(db, message["pk"], addressees)
        if draft.ask:
            obligations.open_debts(db, message["pk"], actor.agent_pk, addressees, now, schedule,
                                   ASK_EACH if draft.ask_each else ASK_ANY)
        discharged = (obligations.discharge_by_reply(db, original, actor.agent_pk, message["pk"], now, draft.decline)
                      if original else 0)
        channels_sql.ack_own(db, actor.agent_pk, channel["pk"], seq)
        quiet = draft.urgency == NEXT_TURN
        if dm:
            # A plain draft opened no debt and discharged none, and nothing else delivered in between:
            # the marks read with the DM are still the marks (one statement less).
            peers = {pk: _flags(True, dm, draft.ask, quiet) for pk in names if pk != actor.agent_pk}
            events = deliver(db, message, peers, names, now, channel.get("marks") if plain else None)
        else:
            events = deliver_to_members(db, message, actor.agent_pk, addressees, _flags(True, dm, draft.ask, quiet),
                                        _flags(False, dm, draft.ask, quiet), now)
    receipt = {
        "ref": f"{channel['name']}#{seq}", "channel": channel["name"], "seq": seq, "delivered": len(events),
        "to": sorted([agent for pk, agent, _, _, _ in events.recipients if pk in addressees]),
        "ask": draft.ask, "discharged": discharged, "redirected": redirects,
    }
    return receipt, events


class _MembersOf:
    """`pk in members` for a channel, one lookup each: a send checks only the agents it names."""

    __slots__ = ("db", "channel_pk")

    def __init__(self, db: apsw.Connection, channel_pk: int):
        self.db, self.channel_pk = db, channel_pk

    def __contains__(self, agent_pk: int) -> bool:
        return channels_sql.membership(self.db, agent_pk, self.channel_pk) is not None


def post_as_hub(db: apsw.Connection, channel: dict, title: str, body: str, addressee_pks, now: float,
                ask: bool = False) -> dict:
    """Store a message the hub itself writes (a cadence reminder, a pause announcement), addressed to
    `addressee_pks`: its sender is HUB_SENDER with no sender agent, an id no agent can hold, so it can
    never pass for an agent's. Returns the stored message; its debts and deliveries are the caller's."""
    message = {"channel_pk": channel["pk"], "seq": channels_sql.take_seq(db, channel), "sender_pk": None,
               "sender": HUB_SENDER, "title": one_line(title, MAX_TITLE), "body": body, "ask": int(ask),
               "reply_to": None, "urgency": DEFAULT_URGENCY, "created_at": now}
    message["pk"] = sql.insert(db, message)
    message["channel"] = channel["name"]
    if channel["kind"] != "dm":  # a DM's addressee is implied (0003_lean_send.sql)
        sql.add_addressees(db, message["pk"], list(addressee_pks))
    return message


def _plain(draft: Draft) -> bool:
    return not draft.to and draft.reply_to is None and not draft.ask


def receipt_text(receipt: dict) -> str:
    """`encode_text_of(receipt)` for the receipt `send` returns, formatted directly: encoding the dict
    cost ~20k instructions a send, this ~5k (tests/test_encoding.py holds the two to the same text).
    A receipt that followed a rename (`redirected`, rare) takes the encoder."""
    if (receipt["redirected"] or type(receipt["seq"]) is not int or type(receipt["discharged"]) is not int
            or type(receipt["ask"]) is not bool):
        return encode_text_of(receipt)
    return (f'{{"ref":{encode_text(receipt["ref"])},"channel":{encode_text(receipt["channel"])},'
            f'"seq":{receipt["seq"]},"delivered":{receipt["delivered"]},'
            f'"to":[{",".join([encode_text(agent) for agent in receipt["to"]])}],'
            f'"ask":{"true" if receipt["ask"] else "false"},"discharged":{receipt["discharged"]},"redirected":[]}}')


def _addressees(db, actor: Actor, channel: dict, members: Container[int], draft: Draft, redirects: list) -> set[int]:
    """Agents the message is for: the DM peer, `to`, and @mentions of members (never the sender).
    `members`: a DM's two pks, or a channel's _MembersOf."""
    found = set(members) if channel["kind"] == "dm" else set()
    for agent_id in each_once(draft.to):  # an id named twice is resolved, and redirected, once
        row, redirect = registry.resolve(db, agent_id, "to")
        if redirect and redirect not in redirects:  # each rename followed is reported once (@target, to, mentions)
            redirects.append(redirect)
        if row["pk"] not in members:
            raise InvalidParams(f"{row['id']} is not a member of {channel['name']}, so it would never see this", field="to")
        found.add(row["pk"])
    for mentioned in _mentions(draft.title + "\n" + draft.body):
        try:
            row, redirect = registry.resolve(db, mentioned)
        except NotFound:
            continue  # an @word that names nobody is just text
        if row["pk"] in members:
            found.add(row["pk"])
            if redirect and redirect not in redirects:
                redirects.append(redirect)
    found.discard(actor.agent_pk)
    return found


def _mentions(text: str) -> set[str]:
    found = set()
    if "@" not in text:  # most messages mention nobody; the regex costs ~25k instructions a send
        return found
    for word in MENTION.findall(text):
        trimmed = word.rstrip("._-")  # "@runtime." at the end of a sentence
        for candidate in (word, trimmed):
            if is_agent_id(candidate):
                found.add(candidate)
    return found


def _original(db, actor: Actor, reply_to) -> dict | None:
    if reply_to is None:
        return None
    channel, seq = channels.parse_ref(db, reply_to, "reply_to", actor)
    original = sql.by_ref(db, channel["pk"], seq)
    if original is None:
        raise NotFound(f"no message {reply_to} to reply to (the channel's newest is #{channel['head']})", field="reply_to")
    # A debtor may always answer what it owes, even after leaving the channel it was asked in.
    if actor.agent_pk not in debts_sql.debtor_pks(db, original["pk"]):
        channels.require_member(db, actor, channel)
    return original


def _flags(addressed: bool, dm: bool, ask: bool, quiet: bool) -> set[str]:
    flags = {NEXT_TURN_FLAG} if quiet else set()
    if addressed:
        flags.add("to-me")
        if ask:
            flags.add("open")
    if dm:
        flags.add("dm")
    return flags


def read(db: apsw.Connection, actor: Actor, ref) -> dict:
    """One message, its metadata, and its body inside a fence. Reading never acks."""
    channel, seq = channels.parse_ref(db, ref, "ref", actor)
    message = sql.by_ref(db, channel["pk"], seq)
    if not actor.is_operator and channels_sql.membership(db, actor.agent_pk, channel["pk"]) is None:
        # A debtor may answer an ask after leaving its channel (_original), so it may read what it answers;
        # anyone else is refused alike whether or not the message exists.
        if message is None or actor.agent_pk not in debts_sql.debtor_pks(db, message["pk"]):
            channels.require_member(db, actor, channel)
    if message is None:
        raise NotFound(f"no message {ref} (the channel's newest is #{channel['head']})", field="ref")
    original = sql.by_pk(db, message["reply_to"]) if message["reply_to"] else None
    shown = {
        "ref": f"{channel['name']}#{seq}", "channel": channel["name"], "seq": seq, "sender": message["sender"],
        "title": message["title"], "body": message["body"], "ask": bool(message["ask"]),
        "urgency": message["urgency"], "created_at": message["created_at"],
        "reply_to_ref": f"{original['channel']}#{original['seq']}" if original else None,
        "to": sorted(_ids(db, sql.addressee_pks(db, message["pk"]))),
        "ask_rule": debts_sql.rule_of(db, message["pk"]) if message["ask"] else None,
        "declines": _declines(db, message, original),
    }
    shown["fenced"] = fenced(shown)
    return shown


def _declines(db, message: dict, original: dict | None) -> str | None:
    """The ref of the ask `message` declined, or None when it is no decline."""
    if original is None or message["sender_pk"] is None:
        return None
    debt = debts_sql.debt_of(db, original["pk"], message["sender_pk"])
    declined = debt is not None and debt["declined"] and debt["discharged_by"] == message["pk"]
    return f"{original['channel']}#{original['seq']}" if declined else None


def _ids(db, pks) -> list[str]:
    return [row["id"] for row in (agents_sql.by_pk(db, pk) for pk in pks) if row]
