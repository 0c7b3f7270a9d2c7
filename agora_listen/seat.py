"""A seat's files under the home: lock, pidfile, offset, backoff, owed signature.

Writes are atomic (temp file and rename, never through a symlink). Reads that
find a file corrupt say so, and the caller fails toward more wakes.
"""

from __future__ import annotations

import os

from agorad.surface import cjson, filenames
from agorad.surface.paths import FILE_MODE, LISTEN_STATE, drive_file, write_private
from agorad.surface.pidfiles import LIVE, pidfile_state, remove_if_ours, write_pidfile

TYPE_CHECKING = False  # typing's, without importing typing: the stop hook imports this module
if TYPE_CHECKING:
    from pathlib import Path

CORRUPT = "corrupt"


class Seat:
    def __init__(self, home: str | os.PathLike, agent: str):
        self.home, self.agent = home, agent
        self._lock_fds: list[int] = []

    def file(self, suffix: str) -> str:
        # Text, not a Path: an armed listener loads no pathlib (listener.Options says why).
        return filenames.listen_file(self.home, self.agent, suffix)

    @property
    def driver_pidfile(self) -> Path:
        return drive_file(self.home, self.agent, "pid")

    def driver_owns_reception(self) -> bool:
        # Named as a string, not by driver_pidfile: the stop hook asks this at every turn's end, and a
        # Path would load pathlib (filenames.py).
        pidfile = filenames.drive_file(self.home, self.agent, "pid")
        return filenames.exists(pidfile) and pidfile_state(pidfile) == LIVE

    # --- lock and pidfile ----------------------------------------------------------

    def take_lock(self, path: Path | None = None) -> bool:
        """Hold the seat's listener lock; False if a live process holds it (a dead one's is free)."""
        import fcntl  # here, not at the top: the stop hook imports this module and never locks

        fd = os.open(path or self.file("lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._lock_fds.append(fd)
        return True

    def release_lock(self) -> None:
        while self._lock_fds:
            os.close(self._lock_fds.pop())

    def write_pid(self, heartbeat: float, source: str, only_if_free: bool = False) -> None:
        """Write listen-<id>.pid; with `only_if_free` (a --once without the lock), never over a live holder's."""
        if only_if_free and pidfile_state(self.file("pid")) == LIVE:
            return
        write_pidfile(self.file("pid"), heartbeat=max(1, round(heartbeat)), source=source, agent=self.agent)

    def touch_pid(self) -> None:
        try:
            os.utime(self.file("pid"), follow_symlinks=False)
        except FileNotFoundError:
            pass

    def remove_pid(self) -> None:
        remove_if_ours(self.file("pid"))

    # --- state files ----------------------------------------------------------------

    def load(self, suffix: str):
        """The JSON in listen-<id>.<suffix>: the value, None when missing, CORRUPT when unreadable."""
        try:
            return cjson.loads(filenames.read_regular(self.file(suffix)))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, RecursionError):  # nested past the parser's depth: as corrupt, rewritten
            return CORRUPT

    def save(self, suffix: str, value, sync: bool = True) -> None:
        write_private(self.file(suffix), cjson.dumps(value), sync=sync)

    def forget_state(self) -> None:
        """Remove the state files (offset, backoff, owed signature), as the hub does when a seat goes."""
        for suffix in LISTEN_STATE:
            try:
                os.unlink(self.file(suffix))
            except FileNotFoundError:
                pass
