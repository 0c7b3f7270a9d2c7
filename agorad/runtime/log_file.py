"""The detached hub's log file, `<home>/agorad.log`: appended to, 0600, and kept under a size.

A hub run with `agora up --detach` writes its log (descriptors 1 and 2) to this file for as long
as it runs, so without a limit a long-lived hub's log only grows. Past `settings.LOG_KEEP_MIB` it
rotates: the file is renamed `agorad.log.1` (replacing the one before) and a new, empty
`agorad.log` is put on descriptors 1 and 2 with dup2, which swaps them at once for every thread.
At most about twice the limit is kept. A hub in the foreground, or under systemd (whose journal
keeps its lines), logs to whatever its stderr is and never rotates it.
"""

from __future__ import annotations

import errno
import os
import stat
import threading

from agorad.runtime import log as log_module
from agorad.runtime.log import log
from agorad.surface.filenames import ROTATED_SUFFIX

STREAMS = (1, 2)  # stdout and stderr: the detached hub's both go to the log


def open_append(path) -> int:
    """The log, opened to append: a regular file, made 0600 (O_NONBLOCK: a FIFO there cannot hang the open)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o600)
    except OSError as exc:
        if exc.errno in (errno.ENXIO, errno.ELOOP):  # a FIFO nobody reads; a symbolic link
            raise OSError(f"{path} is not a regular file; move it away") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file; move it away")
        os.fchmod(fd, 0o600)
        return fd
    except BaseException:
        os.close(fd)
        raise


class Rotation:
    """Rotates the log behind descriptors 1 and 2 once it holds `limit` bytes; `check` runs after each line.

    It renames the file only while `path` still names the file the hub writes: a log moved away by someone
    else (logrotate, a user) is theirs, and the hub writes on where it is. A failed rotation (a full disk, a
    read-only home) is logged, and tried again only after another quarter of the limit was written."""

    def __init__(self, path, limit: int, streams: tuple[int, ...] = STREAMS):
        self.path, self.limit, self.streams = os.fspath(path), limit, streams
        self.next_at = limit
        self._lock = threading.Lock()  # the helper thread logs too: one rotation at a time

    def check(self) -> None:
        try:
            if os.fstat(self.streams[-1]).st_size < self.next_at:
                return
            with self._lock:
                size = os.fstat(self.streams[-1]).st_size
                said = self._rotate(size) if size >= self.next_at else None
        except OSError:  # stderr closed: nothing to rotate, and the line's caller must not fail for it
            return
        if said is not None:  # logged outside the lock: the line comes back through check
            event, fields = said
            log(event, **fields)

    def _rotate(self, size: int) -> tuple[str, dict] | None:
        """Rename the log to `.1` and put a new one on the descriptors; what to log about it, if anything."""
        self.next_at = size + max(self.limit // 4, 1)  # should this one fail, try again later
        if not self._names_ours():
            return None
        rotated = self.path + ROTATED_SUFFIX
        try:
            os.rename(self.path, rotated)  # the descriptors write on into it, as `.1`
        except OSError as exc:
            return "log-rotate-failed", {"path": self.path, "error": exc.strerror or str(exc)}
        try:
            fresh = open_append(self.path)
        except OSError as exc:
            _rename_back(rotated, self.path)
            return "log-rotate-failed", {"path": self.path, "error": exc.strerror or str(exc)}
        try:
            for fd in self.streams:
                os.dup2(fresh, fd)
        finally:
            os.close(fresh)
        self.next_at = self.limit
        return "log-rotated", {"path": self.path, "previous": rotated, "bytes": size}

    def _names_ours(self) -> bool:
        try:
            named, ours = os.lstat(self.path), os.fstat(self.streams[-1])
        except OSError:
            return False
        return (named.st_dev, named.st_ino) == (ours.st_dev, ours.st_ino)


def _rename_back(rotated: str, path: str) -> None:
    """The log's name back on the file the hub writes, after a new one could not be made."""
    try:
        os.rename(rotated, path)
    except OSError:
        pass  # the hub writes on into `.1`; the next attempt finds no log by its name and leaves it be


def keep_under(path, limit: int) -> Rotation:
    """From now on, rotate the log at `path` (on descriptors 1 and 2) once it holds `limit` bytes; a log that
    holds that much already (a hub started on a full one) at once."""
    rotation = Rotation(path, limit)
    rotation.check()
    log_module.after_each_line(rotation.check)
    return rotation
