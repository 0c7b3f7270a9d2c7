"""Re-ringing important mail that rang but is still unread, on a per-seat exponential schedule.

A wake can be swallowed: printed to a harness that is no longer there, or
shown to a model that let it drop. The notify file will not ring that mail
again (it is behind the saved offset), so at arm the listener asks the hub
(backlog.ask: the same one call that brings the seat's debts) for the unread
headlines flagged to-me, dm or open. If there are any and the schedule allows,
they ring again as a backlog wake. The schedule lives in the backoff file
(backoff.py) on the hub's clock:

- a wake, or an arm, that finds important mail unread starts one, if none runs:
  due RERING_FIRST later (step 0); if one runs, it keeps its step, and its
  next reminder comes no sooner than that step after this wake (the agent
  was just rung);
- a re-ring moves it on: step k+1, due min(RERING_FIRST * 2^(k+1), RERING_CAP) later;
- an arm or wake that finds no such mail unread clears it.

A listener that stays armed sets one timer for the next reminder (no polling):
when it fires, it asks the hub again and rings if the reminder is still due.
So a swallowed wake costs at most one step, and an agent that leaves its mail
unread is reminded ever more rarely, never in a loop. An unreadable schedule
counts as due: more wakes, never deafness. (No schedule at all, as at a seat's
first arm, which starts at the end of the notify file on purpose, or in a
backoff file of an earlier release, starts one: the mail may never have rung.)
Mail sent `--urgency next_turn` never re-rings: it was never meant to ring.
"""

from __future__ import annotations

from agora_listen import backoff
from agora_listen.headlines import is_notice
from agora_listen.seat import Seat
from agorad.surface import settings
from agorad.surface.vocab import IMPORTANT_FLAGS, NEXT_TURN

_MAX_STEP = 32  # far past the cap: keeps 2**step small


def unread_important(check: dict) -> list[dict]:
    """The unread headlines of an `inbox.check` answer that are important, as wake-line deliveries."""
    return [_as_delivery(channel["channel"], m) for channel in check["channels"] for m in channel["messages"]
            if IMPORTANT_FLAGS.intersection(m["flags"]) and m.get("urgency") != NEXT_TURN and not is_notice(m)]


def due(seat: Seat, check: dict) -> list[dict]:
    """At arm: the important unread mail to ring again now, if the schedule allows; [] otherwise.

    An arm that finds none clears the schedule (writing only if one ran); one that finds some and
    no schedule starts one."""
    waiting = unread_important(check)
    if not waiting:
        backoff.update(seat, rering_at=None, rering_step=0)
        return []
    state = backoff.load(seat)
    if state.corrupt or (state.rering_at is not None and check["now"] >= state.rering_at):
        return waiting
    if state.rering_at is None:
        backoff.update(seat, rering_at=check["now"] + interval(0), rering_step=0)
    return []


def wait(seat: Seat, check: dict) -> float | None:
    """Seconds (on the hub's clock) until the next reminder is due, for a listener that stays armed;
    None when nothing important is unread or no schedule runs."""
    if not unread_important(check):
        return None
    at = backoff.load(seat).rering_at
    return None if at is None else max(0.0, at - check["now"])


def rang(seat: Seat, check: dict, again: bool, sync: bool = True) -> None:
    """After a wake (`again`: a re-ring), with the hub's answer from that moment: move the schedule on."""
    if not unread_important(check):
        backoff.update(seat, rering_at=None, rering_step=0, sync=sync)
        return
    state = backoff.load(seat)
    running = state.rering_at is not None and not state.corrupt
    if again:
        step = min(state.rering_step + 1, _MAX_STEP) if running else 0
    else:  # a new wake keeps a running schedule's step, but the next reminder comes no sooner than its step
        step = state.rering_step if running else 0
    at = check["now"] + interval(step)
    if not again and running:
        at = max(at, state.rering_at)
    backoff.update(seat, rering_at=at, rering_step=step, sync=sync)


def interval(step: int) -> float:
    return min(settings.RERING_FIRST * 2 ** step, settings.RERING_CAP)


def _as_delivery(channel: str, headline: dict) -> dict:
    return {"channel": channel, "seq": headline["seq"], "flags": headline["flags"], "title": headline["title"],
            "sender": headline["sender"]}
