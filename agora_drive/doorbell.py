"""Waiting for a reason to look: the seat's notify file, or its hub's pushes over the remote port.

A seat of a hub on this host is watched through its notify file with the listener's library
(`on_file`); a seat whose home names a hub on another host (its hub.url) through a subscribed
WebSocket to that hub (`over_port`, the listener's `--source ws`, agora_listen/wsource.py),
which reconnects and catches up by delivery id by itself. Either is a watcher (a descriptor
that becomes readable) and a follower (`read_new`).

No subprocess and no polling: one poll(2) on the watcher's descriptor and the driver's signal
pipes, so an idle driver costs about nothing. It rings for a line that may oblige the seat
(to-me, dm, open or escalated, not next_turn) or for lines rotated away unread, after the
debounce window; the sweep that follows decides whether anything obliges. It starts at the
file's end (or the hub's newest delivery): what landed before is the sweep's to find, and the
sweep asks the hub.
"""

from __future__ import annotations

import select
import time
from pathlib import Path

from agorad.surface.vocab import IMPORTANT_FLAGS, NEXT_TURN_FLAG

RANG, TIMEOUT, SIGNAL = "rang", "timeout", "signal"


class Doorbell:
    def __init__(self, watch, follower, late: bool = False):
        self.watch, self.follower = watch, follower
        # Over the port with no hub answering at the start: once the source subscribes (at the hub's newest
        # then), it rings once, for what landed between the driver's last sweep and that subscription.
        self.late = late

    @classmethod
    def on_file(cls, notify_dir: Path, agent: str, watcher: str = "auto") -> "Doorbell":
        from agora_listen.follow import Follower
        from agora_listen.watchers import open_watcher
        from agorad.surface.paths import notify_file

        path = notify_file(notify_dir, agent)
        watch = open_watcher(watcher, str(notify_dir), str(path))  # before the first read: nothing falls between
        follower = Follower(path)
        follower.arm(None)
        return cls(watch, follower)

    @classmethod
    def over_port(cls, url: str, agent: str, key: str) -> "Doorbell":
        """Subscribed to the hub at `url` as the seat. A hub that does not answer yet is tried again in
        the background; a refused seat raises agora_listen.wsource.Fatal, now or from a later read."""
        from agora_listen.wsource import WsSource
        from agorad.surface.errors import Unavailable

        source = WsSource(url, agent, key, after=None)
        late = False
        try:
            source.open()
        except Unavailable:
            late = True  # its thread connects once the hub answers, and starts at the hub's newest delivery then
        source.start()
        return cls(source, source, late)

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
        if self.late and self.follower.armed:
            self.late = False
            return True
        lines = self.follower.read_new()
        missed, self.follower.missed = self.follower.missed, 0
        return bool(missed) or any(_obliging(line) for line in lines)

    def close(self) -> None:
        self.watch.close()
        if self.follower is not self.watch:
            self.follower.close()


def _obliging(line: dict) -> bool:
    return NEXT_TURN_FLAG not in line["flags"] and bool(IMPORTANT_FLAGS.intersection(line["flags"]))
