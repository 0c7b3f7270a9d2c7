"""Waiting for a reason to look: the seat's notify file, watched through the listener's library.

No subprocess and no polling: one poll(2) on the watcher's descriptor and the driver's signal
pipes, so an idle driver costs about nothing. It rings for a line that may oblige the seat
(to-me, dm, open or escalated, not next_turn) or for lines rotated away unread, after the
debounce window; the sweep that follows decides whether anything obliges. It starts at the
file's end: what landed before is the sweep's to find, and the sweep asks the hub.
"""

from __future__ import annotations

import select
import time
from pathlib import Path

from agora_listen.follow import Follower
from agora_listen.watchers import open_watcher
from agorad.surface.paths import notify_file
from agorad.surface.vocab import IMPORTANT_FLAGS, NEXT_TURN_FLAG

RANG, TIMEOUT, SIGNAL = "rang", "timeout", "signal"


class Doorbell:
    def __init__(self, notify_dir: Path, agent: str, watcher: str = "auto"):
        path = notify_file(notify_dir, agent)
        self.watch = open_watcher(watcher, str(notify_dir), str(path))  # before the first read: nothing falls between
        self.follower = Follower(path)
        self.follower.arm(None)

    def wait(self, deadline: float | None, debounce: float, signal_fds: list[int]) -> str:
        """Until a ring (then the debounce window), `deadline` (time.monotonic), or a signal pipe is readable."""
        poller = select.poll()
        for fd in (self.watch.fd, *signal_fds):
            poller.register(fd, select.POLLIN)
        window_end = None
        while True:
            if self._rings():
                window_end = window_end or time.monotonic() + debounce
            now = time.monotonic()
            if window_end is not None and now >= window_end:
                return RANG
            ends = [t for t in (window_end, deadline) if t is not None]
            if window_end is None and deadline is not None and now >= deadline:
                return TIMEOUT
            timeout = None if not ends else max(0.0, min(ends) - now) * 1000
            for fd, _ in poller.poll(timeout):
                if fd in signal_fds:
                    return SIGNAL
                self.watch.drain()
                self.watch.follow()  # after a rotation: watch the new file under the name

    def _rings(self) -> bool:
        lines = self.follower.read_new()
        missed, self.follower.missed = self.follower.missed, 0
        return bool(missed) or any(_obliging(line) for line in lines)

    def close(self) -> None:
        self.watch.close()
        self.follower.close()


def _obliging(line: dict) -> bool:
    return NEXT_TURN_FLAG not in line["flags"] and bool(IMPORTANT_FLAGS.intersection(line["flags"]))
