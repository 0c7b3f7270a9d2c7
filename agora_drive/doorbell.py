"""Waiting for a reason to look: the seat's notify file, or its hub's pushes over the remote port.

A seat of a hub on this host is watched through its notify file with the listener's library
(`on_file`); a seat whose home names a hub on another host (its hub.url) through a subscribed
WebSocket to that hub (`over_port`, the listener's `--source ws`, agora_listen/wsource.py),
which reconnects and catches up by delivery id by itself. Either is a watcher (a descriptor
that becomes readable) and a follower (`read_new`). Armed while that hub does not answer,
the source subscribes later and asks for what the hub stored since a little before the
driver started (`since`, as `agora listen --source ws` does): what lands between the hub's
return and the subscription still rings.

No subprocess and no polling (but the poll watcher's, where inotify is used up): one poll(2) on the watcher's descriptor and the driver's signal
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
    def __init__(self, watch, follower):
        self.watch, self.follower = watch, follower

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
    def over_port(cls, url: str, agent: str, key: str, home: str | None = None) -> "Doorbell":
        """Subscribed to the hub at `url` as the seat. A hub that does not answer yet is tried again in
        the background; a refused seat raises agora_listen.wsource.Fatal, now or from a later read."""
        from agora_listen.wsource import WsSource
        from agorad.surface.errors import Unavailable

        started = time.time()
        source = WsSource(url, agent, key, after=None, home=home)  # home: its key file, read at each connect
        try:
            source.open()
        except Unavailable:  # its thread subscribes once the hub answers, asking for what came since this began
            source.since_start(started)
        source.start()
        return cls(source, source)

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
        if self.follower is not self.watch:
            self.follower.close()


def _obliging(line: dict) -> bool:
    return NEXT_TURN_FLAG not in line["flags"] and bool(IMPORTANT_FLAGS.intersection(line["flags"]))
