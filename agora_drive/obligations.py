"""What obliges a driven seat to take a turn: the debt sweep run at every arm and after every turn.

The hub, not the notify file, is the truth: a wake only says "look". The seat is obliged by
its owed replies and by its unread important mail (to-me, dm, open, or an escalated debt),
except what was sent `--urgency next_turn` and has not escalated (it waits for the next turn
anything else buys) and the hub's own notices of a pause or resume (they ask nothing). Each
obligation has a mark that changes when it changes (a debt that escalates again is news), and
the set of marks is the wake's signature: the same signature
after a turn that reached the hub means the turn left the debt (quarantine), a changed one
means something happened.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from agora_drive.chunks import Work
from agora_listen.headlines import is_notice
from agora_listen.inbox_view import Trouble, ask_as_seat, channel_of, through_pause
from agorad.surface import settings
from agorad.surface.vocab import CLAIM_OPEN, IMPORTANT_FLAGS, NEXT_TURN

__all__ = ["Obligations", "Trouble", "sweep"]


@dataclass(frozen=True)
class Obligations:
    agent: str  # the seat's current id
    now: float  # the hub's clock
    owed: int  # owed replies in all
    marks: tuple[str, ...]  # sorted: `owed:<ref>@<escalations>`, `unread:<ref>`
    refs: tuple[str, ...]  # the messages behind the marks, oldest channel first, each once
    paused: bool = False  # the operator paused the hub for this seat: no turn can do the work
    claims: tuple[Work, ...] = ()  # the open claims the seat owns: work it may go on with, never an obligation

    def __bool__(self) -> bool:
        return bool(self.marks)

    @property
    def signature(self) -> str:
        return hashlib.sha256("\n".join(self.marks).encode()).hexdigest()[:16]


def sweep(root: Path, agent: str, claims_seen: int | None = None) -> Obligations:
    """Ask the hub what obliges the seat now, and its `claims_seen` oldest open claims (one connection;
    default DRIVE_CLAIMS_SEEN, chunks.claims_seen says how many a driver lists). Raises Trouble when the
    hub cannot be asked."""
    claims_seen = settings.DRIVE_CLAIMS_SEEN if claims_seen is None else claims_seen
    current, (result, claims) = ask_as_seat(root, agent, [
        ("inbox.check", {"important": True, "limit": settings.ARM_CHECK_LIMIT}),
        ("claims.list", {"owner": agent, "state": CLAIM_OPEN, "limit": claims_seen}),
    ])
    return from_check(current, result, claims["claims"])


def from_check(agent: str, result: dict, claims: list[dict] = ()) -> Obligations:
    escalations = {debt["ref"]: debt["escalations"] for debt in result["owed"]}
    found = []  # (ref, mark)
    for debt in result["owed"]:
        if debt.get("urgency") != NEXT_TURN or debt["escalations"]:
            found.append((debt["ref"], f"owed:{debt['ref']}@{debt['escalations']}"))
    for channel in result["channels"]:
        for message in channel["messages"]:
            waits = message.get("urgency") == NEXT_TURN and not escalations.get(message["ref"])
            if IMPORTANT_FLAGS.intersection(message["flags"]) and not waits and not is_notice(message):
                found.append((message["ref"], f"unread:{message['ref']}"))
    open_now = through_pause(result)
    if open_now is not None:  # paused: only what waits in the DMs with the operator's seats can be answered
        found = [(ref, mark) for ref, mark in found if channel_of(ref) in open_now]
    marks = [mark for _, mark in found]
    if open_now is None and _truncated(result):  # what the listing left out can change unseen: the totals stand for it
        marks.append(f"more:{result['owed_total']}:{result['unread']}")
    return Obligations(agent, result["now"], result["owed_total"], tuple(sorted(marks)),
                       tuple(dict.fromkeys(ref for ref, _ in found)), open_now is not None,
                       tuple(Work.of(claim) for claim in claims))


def _truncated(result: dict) -> bool:
    """The hub listed as many debts or headlines as asked for: there may be more it did not list. New
    mail past the limit must still change the signature, or a quarantine would never lift (a chatty
    backlog then lifts it too: a turn too many, never a wake too few)."""
    listed = sum(len(channel["messages"]) for channel in result["channels"])
    return len(result["owed"]) < result["owed_total"] or listed >= settings.ARM_CHECK_LIMIT
