"""hub.*: hello, status, sweep, pause and resume; and clock.advance on test hubs."""

from __future__ import annotations

import os

from agorad import __version__
from agorad.domain import intervals, registry, roster
from agorad.domain import pause as pausing
from agorad.domain.policy import Actor, require
from agorad.domain.text import each_once
from agorad.runtime.handlers import Call
from agorad.store import agents as agents_sql
from agorad.store import messages as messages_sql
from agorad.surface import keys
from agorad.surface.errors import InvalidParams, MethodNotFound, Unauthorized
from agorad.surface.protocol import PROTOCOL_VERSION


def hello(call: Call) -> dict:
    agent_id = call.params.get("agent", str, None)
    key = call.params.get("key", str, None)
    interval = call.params.get("interval", (int, float, str), None)
    call.finish()
    if interval is not None:
        if agent_id is None:
            raise InvalidParams("interval is an agent's own declaration: give it with agent and key", field="interval")
        interval = intervals.check(interval)
    notifier = call.hub.notifier
    result = {"protocol": PROTOCOL_VERSION, "hub_version": __version__,
              "notify_dir": str(notifier.directory) if notifier.enabled else None}
    if agent_id is None:
        return result
    if key is None:  # said before the id is looked up, so it tells nothing of whether the seat exists
        raise Unauthorized(f"hub.hello as {agent_id!r} needs its key: the one agents.add gave "
                           "(kept in <home>/keys/<id>.key; CLI: --as ID reads it)", field="key")
    row, redirect = registry.resolve(call.hub.db, agent_id)
    if not keys.key_matches(key, row["key_hash"]):
        raise Unauthorized(f"wrong key for agent {row['id']!r}", field="key")
    call.new_actor = Actor(row["pk"], row["id"], row["liveness_mode"])
    result.update(agent=row["id"], liveness_mode=row["liveness_mode"], redirected=redirect,
                  interval=row["interval_s"], interval_source=row["interval_source"])
    if interval is not None:
        result.update(registry.declare_interval(call.hub.db, call.hub.liveness, call.new_actor, interval))
    return result


def status(call: Call) -> dict:
    call.finish()
    hub = call.hub
    db_bytes = sum(_size(path) for path in hub.home.db_files)
    listed, by_status = roster.census(hub.db, call.now, hub.ephemeral_ttl)
    return {
        "pid": os.getpid(), "home": str(hub.home.root), "socket": str(hub.home.socket),
        "hub_version": __version__, "protocol": PROTOCOL_VERSION,
        "started_at": hub.started_at, "uptime": call.now - hub.started_at, "now": call.now,
        "db_bytes": db_bytes,
        "counts": {**agents_sql.counts(hub.db), **messages_sql.counts(hub.db), "listed": listed, "by_status": by_status},
        "ephemeral_ttl": hub.ephemeral_ttl, "sweep_interval": hub.sweep_interval, "last_sweep": hub.last_sweep,
        "liveness_flush": hub.settings.liveness_flush,
        "notify_dir": str(hub.notifier.directory) if hub.notifier.enabled else None,
        "remote": hub.remote_url,
        "paused": pausing.shown(hub.db, hub.pause, call.now),
    }


def pause(call: Call) -> dict:
    reason = call.params.get("reason", str, "")
    seats = call.params.get("operator_seats", list, [])
    call.finish()
    require(call.actor, "hub.pause")
    if not all(isinstance(seat, str) for seat in seats):
        raise InvalidParams("operator_seats must be a list of agent ids", field="operator_seats")
    hub = call.hub
    paused, events = pausing.pause(hub.db, call.now, reason, each_once(seats))
    hub.set_pause(paused)
    hub.publish(events)
    return {"paused": pausing.shown(hub.db, paused, call.now), "announced": len(events)}


def resume(call: Call) -> dict:
    call.finish()
    require(call.actor, "hub.pause")
    hub = call.hub
    resumed, events = pausing.resume(hub.db, call.now)
    hub.set_pause(None)
    hub.publish(events)
    return {**resumed, "announced": len(events)}


def sweep(call: Call) -> dict:
    call.finish()
    require(call.actor, "registry.admin")
    return call.hub.sweep()


MAX_ADVANCE = 100 * 365 * 86400.0  # seconds one clock.advance may move: a century keeps `now` a finite float


def advance_clock(call: Call) -> dict:
    try:
        seconds = call.params.get("seconds", float)
        call.finish()
    except InvalidParams:
        _require_test_clock(call)  # on a normal hub the method does not exist, whatever its params
        raise
    _require_test_clock(call)
    if not 0 <= seconds <= MAX_ADVANCE:
        raise InvalidParams(f"seconds must be from 0 (the clock only moves forward) to {MAX_ADVANCE:.0f}",
                            field="seconds")
    return {"now": call.hub.clock.advance(seconds)}


def _require_test_clock(call: Call) -> None:
    if not call.hub.clock.controllable:
        raise MethodNotFound("no method 'clock.advance' (only a hub started with AGORA_TEST_CLOCK=1 has it)",
                             method="clock.advance")



def _size(path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
