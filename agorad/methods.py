"""The one dispatch table: every `noun.verb` the hub answers, and who may call it.

Handlers take a Call (the hub, the caller, the params) and return a JSON-able
dict. They validate before they write; domain modules own the rules.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable

import apsw

from agorad import __version__, kb, keys, registry
from agorad.batch import Batch
from agorad.clock import Clock
from agorad.durations import parse_duration
from agorad.errors import InvalidParams, MethodNotFound, Unauthorized
from agorad.params import Params
from agorad.paths import Home
from agorad.policy import Actor, require
from agorad.protocol import PROTOCOL_VERSION, check_agent_id
from agorad.store import agents as agents_sql


@dataclass
class HubState:
    """What every handler may need: the home, the database, the clock and the settings."""

    home: Home
    db: apsw.Connection
    clock: Clock
    ephemeral_ttl: float = registry.DEFAULT_TTL
    sweep_interval: float = 300.0
    started_at: float = 0.0
    last_sweep: dict = field(default_factory=dict)
    batch: Batch = field(init=False)

    def __post_init__(self):
        self.batch = Batch(self.db)


@dataclass
class Call:
    hub: HubState
    actor: Actor
    params: Params
    new_actor: Actor | None = None  # set by hub.hello when the connection becomes an agent

    @property
    def now(self) -> float:
        return self.hub.clock.now()


# name -> (handler, needs_agent): needs_agent handlers run only after hub.hello.
METHODS: dict[str, tuple[Callable[[Call], dict], bool]] = {}


def method(name: str, needs_agent: bool = False):
    def register(handler):
        METHODS[name] = (handler, needs_agent)
        return handler
    return register


def dispatch(hub: HubState, actor: Actor, name: str, raw_params: dict) -> tuple[dict, Actor]:
    """Run method `name`; return its result and the connection's actor afterwards."""
    entry = METHODS.get(name)
    if entry is None:
        raise MethodNotFound(f"no method {name!r} (methods are noun.verb, e.g. agents.list)", method=name)
    handler, needs_agent = entry
    if needs_agent and actor.is_operator:
        raise Unauthorized(f"{name} acts as an agent: call hub.hello {{agent, key}} first (CLI: --as ID)")
    call = Call(hub, actor, Params(raw_params))
    result = handler(call)
    return result, call.new_actor or actor


def _finish(call: Call) -> None:
    """Refuse unknown parameters before a handler writes anything."""
    call.params.done()


# --- hub -------------------------------------------------------------------

@method("hub.hello")
def hello(call: Call) -> dict:
    agent_id = call.params.get("agent", str, None)
    key = call.params.get("key", str, None)
    _finish(call)
    result = {"protocol": PROTOCOL_VERSION, "hub_version": __version__}
    if agent_id is None:
        return result
    row, redirect = registry.resolve(call.hub.db, agent_id)
    if key is None or not keys.key_matches(key, row["key_hash"]):
        raise Unauthorized(f"wrong key for agent {row['id']!r}", field="key")
    call.new_actor = Actor(row["pk"], row["id"], row["liveness_mode"])
    result.update(agent=row["id"], liveness_mode=row["liveness_mode"], redirected=redirect)
    return result


@method("hub.status")
def status(call: Call) -> dict:
    _finish(call)
    hub = call.hub
    db_bytes = sum(_size(hub.home.root / name) for name in ("agora.db", "agora.db-wal", "agora.db-shm"))
    agents = registry.list_agents(hub.db, call.now, hub.ephemeral_ttl)
    by_status: dict[str, int] = {}
    for agent in agents:
        by_status[agent["status"]] = by_status.get(agent["status"], 0) + 1
    return {
        "pid": os.getpid(), "home": str(hub.home.root), "socket": str(hub.home.socket),
        "hub_version": __version__, "protocol": PROTOCOL_VERSION,
        "started_at": hub.started_at, "uptime": call.now - hub.started_at, "now": call.now,
        "db_bytes": db_bytes, "counts": {**agents_sql.counts(hub.db), "listed": len(agents), "by_status": by_status},
        "ephemeral_ttl": hub.ephemeral_ttl, "sweep_interval": hub.sweep_interval, "last_sweep": hub.last_sweep,
    }


@method("hub.sweep")
def sweep(call: Call) -> dict:
    _finish(call)
    require(call.actor, "registry.admin")
    return run_sweep(call.hub)


