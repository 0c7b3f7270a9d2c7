"""DM names: `dm:<a>--<b>` (ids sorted), kept true across renames.

A DM is named after its two agents. When either is renamed, the DM takes the
new name in the same transaction, and its old name stays as an alias
(`channel_aliases`), so a ref written before (`dm:a1--b1#3`) still reads,
acks and answers the same message. A name that ever served a channel is never
given to another one: an old ref keeps meaning what it meant.
"""

from __future__ import annotations

import re

import apsw

from agorad.store import agents as agents_sql
from agorad.store import channels as sql
from agorad.surface.protocol import is_agent_id

_SUFFIX = re.compile(r":[0-9]+\Z")


def dm_name(a: str, b: str) -> str:
    low, high = sorted((a, b))
    return f"dm:{low}--{high}"


def free_name(db: apsw.Connection, a: str, b: str, channel_pk: int | None = None) -> str:
    """`dm:<a>--<b>`, or `...:2`, `...:3` while another channel is or was called that.

    Names `channel_pk` itself holds or held are free for it (a rename back).
    """
    base = dm_name(a, b)
    name, n = base, 1
    while sql.holder_of(db, name) not in (None, channel_pk):
        n += 1
        name = f"{base}:{n}"
    return name


def follow_rename(db: apsw.Connection, agent_pk: int, old_id: str, new_id: str, now: float) -> None:
    """Inside the rename's transaction: give each DM of the agent its name under `new_id`."""
    for channel in sql.dms_of(db, agent_pk):
        peer_pk = channel["dm_high"] if channel["dm_low"] == agent_pk else channel["dm_low"]
        peer = agents_sql.by_pk(db, peer_pk)
        peer_id = peer["id"] if peer else _removed_peer(channel["name"], old_id)
        if peer_id is None:
            continue  # the name no longer says who the removed peer was: it stays as history has it
        name = free_name(db, new_id, peer_id, channel["pk"])
        if name != channel["name"]:
            sql.rename(db, channel["pk"], channel["name"], name, now)


def _removed_peer(name: str, old_id: str) -> str | None:
    """The other id in `dm:<a>--<b>[:N]` beside `old_id`, for a DM whose peer was removed.

    Ids may contain `--`, so the sorted order decides which side is the peer's.
    """
    pair = _SUFFIX.sub("", name.removeprefix("dm:"))
    if pair.startswith(f"{old_id}--"):
        peer = pair[len(old_id) + 2:]
        if old_id < peer and is_agent_id(peer):
            return peer
    if pair.endswith(f"--{old_id}"):
        peer = pair[:-len(old_id) - 2]
        if peer < old_id and is_agent_id(peer):
            return peer
    return None
