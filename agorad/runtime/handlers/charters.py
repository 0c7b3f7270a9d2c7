"""charters.*: the rules a seat works under, per hub and per channel."""

from __future__ import annotations

from agorad.domain import charters
from agorad.domain.policy import require
from agorad.runtime.handlers import Call
from agorad.surface.errors import InvalidParams


def get(call: Call) -> dict:
    channel = call.params.get("channel", str, None)
    number = call.params.get("version", int, None)
    call.finish()
    if number is not None and number < 1:
        raise InvalidParams("version counts from 1", field="version")
    now = call.now
    return {**charters.get(call.db, call.actor, channel, number, now), "now": now}


def set_text(call: Call) -> dict:
    channel = call.params.get("channel", str, None)
    text = call.params.get("text", str)
    expected = call.params.get("version", int, None)
    call.finish()
    require(call.actor, "charter.write")
    if expected is not None and expected < 0:
        raise InvalidParams("version is the current version you read: 0 when there is no charter yet", field="version")
    charters.check_text(text, call.hub.settings.max_body)
    return charters.set_text(call.db, call.actor, channel, text, expected, call.now)
