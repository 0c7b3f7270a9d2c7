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
    after = call.params.get("after", str, "")
    call.finish()
    entries, more = kb.list_entries(call.hub.db, call.actor, prefix, limit, after)
    return {"entries": entries, "more": more, "now": call.now}


def delete(call: Call) -> dict:
    key = call.params.get("key", str)
    call.finish()
    return kb.delete(call.hub.db, call.actor, key)
