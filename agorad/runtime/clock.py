"""The hub's sense of time, controllable in tests.

Every time-dependent rule (TTL, dormant, later escalation and cadence) reads
`Clock.now()`. A hub started with AGORA_TEST_CLOCK=1 exposes `clock.advance`
on the wire so integration tests move time forward instead of sleeping.
"""

from __future__ import annotations

import time


class Clock:
    """Wall-clock seconds plus an offset that only tests change."""

    def __init__(self, controllable: bool = False):
        self.controllable = controllable
        self.offset = 0.0

    def now(self) -> float:
        return time.time() + self.offset

    def advance(self, seconds: float) -> float:
        if not self.controllable:
            raise RuntimeError("this hub's clock is not controllable")
        self.offset += seconds
        return self.now()
