"""Channels: `commons` (everyone), named channels (join and leave), and DMs `dm:<a>--<b>`.

Messages are addressed as `<channel>#<seq>`; seq is gapless per channel. A DM
renamed with one of its agents is still found by its old names (dm_names.py).
"""

from __future__ import annotations

import re

import apsw

from agorad.domain import registry
from agorad.domain.dm_names import free_name
from agorad.domain.policy import Actor
from agorad.store import channels as sql
from agorad.store import write
from agorad.surface.errors import Conflict, Forbidden, InvalidParams, NotFound
from agorad.surface.protocol import check_agent_id

COMMONS = sql.COMMONS
CHANNEL_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
NAME_RULE = "1-64 of a-z 0-9 . _ -, starting with a letter or digit"
REF = re.compile(r"(.+)#([1-9][0-9]{0,17})")


def check_new_name(name) -> str:
    if not isinstance(name, str) or not CHANNEL_NAME.fullmatch(name):
        raise InvalidParams(f"channel name {name!r} is not valid ({NAME_RULE})", field="channel")
    if name == COMMONS:
        raise Conflict("commons always exists; every agent is a member", field="channel")
    return name


def named(db: apsw.Connection, name, field: str = "channel", actor: Actor | None = None) -> dict:
    """The channel called `name`; NotFound says how to create it.

    With an agent `actor`, a DM it is not part of does not exist either: an
    outsider learns nothing about other agents' DMs, not even their length.
    """
    if not isinstance(name, str) or not name:
        raise InvalidParams(f"{field} must be a channel name", field=field)
    channel = sql.by_name(db, name)
    if channel is None and name.startswith("dm:"):
        channel = sql.by_old_name(db, name)  # a DM renamed with one of its agents: old refs still work
    hidden = (channel is not None and channel["kind"] == "dm" and actor is not None and not actor.is_operator
              and sql.membership(db, actor.agent_pk, channel["pk"]) is None)
    if channel is None or hidden:
        raise NotFound(f"no channel {name!r}{_missing_hint(db, name, actor)}", field=field)
    return channel


def _missing_hint(db: apsw.Connection, name: str, actor: Actor | None) -> str:
    """How to get the channel `name` that does not exist: the command that creates it, or, for a name no
    channel can have (a create would be refused), the rule, and the channel it may have meant."""
    if name.startswith("dm:"):
        return ""
    if CHANNEL_NAME.fullmatch(name):
        return f" (create it with `{_create_command(name, actor)}`)"
    meant = name.lower()
    if CHANNEL_NAME.fullmatch(meant) and sql.by_name(db, meant) is not None:
        return f" (channel names are lower case: {meant!r})"
    return f" (no channel can be named so: {NAME_RULE})"


def _create_command(name: str, actor: Actor | None) -> str:
    """The command that makes channel `name` with the agent in it (join_hint says why `--as`)."""
    agent = actor is not None and not actor.is_operator
    return f"agora channel create {name}" + (f" --as {actor.agent_id}" if agent else "")


def join_hint(name: str, actor: Actor) -> str:
    """`; join it with <the command>` for an agent not in channel `name`; nothing for the operator,
    who joins no channel. The hub cannot tell whether the caller gave --as, so the command always
    names the agent: `--as ID` is right however the seat was chosen (a flag, a seat record), while a
    bare command is refused without a seat record, or joins the record's seat instead."""
    return "" if actor.is_operator else f"; join it with `agora channel join {name} --as {actor.agent_id}`"


def require_member(db: apsw.Connection, actor: Actor, channel: dict) -> dict:
    membership = sql.membership(db, actor.agent_pk, channel["pk"])
    if membership is None:
        hint = "" if channel["kind"] == "dm" else join_hint(channel["name"], actor)
        raise Forbidden(f"{actor.agent_id} is not a member of {channel['name']}{hint}", rule="channel.member")
    return membership


