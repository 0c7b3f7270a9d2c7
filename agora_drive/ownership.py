"""One driver per seat, and one reception surface per seat.

drive-<id>.lock is held (flock) for the driver's whole life: a second driver finds it held and
refuses, whatever --force says, because two drivers would buy two turns per wake. Once held,
drive-<id>.pid names the driver; while it is live, `agora listen` for the seat ends with
driver-owns-reception and the stop-hook backstop stays quiet. A fresh interactive listener
(listen-<id>.pid live: a session's hook or a monitored loop is armed) refuses the driver
with guidance; --force passes that guard, since the listener's next arm then yields.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from agorad.surface.paths import FILE_MODE, drive_file, listen_file
from agorad.surface.pidfiles import LIVE, pidfile_state, read_pidfile, remove_if_ours, write_pidfile


class Refused(Exception):
    """The driver may not own the seat; `reason` is a word, the message says what to do."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


class Ownership:
    def __init__(self, root: Path, agent: str):
        self.root, self.agent = root, agent
        self.pidfile = drive_file(root, agent, "pid")
        self._fd: int | None = None

    def take(self, force: bool) -> None:
        """Hold the seat's driver lock, or raise Refused."""
        fd = os.open(drive_file(self.root, self.agent, "lock"),
                     os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            found = read_pidfile(self.pidfile)
            holder = f" (pid {found[0]})" if found else ""
            raise Refused("already-driven", f"seat {self.agent} already has a live driver{holder}; one driver "
                          "per seat, and --force never takes a live driver's seat: stop that one first") from None
        self._fd = fd
        listener = listen_file(self.root, self.agent, "pid")
        if not force and pidfile_state(listener) == LIVE:
            self.release()
            found = read_pidfile(listener)
            raise Refused("listener-armed", f"seat {self.agent} has a live listener (pid {found[0] if found else '?'},"
                          f" {listener}): an interactive session receives for it. One reception surface per seat: "
                          "end that session's listener, or pass --force to drive anyway (the listener yields at "
                          "its next arm)")

    def announce(self, **facts) -> None:
        """(Re)write drive-<id>.pid with the driver's current facts (atomic: readers never see half).

        No heartbeat fact: a driver is silent for a whole turn, so it is live exactly while its pid is."""
        write_pidfile(self.pidfile, agent=self.agent, **facts)

    def release(self) -> None:
        remove_if_ours(self.pidfile)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def driver_pid(root: Path, agent: str) -> int | None:
    """The live driver's pid, or None."""
    pidfile = drive_file(root, agent, "pid")
    found = read_pidfile(pidfile)
    return found[0] if found and pidfile_state(pidfile) == LIVE else None