def run_sweep(hub: HubState) -> dict:
    now = hub.clock.now()
    hub.last_sweep = {"at": now, **registry.sweep(hub.db, now, hub.ephemeral_ttl)}
    return hub.last_sweep


@method("clock.advance")
def advance_clock(call: Call) -> dict:
    seconds = call.params.get("seconds", float)
    _finish(call)
    if not call.hub.clock.controllable:
        raise MethodNotFound("no method 'clock.advance' (only a hub started with AGORA_TEST_CLOCK=1 has it)")
    if seconds < 0:
        raise InvalidParams("the clock only moves forward", field="seconds")
    return {"now": call.hub.clock.advance(seconds)}


# --- agents ----------------------------------------------------------------

@method("agents.add")
def agents_add(call: Call) -> dict:
    p = call.params
    agent_id = p.get("agent", str)
    mode = registry.liveness_mode(p.get("liveness_mode", str, None), p.get("permanent", bool, None))
    interval = _duration(p.get("interval", (int, float, str), registry.DEFAULT_INTERVAL), "interval")
    meta = p.get("meta", dict, {})
    _finish(call)
    require(call.actor, "registry.admin")
    agent, key = registry.add(call.hub.db, call.hub.home, call.now, agent_id, mode, interval, meta, call.hub.ephemeral_ttl)
    return {"agent": agent, "key": key, "key_file": str(call.hub.home.key_file(agent["id"]))}


@method("agents.get")
def agents_get(call: Call) -> dict:
    agent_id = call.params.get("agent", str)
    _finish(call)
    agent, redirect = registry.get(call.hub.db, call.now, call.hub.ephemeral_ttl, agent_id)
    return {"agent": agent, "redirected": redirect}


@method("agents.resolve")
def agents_resolve(call: Call) -> dict:
    agent_id = call.params.get("agent", str)
    _finish(call)
    row, redirect = registry.resolve(call.hub.db, agent_id)
    return {"agent": row["id"], "redirected": redirect}


@method("agents.list")
def agents_list(call: Call) -> dict:
    include_expired = call.params.get("include_expired", bool, False)
    _finish(call)
    now = call.now
    return {"agents": registry.list_agents(call.hub.db, now, call.hub.ephemeral_ttl, include_expired), "now": now}


@method("agents.heartbeat", needs_agent=True)
def agents_heartbeat(call: Call) -> dict:
    status_word = call.params.get("status", str, None)
    task = call.params.get("task", str, None)
    _finish(call)
    require(call.actor, "heartbeat")
    return registry.heartbeat(call.hub.db, call.now, call.actor.agent_pk, status_word, task)


@method("agents.rename")
def agents_rename(call: Call) -> dict:
    old = call.params.get("old", str)
    new = call.params.get("new", str)
    reason = call.params.get("reason", str)
    _finish(call)
    require(call.actor, "registry.admin")
    check_agent_id(old, "old")
    return {"renamed": registry.rename(call.hub.db, call.hub.home, call.now, old, new, reason)}


@method("agents.remove")
def agents_remove(call: Call) -> dict:
    agent_id = call.params.get("agent", str)
    _finish(call)
    require(call.actor, "registry.admin")
    return registry.remove(call.hub.db, call.hub.home, agent_id)


# --- kb --------------------------------------------------------------------

@method("kb.get")
def kb_get(call: Call) -> dict:
    key = call.params.get("key", str)
    _finish(call)
    return {"entry": kb.get(call.hub.db, call.actor, key)}


@method("kb.put")
def kb_put(call: Call) -> dict:
    key = call.params.get("key", str)
    value = call.params.get("value", str)
    _finish(call)
    return {"entry": kb.put(call.hub.db, call.actor, call.now, key, value)}


@method("kb.list")
def kb_list(call: Call) -> dict:
    prefix = call.params.get("prefix", str, "")
    limit = call.params.get("limit", int, 100)
    _finish(call)
    return {"entries": kb.list_entries(call.hub.db, call.actor, prefix, limit)}


@method("kb.delete")
def kb_delete(call: Call) -> dict:
    key = call.params.get("key", str)
    _finish(call)
    return kb.delete(call.hub.db, call.actor, key)


def _duration(value, field: str) -> float:
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise InvalidParams(f"{field}: {exc}", field=field) from None


def _size(path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
