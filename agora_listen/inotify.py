"""Linux inotify through ctypes: a directory watch whose fd a poll loop can wait on.

Why not watchdog: importing its observer costs ~40 ms and a thread, and
`agora listen --once` runs in a loop where start-up time is the budget
(inotify(7) is the kernel interface watchdog itself uses on Linux).
"""

from __future__ import annotations

import ctypes
import os
import struct

IN_MODIFY = 0x002
IN_CLOSE_WRITE = 0x008
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_ONLYDIR = 0x01000000
# The directory is watched only for names coming and going (rotation, creation); the file itself
# for appends. Watching the directory for IN_MODIFY would wake every listener on every database
# write when the notify files live in the home beside agora.db-wal.
WATCH_DIR = IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF
WATCH_FILE = IN_MODIFY | IN_CLOSE_WRITE

_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then `len` bytes of name


class Inotify:
    """A non-blocking inotify instance: a directory's names, plus one file's appends."""

    def __init__(self, directory: str):
        self._libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), f"inotify_init1: {os.strerror(ctypes.get_errno())}")
        try:
            self._add(directory, WATCH_DIR | IN_ONLYDIR)
        except OSError:
            os.close(self.fd)
            raise

    def watch_file(self, path: str) -> bool:
        """Watch `path` (the inode it names now) for appends; False if it does not exist."""
        try:
            self._add(path, WATCH_FILE)
            return True
        except FileNotFoundError:
            return False

    def _add(self, path: str, mask: int) -> int:
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(path), mask)
        if wd < 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"watching {path}: {os.strerror(errno)}", path)
        return wd

    def read(self) -> list[tuple[int, str]]:
        """Pending events as (mask, file name; empty for a watched file); empty when there are none."""
        events = []
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return events
            offset = 0
            while offset + _EVENT.size <= len(data):
                _wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
                name = data[offset + _EVENT.size: offset + _EVENT.size + length].rstrip(b"\0")
                events.append((mask, os.fsdecode(name)))
                offset += _EVENT.size + length

    def close(self) -> None:
        os.close(self.fd)
