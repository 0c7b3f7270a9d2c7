"""The knowledge base: key/value entries that remember their author and time."""

from __future__ import annotations

import apsw

from agorad.domain.policy import Actor, require, require_kb_write
from agorad.domain.text import check_line, check_sized
from agorad.store import kb as sql
from agorad.store import write
from agorad.surface.errors import InvalidParams, NotFound
from agorad.surface.protocol import MAX_KB_KEY, MAX_KB_VALUE

MAX_LIST = 1000


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
    check_sized(value, "value", MAX_KB_VALUE)
    require_kb_write(actor, key)
    with write(db):
        sql.put(db, key, value, actor.name, now)
    return sql.get(db, key)


def list_entries(db: apsw.Connection, actor: Actor, prefix, limit) -> list[dict]:
    require(actor, "kb.read")
    if not isinstance(prefix, str):
        raise InvalidParams("prefix must be a string", field="prefix")
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIST:
        raise InvalidParams(f"limit must be an integer from 1 to {MAX_LIST}", field="limit")
    return sql.list_prefix(db, prefix, limit)


def delete(db: apsw.Connection, actor: Actor, key) -> dict:
    key = _key(key)
    require_kb_write(actor, key)
    with write(db):
        if not sql.delete(db, key):
            raise NotFound(f"no KB entry {key!r}", field="key")
    return {"deleted": key}
