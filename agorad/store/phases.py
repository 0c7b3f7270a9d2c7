"""SQL for phases: one `phase:<track>` row per (channel, track), with its stage and version."""

from __future__ import annotations

import apsw

from agorad.store.connection import one, rows
from agorad.surface.vocab import PHASE_CLOSED

_PHASE = "c.name AS channel, p.track, p.stage, p.version, p.set_by, p.set_at"


def get(db: apsw.Connection, channel_pk: int, track: str) -> dict | None:
    return one(db.execute(f"SELECT {_PHASE} FROM phases p JOIN channels c ON c.pk = p.channel_pk "
                          "WHERE p.channel_pk = ? AND p.track = ?", (channel_pk, track)))


def put(db: apsw.Connection, channel_pk: int, track: str, stage: str, number: int, set_by: str, now: float) -> None:
    db.execute("INSERT INTO phases (channel_pk, track, stage, version, set_by, set_at) VALUES (?, ?, ?, ?, ?, ?) "
               "ON CONFLICT(channel_pk, track) DO UPDATE SET stage = excluded.stage, version = excluded.version, "
               "set_by = excluded.set_by, set_at = excluded.set_at",
               (channel_pk, track, stage, number, set_by, now))


def in_channel(db: apsw.Connection, channel_pk: int) -> list[dict]:
    return rows(db.execute(f"SELECT {_PHASE} FROM phases p JOIN channels c ON c.pk = p.channel_pk "
                           "WHERE p.channel_pk = ? ORDER BY p.track", (channel_pk,)))


def of_member(db: apsw.Connection, agent_pk: int) -> list[dict]:
    """Every phase of every channel the agent is in, by channel name and track."""
    return rows(db.execute(f"SELECT {_PHASE} FROM members m JOIN phases p ON p.channel_pk = m.channel_pk "
                           "JOIN channels c ON c.pk = p.channel_pk WHERE m.agent_pk = ? ORDER BY c.name, p.track",
                           (agent_pk,)))


def every(db: apsw.Connection) -> list[dict]:
    return rows(db.execute(f"SELECT {_PHASE} FROM phases p JOIN channels c ON c.pk = p.channel_pk "
                           "ORDER BY c.name, p.track"))


# The open phases (every stage but complete) of the channels agent ?1 is in, by channel name and
# track. On the inbox check's path: it walks the partial index of open phases (a handful; completed
# tracks are not in it) and probes channels and members by their keys. The stage is spelled into
# the statement: SQLite uses a partial index only for a WHERE that states its condition, never
# through a bound value. tests/test_phases.py holds the plan.
OPEN_OF_MEMBER = (
    f"SELECT {_PHASE} FROM phases p INDEXED BY phases_open JOIN channels c ON c.pk = p.channel_pk "
    f"WHERE p.stage != '{PHASE_CLOSED}' "
    "AND EXISTS (SELECT 1 FROM members m WHERE m.agent_pk = ?1 AND m.channel_pk = p.channel_pk) "
    "ORDER BY c.name, p.track")


def open_of_member(db: apsw.Connection, agent_pk: int) -> list[dict]:
    """The open phases of the channels the agent is in (`OPEN_OF_MEMBER`)."""
    return rows(db.execute(OPEN_OF_MEMBER, (agent_pk,)))
