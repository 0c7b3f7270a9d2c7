"""The seat's backoff file, `listen-<id>.backoff`: the two waits a seat keeps between runs.

    {"adaptive": 120.0, "rering": {"at": 1795973838.5, "step": 1}}

`adaptive` is the next --adaptive max-wait (seconds); `rering` the re-ring
schedule of rering.py (`at` on the hub's clock), null while none runs. A bare
number, the format before the re-ring, is read as the adaptive wait. Anything
unreadable fails toward more wakes: the shortest adaptive wait, and a re-ring
due at once.
"""

from __future__ import annotations

import math

from agora_listen.seat import Seat


class Backoff:
    """A value class, not a dataclass: an armed listener holds this module (listener.Options says why)."""

    __slots__ = ("adaptive", "rering_at", "rering_step", "corrupt")

    def __init__(self, adaptive: float | None = None, rering_at: float | None = None, rering_step: int = 0,
                 corrupt: bool = False):
        self.adaptive = adaptive  # None: the first wait (settings.ADAPTIVE_FIRST)
        self.rering_at = rering_at  # the hub's clock; None: no schedule runs
        self.rering_step = rering_step
        self.corrupt = corrupt  # the file held something unreadable: a re-ring is due

    def _fields(self) -> tuple:
        return self.adaptive, self.rering_at, self.rering_step, self.corrupt

    def __eq__(self, other) -> bool:
        return isinstance(other, Backoff) and other._fields() == self._fields()

    def __repr__(self) -> str:
        return (f"Backoff(adaptive={self.adaptive!r}, rering_at={self.rering_at!r}, "
                f"rering_step={self.rering_step!r}, corrupt={self.corrupt!r})")

    def replace(self, **changes) -> "Backoff":
        return Backoff(**{**dict(zip(self.__slots__, self._fields())), **changes})

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
    changed = current.replace(corrupt=False, **changes)  # any write replaces the file whole
    if changed != current:
        save(seat, changed, sync)
    return changed


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _positive(value) -> bool:
    return _number(value) and value > 0
