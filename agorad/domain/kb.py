"""The knowledge base: key/value entries that remember their author and time."""

from __future__ import annotations

import apsw

from agorad.domain.policy import Actor, require, require_kb_write
from agorad.domain.text import check_line, check_sized
from agorad.store import kb as sql
from agorad.store import write
from agorad.surface.errors import InvalidParams, NotFound
from agorad.surface.protocol import MAX_KB_KEY, MAX_KB_VALUE, PAGE_BYTES, encode_text

MAX_LIST = 1000
_ENTRY_BYTES = 120  # an entry's JSON besides its key and value: names, author (an agent id), updated_at


def _key(key) -> str:
    check_line(key, "key", MAX_KB_KEY)
    if not key:
        raise InvalidParams("key must not be empty", field="key")
    return key


def get(db: apsw.Connection, actor: Actor, key) -> dict:
    require(actor, "kb.read")
    entry = sql.get(db, _key(key))
    if entry is None:
        raise NotFound(f"no KB entry {key!r}", field="key")
    return entry


def put(db: apsw.Connection, actor: Actor, now: float, key, value) -> dict:
    key = _key(key)
    if not key.strip():  # refused when written only: one stored earlier can still be read and deleted
        raise InvalidParams("key must not be only spaces", field="key")
    check_sized(value, "value", MAX_KB_VALUE)
    require_kb_write(actor, key)
    with write(db):
        sql.put(db, key, value, actor.name, now)
    return sql.get(db, key)


def list_entries(db: apsw.Connection, actor: Actor, prefix, limit, after="") -> tuple[list[dict], bool]:
    """Entries by key, from after `after`: at most `limit`, ending with the one whose JSON passes
    protocol.PAGE_BYTES; and whether more follow (ask again with `after` the last key)."""
    require(actor, "kb.read")
    if not isinstance(prefix, str):
        raise InvalidParams("prefix must be a string", field="prefix")
    if not isinstance(after, str):
        raise InvalidParams("after must be a string (the last key of the page before)", field="after")
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIST:
        raise InvalidParams(f"limit must be an integer from 1 to {MAX_LIST}", field="limit")
    found = sql.list_prefix(db, prefix, limit + 1, after)
    taken, size = [], 0
    for entry in found[:limit]:
        if size > PAGE_BYTES:
            break
        size += _ENTRY_BYTES + len(encode_text(entry["key"])) + len(encode_text(entry["value"]))
        taken.append(entry)
    return taken, len(found) > len(taken)


def delete(db: apsw.Connection, actor: Actor, key) -> dict:
    key = _key(key)
    require_kb_write(actor, key)
    with write(db):
        if not sql.delete(db, key):
            raise NotFound(f"no KB entry {key!r}", field="key")
    return {"deleted": key}
