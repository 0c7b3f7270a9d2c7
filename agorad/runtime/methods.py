"""The one dispatch table: every `noun.verb` the hub answers, who may call it, and what
stays allowed while the hub is paused.

`agent` methods act as the connection's agent and need `hub.hello` first;
`any` methods also serve the local operator (policy.py decides the rest).
"""

from __future__ import annotations

from agorad.domain import pause as pausing
from agorad.domain.policy import Actor
from agorad.runtime.handlers import Call
from agorad.runtime.handlers import agents, charters, claims, hub, kb, messaging, phases
from agorad.runtime.hub import HubState
from agorad.runtime.params import Params
from agorad.surface.errors import MethodNotFound, Unauthorized

ANY, AGENT = "any", "agent"

METHODS = {
    "hub.hello": (hub.hello, ANY),
    "hub.status": (hub.status, ANY),
    "hub.sweep": (hub.sweep, ANY),
    "hub.pause": (hub.pause, ANY),
    "hub.resume": (hub.resume, ANY),
    "clock.advance": (hub.advance_clock, ANY),
    "agents.add": (agents.add, ANY),
    "agents.get": (agents.get, ANY),
    "agents.resolve": (agents.resolve, ANY),
    "agents.list": (agents.list_agents, ANY),
    "agents.heartbeat": (agents.heartbeat, AGENT),
    "agents.update": (agents.update, ANY),
    "agents.rename": (agents.rename, ANY),
    "agents.remove": (agents.remove, ANY),
    "agents.rekey": (agents.rekey, ANY),
    "kb.get": (kb.get, ANY),
    "kb.put": (kb.put, ANY),
    "kb.list": (kb.list_entries, ANY),
    "kb.delete": (kb.delete, ANY),
    "messages.send": (messaging.send, AGENT),
    "messages.read": (messaging.read, AGENT),
    "inbox.check": (messaging.check, AGENT),
    "inbox.digest": (messaging.digest, AGENT),
    "inbox.ack": (messaging.ack, AGENT),
    "inbox.subscribe": (messaging.subscribe, AGENT),
    "owed.list": (messaging.owed, AGENT),
    "channels.create": (messaging.channel_create, ANY),
    "channels.join": (messaging.channel_join, AGENT),
    "channels.leave": (messaging.channel_leave, AGENT),
    "channels.list": (messaging.channel_list, ANY),
    "claims.open": (claims.open_claim, AGENT),
    "claims.update": (claims.update, ANY),
    "claims.receipt": (claims.receipt, AGENT),
    "claims.park": (claims.park, ANY),
    "claims.done": (claims.done, ANY),
    "claims.list": (claims.list_claims, ANY),
    "claims.show": (claims.show, ANY),
    "steward.report": (claims.steward_report, ANY),
    "charters.get": (charters.get, ANY),
    "charters.set": (charters.set_text, ANY),
    "phases.set": (phases.set_stage, ANY),
    "phases.list": (phases.list_phases, ANY),
}

# While the hub is paused (domain/pause.py) an agent's call is refused with `paused` unless its
# method is marked here: ALLOWED, or a check of the call's params that says whether this one may
# go through. A method left out (every new one, until it is marked) is refused: the safe default
# for anything that changes something. The operator, and the operator's seats named in the pause,
# are never refused.
ALLOWED = True
WHILE_PAUSED = {
    "hub.hello": ALLOWED,
    "hub.status": ALLOWED,
    "hub.pause": ALLOWED,    # an agent gets `forbidden`, which says more than `paused`
    "hub.resume": ALLOWED,
    "clock.advance": ALLOWED,
    "agents.get": ALLOWED,
    "agents.resolve": ALLOWED,
    "agents.list": ALLOWED,
    "agents.heartbeat": ALLOWED,
    "kb.get": ALLOWED,
    "kb.list": ALLOWED,
    "messages.send": lambda hub_state, params: pausing.allows_send(hub_state.db, hub_state.pause, params),
    "messages.read": ALLOWED,
    "inbox.check": ALLOWED,
    "inbox.digest": ALLOWED,
    "inbox.ack": ALLOWED,
    "inbox.subscribe": ALLOWED,
    "owed.list": ALLOWED,
    "channels.list": ALLOWED,
    "claims.list": ALLOWED,
    "claims.show": ALLOWED,
    "steward.report": ALLOWED,  # operator-only: an agent gets `forbidden`, which says more than `paused`
    "charters.get": ALLOWED,  # a read (it records the seat's receipt of the version it read)
    "phases.list": ALLOWED,
}

# Methods that can sometimes be answered without opening a transaction (liveness.py):
# the handler returns the result, or None to be dispatched in the batch as usual.
STEADY = {
    "agents.heartbeat": agents.steady_heartbeat,
}


def dispatch(hub_state: HubState, actor: Actor, name: str, raw_params: dict, connection=None,
             plain: bool = False) -> tuple[dict, Actor]:
    """Run method `name`; return its result and the connection's actor afterwards.

    `plain`: the frame is known to hold no escaped lone surrogate (protocol.decode_request).
    """
    entry = METHODS.get(name)
    if entry is None:
        raise MethodNotFound(f"no method {name!r} (methods are noun.verb, e.g. agents.list)", method=name)
    handler, access = entry
    if access == AGENT and actor.is_operator:
        raise Unauthorized(f"{name} acts as an agent: call hub.hello {{agent, key}} first (CLI: --as ID)")
    if hub_state.pause is not None and not actor.is_operator:  # one attribute read while the hub runs
        _check_paused(hub_state, actor, name, raw_params)
    call = Call(hub_state, actor, Params(raw_params, plain), connection)
    result = handler(call)
    return result, call.new_actor or actor


def _check_paused(hub_state: HubState, actor: Actor, name: str, raw_params: dict) -> None:
    if actor.agent_pk in hub_state.pause.seats:
        return  # the operator's own seat
    allowed = WHILE_PAUSED.get(name, False)
    if allowed is ALLOWED or (allowed and allowed(hub_state, raw_params)):
        return
    raise pausing.refusal(hub_state.db, hub_state.pause, hub_state.clock.now(), name)


def dispatch_steady(hub_state: HubState, actor: Actor, name: str, raw_params: dict, plain: bool = False) -> dict | None:
    """The result of `name` if it needs no transaction this time, else None. Errors raise as in `dispatch`."""
    handler = STEADY.get(name)
    if handler is None or actor.is_operator or not hub_state.liveness.enabled:
        return None
    return handler(Call(hub_state, actor, Params(raw_params, plain)))
