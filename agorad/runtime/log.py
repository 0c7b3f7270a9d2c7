"""One line per event on stderr: `agorad 2026-11-29T16:52:53Z event key=value ...`.

Callers pass only identifiers and counts; keys and message text never reach a log.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

_after_line: Callable[[], None] | None = None  # the detached hub's log rotation (log_file.keep_under)


def log(event: str, **fields) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    parts = " ".join(f"{k}={_value(v)}" for k, v in fields.items())
    sys.stderr.write(f"agorad {stamp} {event} {parts}".rstrip() + "\n")
    sys.stderr.flush()
    if _after_line is not None:
        _after_line()


def after_each_line(check: Callable[[], None] | None) -> None:
    """Call `check` after every line written from now on (None: stop)."""
    global _after_line
    _after_line = check


def _value(value) -> str:
    text = str(value)
    if not text or any(c.isspace() or not c.isprintable() for c in text):
        return repr(text)
    return text


class Sparse:
    """An event a peer or the kernel can repeat thousands of times a second (a refused connection, a failed
    accept), logged at most once per `every` seconds. The next line written says how many were held back
    since the line before (`held_back_since_last=N`): those of any peer, not of the one this line names.
    A flood of them must not fill the disk, nor rotate the lines that matter out of the log."""

    def __init__(self, event: str, every: float = 10.0, clock=time.monotonic):
        self.event, self.every, self.clock = event, every, clock
        self.held_back = 0
        self.last: float | None = None

    def __call__(self, **fields) -> None:
        now = self.clock()
        if self.last is not None and now - self.last < self.every:
            self.held_back += 1
            return
        if self.held_back:
            fields["held_back_since_last"] = self.held_back
        log(self.event, **fields)
        self.held_back, self.last = 0, now
