"""The seat's backoff file, `listen-<id>.backoff`: the two waits a seat keeps between runs.

    {"adaptive": 120.0, "rering": {"at": 1795973838.5, "step": 1}}

`adaptive` is the next --adaptive max-wait (seconds); `rering` the re-ring
schedule of rering.py (`at` on the hub's clock), null while none runs. A bare
number, the format before the re-ring, is read as the adaptive wait. Anything
unreadable fails toward more wakes: the shortest adaptive wait, and a re-ring
due at once.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from agora_listen.seat import Seat


@dataclass
class Backoff:
    adaptive: float | None = None  # None: the first wait (settings.ADAPTIVE_FIRST)
    rering_at: float | None = None  # the hub's clock; None: no schedule runs
    rering_step: int = 0
    corrupt: bool = False  # the file held something unreadable: a re-ring is due

    def schedule(self) -> dict | None:
        return None if self.rering_at is None else {"at": self.rering_at, "step": self.rering_step}


def load(seat: Seat) -> Backoff:
    stored = seat.load("backoff")
    if stored is None:
        return Backoff()
    if _positive(stored):  # the legacy bare number
        return Backoff(adaptive=stored)
    if not isinstance(stored, dict):
        return Backoff(corrupt=True)
    adaptive = stored.get("adaptive") if _positive(stored.get("adaptive")) else None
    rering = stored.get("rering")
    if rering is None:
        return Backoff(adaptive=adaptive)
    at, step = (rering.get("at"), rering.get("step")) if isinstance(rering, dict) else (None, None)
    if not (_number(at) and isinstance(step, int) and not isinstance(step, bool) and 0 <= step < 64):
        return Backoff(adaptive=adaptive, corrupt=True)
    return Backoff(adaptive=adaptive, rering_at=at, rering_step=step)


def save(seat: Seat, backoff: Backoff, sync: bool = True) -> None:
    seat.save("backoff", {"adaptive": backoff.adaptive, "rering": backoff.schedule()}, sync=sync)


def update(seat: Seat, sync: bool = True, **changes) -> Backoff:
    """Change some fields and keep the others; write only if something changed, so an arm with nothing
    to say writes nothing. (Read just before: two writers of one seat are rare, and a value lost costs
    at most one wait or one ring.)"""
    current = load(seat)
    changed = dataclasses.replace(current, corrupt=False, **changes)  # any write replaces the file whole
    if changed != current:
        save(seat, changed, sync)
    return changed


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _positive(value) -> bool:
    return _number(value) and value > 0
