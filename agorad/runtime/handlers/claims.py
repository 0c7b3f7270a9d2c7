"""claims.*: who is doing what (domain/claims.py); and steward.report, the operator's look at
what is stale (domain/steward.py)."""

from __future__ import annotations

from agorad.domain import claims
from agorad.domain import steward
from agorad.domain.policy import require
from agorad.runtime.handlers import Call
from agorad.surface import settings
from agorad.surface.errors import InvalidParams
from agorad.surface.vocab import CLAIM_DONE, CLAIM_PARKED


def open_claim(call: Call) -> dict:
    p = call.params
    channel, title = p.get("channel", str), p.get("title", str)
    cadence, link = p.get("cadence_minutes", int, None), p.get("link", str, None)
    call.finish()
    return claims.open_claim(call.db, call.actor, channel, title, cadence, link, call.now)


def update(call: Call) -> dict:
    p = call.params
    ref, version = p.get("ref", str), p.get("version", int)
    fields = {name: p.get(name, kind, claims.UNSET) for name, kind in
              (("title", str), ("state", str), ("cadence_minutes", (int, str)), ("link", str))}
    call.finish()
    return claims.update(call.db, call.actor, ref, version, call.now, **fields)


def receipt(call: Call) -> dict:
    ref, text = call.params.get("ref", str), call.params.get("text", str)
    call.finish()
    return claims.receipt(call.db, call.actor, ref, text, call.now)


def park(call: Call) -> dict:
    return _set_state(call, CLAIM_PARKED)


def done(call: Call) -> dict:
    return _set_state(call, CLAIM_DONE)


def _set_state(call: Call, state: str) -> dict:
    ref, version = call.params.get("ref", str), call.params.get("version", int)
    call.finish()
    return claims.set_state(call.db, call.actor, ref, version, state, call.now)


def list_claims(call: Call) -> dict:
    p = call.params
    channel, state, owner = p.get("channel", str, None), p.get("state", str, None), p.get("owner", str, None)
    limit, after = p.get("limit", int, settings.CLAIMS_LIMIT), p.get("after", str, None)
    call.finish()
    if not 1 <= limit <= settings.CLAIMS_LIST_MAX:
        raise InvalidParams(f"limit must be from 1 to {settings.CLAIMS_LIST_MAX}", field="limit")
    listed, more = claims.listing(call.db, call.actor, channel, state, owner, limit, after)
    return {"claims": listed, "more": more, "now": call.now}


def show(call: Call) -> dict:
    ref = call.params.get("ref", str)
    call.finish()
    return {**claims.show(call.db, call.actor, ref), "now": call.now}


def steward_report(call: Call) -> dict:
    cadences = call.params.get("cadences", int, settings.STEWARD_CADENCES)
    call.finish()
    require(call.actor, "steward.report")
    if cadences < 1:
        raise InvalidParams("cadences must be 1 or more", field="cadences")
    hub = call.hub
    return steward.report(hub.db, call.now, hub.ephemeral_ttl, hub.settings.escalation, cadences)
