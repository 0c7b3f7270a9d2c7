"""messages.*, inbox.*, owed.*, channels.*: the mailbox."""

from __future__ import annotations

from agorad.domain import channels
from agorad.domain import inbox
from agorad.domain import messages
from agorad.domain import obligations
from agorad.domain import pause as pausing
from agorad.runtime.handlers import Call
from agorad.store import messages as messages_sql
from agorad.surface import settings
from agorad.surface.errors import InvalidParams


def send(call: Call) -> dict:
    p = call.params
    ask_each = p.get("ask_each", bool, False)
    draft = messages.Draft(
        target=p.get("target", str), title=p.get("title", str), body=p.get("body", str, ""),
        to=p.get("to", list, []), ask=p.get("ask", bool, False) or ask_each, reply_to=p.get("reply_to", str, None),
        urgency=p.get("urgency", str, "normal"), ask_each=ask_each, decline=p.get("decline", bool, False),
    )
    call.finish()
    messages.check_draft(draft, call.hub.settings.max_body)
    receipt, events = messages.send(call.db, call.actor, draft, call.now, call.hub.settings.escalation)
    call.hub.publish(events)
    if draft.ask:
        call.hub.after_commit(call.hub.debts_opened.set)  # its first escalation may come before the next sweep
    return messages.receipt_text(receipt)  # the receipt, encoded (protocol.encode_result splices it)


def read(call: Call) -> dict:
    ref = call.params.get("ref", str)
    call.finish()
    return messages.read(call.db, call.actor, ref)


def check(call: Call) -> dict:
    limit = call.params.get("limit", int, settings.INBOX_LIMIT)
    important = call.params.get("important", bool, False)
    call.finish()
    if not 1 <= limit <= settings.INBOX_LIMIT_MAX:
        raise InvalidParams(f"limit must be from 1 to {settings.INBOX_LIMIT_MAX}", field="limit")
    now = call.now
    # The pause rides every check: a hook or a driver learns it from the call it makes anyway.
    return {**inbox.check(call.db, call.actor, now, limit, important), "now": now,
            "paused": pausing.for_seat(call.db, call.hub.pause, call.actor.agent_pk, now)}


def digest(call: Call) -> dict:
    call.finish()
    now = call.now
    return {**inbox.digest(call.db, call.actor, now), "now": now}


def ack(call: Call) -> dict:
    p = call.params
    ref, upto, everything = p.get("ref", (str, list), None), p.get("upto", str, None), p.get("all", bool, False)
    call.finish()
    return inbox.ack(call.db, call.actor, ref, upto, everything)


def owed(call: Call) -> dict:
    call.finish()
    now = call.now
    return {**obligations.owed(call.db, call.actor, now),
            "declined_to_me": obligations.declined_to_me(call.db, call.actor, now), "now": now}


_SQL_INT_MAX = 2**63 - 1  # SQLite's largest integer


def subscribe(call: Call) -> dict:
    """From now on this connection receives each of the agent's deliveries as an `inbox.delivery` notification;
    with `after`, first every delivery with a larger id (a reconnecting client's catch-up); with `since` (the
    hub's clock), first every delivery stored since then, the answer's `after` saying where that began (a
    client that armed while no hub answered, and so has no id yet)."""
    after = call.params.get("after", int, None)
    since = call.params.get("since", (int, float), None)
    call.finish()
    if after is not None and not 0 <= after <= _SQL_INT_MAX:  # a larger one would fail in SQLite, after COMMIT
        raise InvalidParams("after is a delivery id (0 or more): the last one this client has", field="after")
    if since is not None and not 0 <= since <= _SQL_INT_MAX:
        raise InvalidParams("since is a time on the hub's clock, in Unix seconds", field="since")
    if since is not None and after is not None:
        raise InvalidParams("give after or since, not both", field="since")
    pk = call.actor.agent_pk
    newest = messages_sql.newest_delivery(call.db, pk)
    answer = {"subscribed": call.actor.agent_id, "notification": "inbox.delivery", "newest": newest}
    if since is not None:
        after = answer["after"] = messages_sql.last_before(call.db, pk, since)
    if after is None:
        call.connection.subscribe(pk)
    else:
        call.hub.after_commit(lambda: call.hub.replay(call.connection, pk, after))
    return answer


def channel_create(call: Call) -> dict:
    name = call.params.get("channel", str)
    call.finish()
    return channels.create(call.db, call.actor, name, call.now)


def channel_join(call: Call) -> dict:
    name = call.params.get("channel", str)
    call.finish()
    return channels.join(call.db, call.actor, name, call.now)


def channel_leave(call: Call) -> dict:
    name = call.params.get("channel", str)
    call.finish()
    return channels.leave(call.db, call.actor, name)


def channel_list(call: Call) -> dict:
    call.finish()
    return {"channels": channels.listing(call.db, call.actor)}
