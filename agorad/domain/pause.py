"""Pause and resume: the operator stops the fleet at once (`agora pause`) and lets it go on.

While the hub is paused, an agent's call that would change something is refused with `paused`
(runtime/methods.py marks what stays allowed: reads, acks, heartbeats, and DMs with the operator);
the operator is never refused. The paused state is a row (store/pauses.py), so it survives a
restart; the hub keeps it in memory too (HubState.pause), so the check costs one attribute read.

"DMs with the operator": the local operator is the connection without `hub.hello` and has no
agent id, so it cannot be a DM's party. It speaks to the fleet through seats of its own (a human's
own seat, say), and names them when it pauses (`operator_seats`): those seats act freely while
paused, and a DM between any agent and one of them still goes through.

Each pause and each resume announces itself once to every seat: one message in `commons` from
HUB_SENDER (no agent: sender_pk NULL), addressed to every member, so it rings like any message
addressed to them. Obligation clocks freeze: the sweeper runs no escalation and posts no cadence
reminder while paused, and at resume every open debt's schedule moves later by the part of the
pause it lived through, and every pending reminder by the whole pause.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import apsw

from agorad.domain import cadence
from agorad.domain import messages
from agorad.domain import registry
from agorad.domain.delivery import Deliveries, deliver
from agorad.domain.text import check_line, is_unicode
from agorad.store import agents as agents_sql
from agorad.store import channels as channels_sql
from agorad.store import debts as debts_sql
from agorad.store import pauses as sql
from agorad.store import write
from agorad.surface.durations import format_span
from agorad.surface.errors import AgoraError, Conflict, Paused
from agorad.surface.protocol import MAX_REASON


@dataclass(frozen=True)
class Pause:
    """The open pause: since when, why, and the pks of the operator's seats."""

    pk: int
    since: float
    reason: str
    seats: frozenset[int]


def current(db: apsw.Connection) -> Pause | None:
    found = sql.current(db)
    if found is None:
        return None
    return Pause(found["pk"], found["paused_at"], found["reason"], frozenset(found["operator_seats"]))


def pause(db: apsw.Connection, now: float, reason, seat_ids: list) -> tuple[Pause, list[dict]]:
    """Pause the hub and announce it; a hub already paused is a conflict that changes nothing."""
    reason = check_line(reason, "reason", MAX_REASON)
    with write(db):
        already = current(db)
        if already is not None:
            raise Conflict(f"the hub is already paused (since {_clock(already.since)}"
                           f"{_why(already.reason)}); nothing changed: `agora resume` first")
        resolved = [registry.resolve(db, seat_id, "operator_seats")[0] for seat_id in seat_ids]
        seats = list({seat["pk"]: seat for seat in resolved}.values())  # one seat named by two of its names
        pk = sql.open_pause(db, now, reason, [seat["pk"] for seat in seats])
        named = ", ".join(seat["id"] for seat in seats)
        events = _announce(db, now, f"hub paused by the operator{_why(reason, ': ')}", (
            f"The operator paused this hub at {_clock(now)}{_why(reason, '. Reason: ')}.\n"
            "Until it resumes, calls that change something are refused with the error `paused`; "
            f"{_still_works(bool(seats), named)}. Owed replies do not escalate while the hub is paused.\n"))
    return Pause(pk, now, reason, frozenset(seat["pk"] for seat in seats)), events


def resume(db: apsw.Connection, now: float) -> tuple[dict, list[dict]]:
    """End the open pause, move every obligation clock on by it, and announce it."""
    with write(db):
        paused = current(db)
        if paused is None:
            raise Conflict("the hub is not paused; nothing to resume")
        sql.close(db, paused.pk, now)
        on_resume(db, paused.since, now)
        paused_for = now - paused.since
        events = _announce(db, now, f"hub resumed after {format_span(paused_for)} paused", (
            f"The operator resumed this hub at {_clock(now)}, after {format_span(paused_for)} paused. "
            "Calls work again; owed replies escalate on their schedule, moved later by the pause.\n"))
    return {"paused_at": paused.since, "resumed_at": now, "paused_for": paused_for, "reason": paused.reason}, events


def on_resume(db: apsw.Connection, paused_at: float, resumed_at: float) -> None:
    """Every clock the hub keeps for an obligation moves later by the pause, inside resume's
    transaction. Each clock-keeping concept adds its shift here."""
    debts_sql.freeze(db, paused_at, resumed_at)
    cadence.shift(db, paused_at, resumed_at)


