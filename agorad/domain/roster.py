"""The roster: every agent as agents.list shows it (registry rows merged with the KB's `profile/<id>`
entries, by id, a page at a time), and how many are in each status (hub.status).

A page holds at most `limit` agents, and ends with the agent whose JSON passes protocol.PAGE_BYTES,
whichever comes first; it says whether more follow (ask again with `after` the last id shown). Why
pages: a seat's meta may hold 4 KiB and its profile 64 KiB, so a few hundred well-described seats
answered with more than a client reads (protocol.MAX_REPLY), and a listing of every one of 10,000
seats held the hub's one loop thread for over 100 ms. An agent's size is counted as the frame will
carry it: its meta as stored (compact ASCII JSON, as the wire encodes it), its task and profile
escaped (a character outside the Basic Multilingual Plane takes twelve bytes), and `_ROW_BYTES` for
the rest. Pages are not a snapshot: an agent renamed between two pages may be listed twice, or not.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import apsw

from agorad.domain import registry
from agorad.domain.registry import view_of
from agorad.store import agents as sql
from agorad.store import kb as kb_sql
from agorad.surface.errors import InvalidParams, NotFound
from agorad.surface.protocol import PAGE_BYTES, encode_text, is_agent_id
from agorad.surface.vocab import LIVENESS_MODES, PROFILE_PREFIX

PAGE = 5_000        # agents a page holds at most (and by default)
_ROW_BYTES = 512    # an agent's JSON besides its task, meta and profile (names, numbers, an id of up to 64
                    # characters, agora status's counts); tests/test_registry.py holds a full row to it
_CHUNK = 1_000      # rows read per statement while a page fills


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
    for agent, agent_bytes in _agents_after(db, now, ttl, after, include_expired):
        if len(listed) == limit or size > PAGE_BYTES:
            return listed, True
        size += agent_bytes
        listed.append(agent)
    return listed, False


def get(db: apsw.Connection, now: float, ttl: float, agent_id) -> tuple[dict, dict | None]:
    """One agent as agents.list shows it, and the redirect followed: a registered one (registry.get), or one
    listed from its profile alone, which `agora agents` lists and `agora agent show` must find too."""
    try:
        return registry.get(db, now, ttl, agent_id)
    except NotFound:
        profile = kb_sql.get(db, PROFILE_PREFIX + agent_id)
        if profile is None or not _stands_alone(db, agent_id):
            raise
    return {**_profile_only(agent_id, profile), "aliases": []}, None


def census(db: apsw.Connection, now: float, ttl: float) -> tuple[int, dict[str, int]]:
    """(how many agents `list_agents` lists, how many of them in each status), counted in SQL: `hub.status`
    at 10,000 seats took 60 ms through list_agents, most of it building views it only counted."""
    by_status = sql.census(db, now, ttl)
    for agent_id, _ in _profiles_after(db, ""):
        if _stands_alone(db, agent_id):
            by_status["dormant"] = by_status.get("dormant", 0) + 1  # listed from its profile alone (_profile_only)
    return sum(by_status.values()), by_status


def _agents_after(db: apsw.Connection, now: float, ttl: float, after: str,
                  include_expired: bool) -> Iterator[tuple[dict, int]]:
    """(agent, its size as JSON) for every agent with an id above `after`, in id order: each registry
    row with its profile, if any (expired ephemeral seats only if asked for), and each profile of a
    valid id that names neither an agent nor a former id (an alias) on its own."""
    rows = _chunked(lambda last: sql.view_values(db, last, _CHUNK, None if include_expired else (now, ttl)),
                    after, lambda values: values[0])
    profiles = _profiles_after(db, after)
    row, profile = next(rows, None), next(profiles, None)
    while row is not None or profile is not None:
        if row is not None and (profile is None or row[0] <= profile[0]):
            own = profile[1] if profile is not None and profile[0] == row[0] else None
            agent = view_of(*row, now, ttl, own)
            if include_expired or not agent["expired"]:  # the query's rule, as the clock read it
                yield agent, _size(row[_TASK], row[_META], own and own["value"])
            row = next(rows, None)
            if own is not None:
                profile = next(profiles, None)
            continue
        agent_id, entry = profile
        if _stands_alone(db, agent_id):
            yield _profile_only(agent_id, entry), _size(None, "{}", entry["value"])
        profile = next(profiles, None)


def _stands_alone(db: apsw.Connection, agent_id: str) -> bool:
    """Whether a profile's id is listed on its own: a valid id, neither an agent's (one the listing
    skipped as expired, say) nor a former one (an alias)."""
    return is_agent_id(agent_id) and sql.by_id(db, agent_id) is None and not sql.alias(db, agent_id)


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


_TASK, _META = 6, 7  # where the task and the stored meta text are in a row of store/agents.VIEW_COLUMNS


def _size(task: str | None, meta_text: str, profile: str | None) -> int:
    """Bytes of an agent's JSON in a frame, at most (see the module docstring)."""
    return (_ROW_BYTES + len(meta_text) + (len(encode_text(task)) if task else 0)
            + (len(encode_text(profile)) if profile else 0))


def _profile_only(agent_id: str, profile: dict) -> dict:
    """An agent listed from its profile alone: a declared liveness mode, if the profile's JSON names one."""
    mode = None
    try:
        declared = json.loads(profile["value"])
        if isinstance(declared, dict) and declared.get("liveness_mode") in LIVENESS_MODES:
            mode = declared["liveness_mode"]
    except (ValueError, RecursionError):  # RecursionError: nested past the parser's depth, which fits in a value
        pass
    return {
        "id": agent_id, "liveness_mode": mode, "status": "dormant", "task": None,
        "last_seen": None, "interval": None, "interval_source": None, "declared_interval": None,
        "created_at": None, "expired": False,
        "registered": False, "meta": {}, "profile": profile["value"],
    }