def open_dm(db: apsw.Connection, actor: Actor, peer_id, now: float) -> tuple[dict, dict | None]:
    """The DM channel between the actor and `peer_id` (created on first use), and any redirect.

    The channel carries `members` (pk -> id): a DM cannot be left, so its members are the two; and
    `marks`, the peer's newest delivery id, its seq and open debts as read with it (or None).
    """
    found = sql.dm_with(db, actor.agent_pk, peer_id) if isinstance(peer_id, str) else None
    marks = None
    if found:  # a registered id, so a valid one
        peer_pk, channel, peer_marks = found
        peer_name, redirect = peer_id, None
        marks = {peer_pk: peer_marks}
    else:  # not a current id: perhaps a renamed one, a malformed one, or nobody (resolve says which)
        check_agent_id(peer_id, "target")
        peer, redirect = registry.resolve(db, peer_id, "target")
        peer_pk, peer_name, channel = peer["pk"], peer["id"], sql.dm_between(db, actor.agent_pk, peer["pk"])
    if peer_pk == actor.agent_pk:
        raise InvalidParams("a DM needs two agents; this one names the sender", field="target")
    if channel is None:
        pk = sql.create(db, free_name(db, actor.agent_id, peer_name), "dm", now, actor.agent_id,
                        (actor.agent_pk, peer_pk))
        for member in (actor.agent_pk, peer_pk):
            sql.join(db, member, pk, now)
        channel = sql.by_pk(db, pk)
    channel["members"] = {actor.agent_pk: actor.agent_id, peer_pk: peer_name}
    channel["marks"] = marks  # the peer's, as read by dm_with (None: not read); see messages.send
    return channel, redirect


def resolve_target(db: apsw.Connection, actor: Actor, target, now: float) -> tuple[dict, dict | None]:
    """Where a send goes: `@id` is a DM, anything else a channel the actor belongs to."""
    if isinstance(target, str) and target.startswith("@"):
        return open_dm(db, actor, target[1:], now)
    channel = named(db, target, "target", actor)
    require_member(db, actor, channel)
    return channel, None


def parse_ref(db: apsw.Connection, ref, field: str = "ref", actor: Actor | None = None) -> tuple[dict, int]:
    """`<channel>#<seq>` -> (channel, seq); the message itself may still not exist."""
    match = REF.fullmatch(ref) if isinstance(ref, str) else None
    if not match:
        raise InvalidParams(f"{field} {ref!r} is not a message reference like commons#12", field=field)
    return named(db, match.group(1), field, actor), int(match.group(2))


def create(db: apsw.Connection, actor: Actor, name, now: float) -> dict:
    check_new_name(name)
    with write(db):
        if sql.by_name(db, name):
            raise Conflict(f"channel {name!r} already exists{join_hint(name, actor)}", field="channel")
        pk = sql.create(db, name, "named", now, actor.name)
        if not actor.is_operator:
            sql.join(db, actor.agent_pk, pk, now)
    return {"channel": name, "joined": not actor.is_operator}


def join(db: apsw.Connection, actor: Actor, name, now: float) -> dict:
    channel = named(db, name, actor=actor)
    if channel["kind"] == "dm":
        raise Forbidden("DM channels have exactly their two agents", rule="channel.dm")
    with write(db):
        joined = sql.join(db, actor.agent_pk, channel["pk"], now)
    return {"channel": channel["name"], "joined": joined, "head": channel["head"]}


def leave(db: apsw.Connection, actor: Actor, name) -> dict:
    channel = named(db, name, actor=actor)
    if channel["kind"] != "named":
        raise Forbidden(f"{channel['name']} cannot be left: every agent is in commons, and a DM is for its two agents",
                        rule="channel.leave")
    with write(db):
        left = sql.leave(db, actor.agent_pk, channel["pk"])
    return {"channel": channel["name"], "left": left}


def listing(db: apsw.Connection, actor: Actor) -> list[dict]:
    found = sql.listing(db, actor.agent_pk)
    for channel in found:
        channel["member"] = bool(channel["member"])
    return found
