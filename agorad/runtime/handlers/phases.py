"""phases.*: `phase:<track>` rows in a channel, set by compare-and-swap."""

from __future__ import annotations

from agorad.domain import phases
from agorad.runtime.handlers import Call


def set_stage(call: Call) -> dict:
    p = call.params
    channel, track, stage = p.get("channel", str), p.get("track", str), p.get("stage", str)
    expected = p.get("version", int, None)
    call.finish()
    return phases.put(call.db, call.actor, channel, track, stage, expected, call.now)


def list_phases(call: Call) -> dict:
    channel = call.params.get("channel", str, None)
    call.finish()
    return {"phases": phases.listing(call.db, call.actor, channel), "now": call.now}
