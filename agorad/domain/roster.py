"""The roster: every agent as agents.list shows it (registry rows merged with the KB's `profile/<id>`
entries, by id, a page at a time), and how many are in each status (hub.status).

A page stops at `limit` agents, or once their tasks, meta and profiles pass `LIST_BYTES`, whichever
comes first, and says whether more follow (ask again with `after` the last id shown). Why pages: a
seat's meta may hold 4 KiB and its profile 64 KiB, so a few hundred well-described seats answered
with more than a client reads (protocol.MAX_REPLY), and a listing of every one of 10,000 seats held
the hub's one loop thread for over 100 ms. The two bounds keep a page under MAX_REPLY however its
texts escape (at most six bytes of JSON a character): `PAGE` rows of about 350 bytes besides those
texts, plus six times `LIST_BYTES`, is under 16 MiB.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import apsw

from agorad.domain.registry import view_of
from agorad.store import agents as sql
from agorad.store import kb as kb_sql
from agorad.surface.errors import InvalidParams
from agorad.surface.protocol import is_agent_id
from agorad.surface.vocab import LIVENESS_MODES, PROFILE_PREFIX

PAGE = 5_000            # agents a page holds at most (and by default)
LIST_BYTES = 2 << 20    # ... and characters of task, meta and profile, past the first agent
_CHUNK = 1_000          # rows read per statement while a page fills


def list_agents(db: apsw.Connection, now: float, ttl: float, include_expired: bool = False,
                after: str = "", limit: int = PAGE) -> tuple[list[dict], bool]:
    """The agents after `after`, by id (expired ephemeral seats hidden by default), within the page's
    bounds; and whether more follow."""
    if after and not is_agent_id(after):
        raise InvalidParams(f"after: {after[:80]!r} is not an agent id (give the last id a page showed)",
                            field="after")
    if type(limit) is not int or not 1 <= limit <= PAGE:
        raise InvalidParams(f"limit must be an integer from 1 to {PAGE}", field="limit")
    listed, size = [], 0
    for agent in _agents_after(db, now, ttl, after):
        if agent["expired"] and not include_expired:
            continue
        size += _text_size(agent)
        if len(listed) == limit or (listed and size > LIST_BYTES):
            return listed, True
        listed.append(agent)
    return listed, False


def census(db: apsw.Connection, now: float, ttl: float) -> tuple[int, dict[str, int]]:
    """(how many agents `list_agents` lists, how many of them in each status), counted in SQL: `hub.status`
    at 10,000 seats took 60 ms through list_agents, most of it building views it only counted."""
    by_status = sql.census(db, now, ttl)
    for agent_id, _ in _profiles_after(db, ""):
        if is_agent_id(agent_id) and sql.by_id(db, agent_id) is None and not sql.alias(db, agent_id):
            by_status["dormant"] = by_status.get("dormant", 0) + 1  # listed from its profile alone (_profile_only)
    return sum(by_status.values()), by_status


def _agents_after(db: apsw.Connection, now: float, ttl: float, after: str) -> Iterator[dict]:
    """Every agent with an id above `after`, in id order: each registry row with its profile, if any,
    and each profile of a valid id that names neither an agent nor a former id (an alias) on its own."""
    rows = _chunked(lambda last: sql.view_values(db, last, _CHUNK), after, lambda values: values[0])
    profiles = _profiles_after(db, after)
    row, profile = next(rows, None), next(profiles, None)
    while row is not None or profile is not None:
        if row is not None and (profile is None or row[0] <= profile[0]):
            own = profile if profile is not None and profile[0] == row[0] else None
            yield view_of(*row, now, ttl, own and own[1])
            row = next(rows, None)
            if own is not None:
                profile = next(profiles, None)
            continue
        agent_id, entry = profile
        if is_agent_id(agent_id) and not sql.alias(db, agent_id):
            yield _profile_only(agent_id, entry)
        profile = next(profiles, None)


def _profiles_after(db: apsw.Connection, after: str) -> Iterator[tuple[str, dict]]:
    """(id, KB entry) of each `profile/<id>` entry with an id above `after`, by id."""
    entries = _chunked(lambda last: kb_sql.list_prefix(db, PROFILE_PREFIX, _CHUNK, PROFILE_PREFIX + last),
                       after, _profile_id)
    return ((_profile_id(entry), entry) for entry in entries)


def _profile_id(entry: dict) -> str:
    return entry["key"][len(PROFILE_PREFIX):]


def _chunked(read: Callable[[str], list], after: str, key: Callable) -> Iterator:
    """Every item `read(last)` gives, `_CHUNK` at a time, each read starting after the last item's key."""
    while True:
        items = read(after)
        yield from items
        if len(items) < _CHUNK:
            return
        after = key(items[-1])


def _text_size(agent: dict) -> int:
    """Characters of the agent's free texts: what can make one agent's entry large."""
    meta = agent["meta"]
    return (len(agent["task"] or "") + len(agent["profile"] or "")
            + (sum(len(k) + len(v) for k, v in meta.items()) if meta else 0))


def _profile_only(agent_id: str, profile: dict) -> dict:
    """An agent listed from its profile alone: a declared liveness mode, if the profile's JSON names one."""
    mode = None
    try:
        declared = json.loads(profile["value"])
        if isinstance(declared, dict) and declared.get("liveness_mode") in LIVENESS_MODES:
            mode = declared["liveness_mode"]
    except ValueError:
        pass
    return {
        "id": agent_id, "liveness_mode": mode, "status": "dormant", "task": None,
        "last_seen": None, "interval": None, "interval_source": None, "declared_interval": None,
        "created_at": None, "expired": False,
        "registered": False, "meta": {}, "profile": profile["value"],
    }
