"""The driver's signals, each turned into a readable pipe so poll(2) (the wait, or a turn's
supervision) sees it: TERM, INT and HUP stop the driver; USR1 is `agora drive --release`.

Separate pipes, because a release must not end the turn in flight while a stop must.
"""

from __future__ import annotations

import os
import signal

from agora_listen.watchers import wake_pipe


class Signals:
    def __init__(self):
        self.stop_fd, self._stop_w = wake_pipe()
        self.release_fd, self._release_w = wake_pipe()
        self.stopping = False
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._stop)
        signal.signal(signal.SIGUSR1, self._release)

    def _stop(self, signum, frame) -> None:
        self.stopping = True
        _poke(self._stop_w)

    def _release(self, signum, frame) -> None:
        _poke(self._release_w)

    def released(self) -> bool:
        """Whether a release came since the last look (and forget it)."""
        return _drain(self.release_fd)


def _poke(fd: int) -> None:
    try:
        os.write(fd, b"x")
    except BlockingIOError:  # full: it is readable already
        pass


def _drain(fd: int) -> bool:
    got = False
    try:
        while os.read(fd, 512):
            got = True
    except BlockingIOError:
        pass
    return got
