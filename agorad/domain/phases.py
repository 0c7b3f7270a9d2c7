"""Phases: `phase:<track>` rows in a channel saying where a track of work stands.

A row has a stage (vocab.PHASE_STAGES), a version that counts its changes, and who set it and
when. A set may name the version it read: if the row moved on since, the set is a `conflict`
naming the current version, and nothing changes (compare-and-swap). Only a channel's members (and
the local operator) may set or list its phases. The open ones (every stage but complete) lead a
seat's inbox check right after its owed block; a phase is never a delivery and never rings.
"""

from __future__ import annotations

import re

import apsw

from agorad.domain import channels
from agorad.domain.policy import Actor
from agorad.store import phases as sql
from agorad.store import write
from agorad.surface.errors import Conflict, InvalidParams
from agorad.surface.vocab import PHASE_STAGES

TRACK_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
PREFIX = "phase:"


def check_request(track, stage, expected) -> str:
    """Everything a set can check without the database; returns the bare track name."""
    if isinstance(track, str) and track.startswith(PREFIX):
        track = track[len(PREFIX):]  # `phase:release` and `release` name the same row
    if not isinstance(track, str) or not TRACK_NAME.fullmatch(track):
        raise InvalidParams(f"track {track!r} is not valid (1-64 of a-z 0-9 . _ -, starting with a letter or digit)",
                            field="track")
    if stage not in PHASE_STAGES:
        raise InvalidParams(f"stage {stage!r} is not one of {', '.join(PHASE_STAGES)}", field="stage")
    if expected is not None and expected < 0:
        raise InvalidParams("version is the version you read: 0 for a track that does not exist yet, else 1 or more",
                            field="version")
    return track


def put(db: apsw.Connection, actor: Actor, channel_name, track, stage, expected: int | None, now: float) -> dict:
    """Set the track's stage; `expected`, when given, must be its current version (0: not there yet).

    Setting the stage it already has changes nothing (`changed` false, the version stays).
    """
    track = check_request(track, stage, expected)
    channel = _channel(db, actor, channel_name)
    with write(db):
        current = sql.get(db, channel["pk"], track)
        number = current["version"] if current else 0
        if expected is not None and expected != number:
            raise Conflict(f"{PREFIX}{track} in {channel['name']} is at version {number}, not {expected}: read it "
                           f"again (agora phase ls {channel['name']}) and retry with --version {number}",
                           field="version", current_version=number)
        changed = current is None or current["stage"] != stage
        if changed:
            sql.put(db, channel["pk"], track, stage, number + 1, actor.name, now)
    return {"changed": changed, "phase": sql.get(db, channel["pk"], track)}


def listing(db: apsw.Connection, actor: Actor, channel_name) -> list[dict]:
    """The phases of one channel, or (no channel) of every channel the agent is in; the operator sees all."""
    if channel_name is not None:
        return sql.in_channel(db, _channel(db, actor, channel_name)["pk"])
    return sql.every(db) if actor.is_operator else sql.of_member(db, actor.agent_pk)


def open_for(db: apsw.Connection, actor: Actor) -> list[dict]:
    """The open phases of the channels the agent is in (the inbox check's phases block)."""
    return sql.open_of_member(db, actor.agent_pk)


def _channel(db: apsw.Connection, actor: Actor, name) -> dict:
    channel = channels.named(db, name, actor=actor)
    if not actor.is_operator:
        channels.require_member(db, actor, channel)
    return channel
