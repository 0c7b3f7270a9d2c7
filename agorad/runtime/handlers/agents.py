"""agents.*: the registry."""

from __future__ import annotations

from agorad.domain import inbox, intervals, roster
from agorad.domain import registry
from agorad.domain.policy import require
from agorad.runtime.handlers import Call
from agorad.store import messages as messages_sql
from agorad.surface import settings
from agorad.surface.errors import InvalidParams
from agorad.surface.protocol import check_agent_id


def add(call: Call) -> dict:
    p = call.params
    agent_id = p.get("agent", str)
    mode = registry.liveness_mode(p.get("liveness_mode", str, None), p.get("permanent", bool, None))
    interval = _interval(p)
    meta = p.get("meta", dict, {})
    call.finish()
    require(call.actor, "registry.admin")
    agent, key = registry.add(call.hub.db, call.hub.home, call.now, agent_id, mode, interval, meta, call.hub.ephemeral_ttl)
    call.hub.after_commit(lambda: call.hub.agent_added(agent["id"]))
    call.hub.key_staged(agent["id"])
    return {"agent": agent, "key": key, "key_file": str(call.hub.home.key_file(agent["id"]))}


def get(call: Call) -> dict:
    agent_id = call.params.get("agent", str)
    call.finish()
    agent, redirect = roster.get(call.hub.db, call.now, call.hub.ephemeral_ttl, agent_id)
    return {"agent": agent, "redirected": redirect, "now": call.now}


def resolve(call: Call) -> dict:
    agent_id = call.params.get("agent", str)
    call.finish()
    row, redirect = registry.resolve(call.hub.db, agent_id)
    own = call.actor.is_operator or call.actor.agent_pk == row["pk"]  # another seat's mail count is not theirs
    # Where its notify files have got to (a listener's first arm counts from it: a line that came later at
    # or below it would be skipped by a later run, Follower.arm re-reading `.1` above it).
    newest = call.hub.notifier.got_to(row["pk"], messages_sql.newest_id(call.hub.db, row["pk"])) if own else None
    return {"agent": row["id"], "redirected": redirect, "newest_id": newest}


def list_agents(call: Call) -> dict:
    include_expired = call.params.get("include_expired", bool, False)
    with_counts = call.params.get("counts", bool, False)
    after = call.params.get("after", str, "")
    limit = call.params.get("limit", int, roster.PAGE)
    call.finish()
    now = call.now
    listed, more = roster.list_agents(call.hub.db, now, call.hub.ephemeral_ttl, include_expired, after, limit)
    if with_counts:
        inbox.add_counts(call.hub.db, listed)
    return {"agents": listed, "more": more, "now": now}


def heartbeat(call: Call) -> dict:
    status_word, task, interval = _report(call)
    return registry.heartbeat(call.hub.db, call.hub.liveness, call.now, call.actor, status_word, task, interval)


def steady_heartbeat(call: Call) -> dict | None:
    """agents.heartbeat answered without a transaction, or None to take the batch (methods.STEADY)."""
    status_word, task, interval = _report(call)
    return registry.steady_heartbeat(call.hub.liveness, call.now, call.actor, status_word, task, interval)


def _report(call: Call) -> tuple[str | None, str | None, float | None]:
    status_word = call.params.get("status", str, None)
    task = call.params.get("task", str, None)
    interval = _interval(call.params)
    call.finish()
    require(call.actor, "heartbeat")
    return status_word, task, interval


def _interval(params, unset_allowed: bool = False) -> float | str | None:
    """The optional `interval` param: seconds (a number, or a duration like "30m"), checked."""
    value = params.get("interval", (int, float, str), None)
    return None if value is None else intervals.check(value, unset_allowed=unset_allowed)


def update(call: Call) -> dict:
    p = call.params
    agent_id = p.get("agent", str)
    mode = p.get("liveness_mode", str, None)
    interval = _interval(p, unset_allowed=True)
    meta = p.get("meta", dict, None)
    call.finish()
    require(call.actor, "registry.admin")
    check_agent_id(agent_id)
    if mode is None and interval is None and meta is None:
        raise InvalidParams("nothing to change: give liveness_mode, interval or meta")
    if mode is not None:
        mode = registry.liveness_mode(mode)
    if meta is not None:
        registry.check_meta_patch(meta)
    agent, redirect, pk = registry.update(call.hub.db, call.now, call.hub.ephemeral_ttl, agent_id,
                                          mode, interval, meta)
    call.hub.liveness.forget(pk)  # what it knew of the interval may have changed
    call.hub.after_commit(lambda: call.hub.agent_updated(pk, agent["liveness_mode"]))
    return {"agent": agent, "redirected": redirect, "now": call.now}


def rename(call: Call) -> dict:
    old = call.params.get("old", str)
    new = call.params.get("new", str)
    reason = call.params.get("reason", str)
    call.finish()
    require(call.actor, "registry.admin")
    check_agent_id(old, "old")
    renamed, pk = registry.rename(call.hub.db, call.now, old, new, reason)
    call.hub.after_commit(lambda: call.hub.agent_renamed(pk, renamed["from"], renamed["to"]))
    return {"renamed": renamed}


def rekey(call: Call) -> dict:
    agent_id = call.params.get("agent", str)
    call.finish()
    require(call.actor, "registry.admin")
    current, redirect, key, pk = registry.rekey(call.hub.db, call.hub.home, agent_id)
    call.hub.key_staged(current, replacing_for=pk)
    return {"agent": current, "redirected": redirect, "key": key, "key_file": str(call.hub.home.key_file(current))}


def remove(call: Call) -> dict:
    agent_id = call.params.get("agent", str)
    call.finish()
    require(call.actor, "registry.admin")
    removed, pk = registry.remove(call.hub.db, agent_id, call.now)
    call.hub.liveness.forget(pk)
    call.hub.after_commit(lambda: call.hub.agent_removed(pk, removed["removed"]))
    return removed