def live_seats(db: apsw.Connection, paused: Pause) -> list[dict]:
    """The operator's seats the pause named that are still agents. One removed since (`agora agent rm`)
    is no seat: the pause keeps its pk, and a new agent under its id has another (pks are never reused),
    so it is no operator seat either."""
    return [row for row in (agents_sql.by_pk(db, pk) for pk in sorted(paused.seats)) if row]


def shown(db: apsw.Connection, paused: Pause | None, now: float) -> dict | None:
    """The pause as hub.status shows it, or None when the hub runs."""
    if paused is None:
        return None
    return {"since": paused.since, "paused_for": now - paused.since, "reason": paused.reason,
            "operator_seats": [row["id"] for row in live_seats(db, paused)]}


def refusal(db: apsw.Connection, paused: Pause, now: float, method: str) -> Paused:
    # The operator's reason stays in data.pause_reason and in the fenced announcement: a refusal's
    # message may reach a model as a tool error, so it holds hub words only.
    has_seats = bool(live_seats(db, paused))
    return Paused(f"the hub is paused (for {format_span(now - paused.since)}, since {_clock(paused.since)}"
                  f"): {method} is refused until the operator resumes it; "
                  f"{_still_works(has_seats, removed=bool(paused.seats) and not has_seats)}",
                  since=paused.since, pause_reason=paused.reason)


def _still_works(has_seats: bool, named: str = "", removed: bool = False) -> str:
    """What an agent may still do while paused (`named`: the operator's seats, to show them). DMs only
    while an operator seat is left: without one no DM goes through (allows_send), and saying they
    work would send an agent to try. `removed`: the pause named seats, all removed since."""
    if not has_seats:
        why = "every seat the operator named was removed" if removed else "the operator named no seat to speak through"
        return f"reads, acks and heartbeats still work (no DM: {why})"
    return f"reads, acks, heartbeats and DMs with the operator's seats{f' ({named})' if named else ''} still work"


def allows_send(db: apsw.Connection, paused: Pause, params: dict) -> bool:
    """A send while paused goes through only as a DM with one of the operator's seats, and may answer
    (reply_to, decline) only what was asked in such a DM: the ledger elsewhere stays as it stood."""
    live = {row["pk"] for row in live_seats(db, paused)}  # a DM with a seat removed since leads to no one
    if not live or not _with_operator(db, live, params.get("target")):
        return False
    reply_to = params.get("reply_to")
    return reply_to is None or (isinstance(reply_to, str) and _with_operator(db, live, reply_to.rpartition("#")[0]))


def _with_operator(db: apsw.Connection, seat_pks: set[int], target) -> bool:
    """`target` (@id or a channel's name) is a DM with one of the operator's seats (`seat_pks`)."""
    if not isinstance(target, str) or not is_unicode(target):  # checked before the send's own params: it says why
        return False
    if target.startswith("@"):
        try:
            peer, _ = registry.resolve(db, target[1:], "target")
        except AgoraError:  # a bad id is refused as paused; the send itself says why once resumed
            return False
        return peer["pk"] in seat_pks
    channel = channels_sql.by_name(db, target) or (channels_sql.by_old_name(db, target) if target.startswith("dm:") else None)
    return channel is not None and channel["kind"] == "dm" and bool({channel["dm_low"], channel["dm_high"]} & seat_pks)


def for_seat(db: apsw.Connection, paused: Pause | None, agent_pk: int, now: float) -> dict | None:
    """The pause as a seat's inbox check shows it: whether the seat is one of the operator's (it acts
    freely), and the DMs it shares with them (all it may still answer in). None while the hub runs."""
    if paused is None:
        return None
    dms = [dm["name"] for dm in (channels_sql.dm_between(db, agent_pk, seat["pk"]) for seat in live_seats(db, paused)
                                 if seat["pk"] != agent_pk) if dm]
    return {**shown(db, paused, now), "operator_seat": agent_pk in paused.seats, "open_dms": dms}


def _announce(db: apsw.Connection, now: float, title: str, body: str) -> Deliveries:
    """One hub-authored message in commons, addressed to every member; its deliveries to notify."""
    channel = channels_sql.by_name(db, channels_sql.COMMONS)
    members = channels_sql.members(db, channel["pk"])
    message = messages.post_as_hub(db, channel, title, body, members, now)
    return deliver(db, message, {pk: {"to-me"} for pk in members}, members, now)


def _why(reason: str, lead: str = ": ") -> str:
    return f"{lead}{reason}" if reason else ""


def _clock(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))
