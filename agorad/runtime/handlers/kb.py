"""kb.*: the knowledge base."""

from __future__ import annotations

from agorad.domain import kb
from agorad.runtime.handlers import Call


def get(call: Call) -> dict:
    key = call.params.get("key", str)
    call.finish()
    return {"entry": kb.get(call.hub.db, call.actor, key)}


def put(call: Call) -> dict:
    key = call.params.get("key", str)
    value = call.params.get("value", str)
    call.finish()
    return {"entry": kb.put(call.hub.db, call.actor, call.now, key, value)}


def list_entries(call: Call) -> dict:
    prefix = call.params.get("prefix", str, "")
    limit = call.params.get("limit", int, 100)
    call.finish()
    return {"entries": kb.list_entries(call.hub.db, call.actor, prefix, limit), "now": call.now}


def delete(call: Call) -> dict:
    key = call.params.get("key", str)
    call.finish()
    return kb.delete(call.hub.db, call.actor, key)
