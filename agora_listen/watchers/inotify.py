"""The inotify watcher: Linux inotify(7) through ctypes wakes a poll loop when a notify file grows or is replaced.

The default wherever inotify exists. Why not watchdog there: importing its
observer costs tens of milliseconds and it runs threads, while
`agora listen --once` runs in a loop where start-up time is the budget
(inotify(7) is the kernel interface watchdog itself uses on Linux).

In steady state only the file is watched (appends, and its own rename at a
rotation or a seat's rename, or its unlink at a seat's removal). The directory is watched only while the name is
missing, until the hub creates the file again: a directory watch would wake
every listener whenever anything in the home changes (the database, other
seats' files).
"""

from __future__ import annotations

import errno
import os
import sys

from agorad.surface import inotify
from agorad.surface.inotify import (IN_ATTRIB, IN_CLOSE_WRITE, IN_CREATE, IN_DELETE_SELF, IN_IGNORED, IN_MODIFY,
                                    IN_MOVE_SELF, IN_MOVED_TO, IN_ONLYDIR, available)

# IN_ATTRIB: an unlink changes the link count. The listener holds the file open, so IN_DELETE_SELF
# never comes while it does; the removal of a seat (which deletes its file) is seen this way.
WATCH_FILE = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVE_SELF | IN_DELETE_SELF
WATCH_DIR = IN_CREATE | IN_MOVED_TO


class Inotify:
    """A non-blocking inotify instance following one file by name."""

    def __init__(self, directory: str, path: str):
        if not available():
            raise OSError(errno.ENOSYS, f"inotify is not available on this system ({sys.platform}); "
                          "use --watcher watchdog (or auto)")
        self.directory, self.path = directory, path
        self.fd = inotify.init()
        self._dir_wd: int | None = None
        self._file_inode: int | None = None
        self._file_wd: int | None = None
        try:
            self.follow()
        except OSError:
            os.close(self.fd)
            raise

    def follow(self) -> None:
        """Watch whatever file the name holds now; watch the directory only while it holds none."""
        try:
            inode = os.stat(self.path).st_ino
        except FileNotFoundError:
            inode = None
        if inode is None:  # the next file under the name is watched, whatever its number: a deleted file's,
            self._file_inode = None  # freed, may be given to it (ext4 gives it to the next), and its watch went
        if inode is not None and inode != self._file_inode:
            try:
                self._file_wd = self._add(self.path, WATCH_FILE)
                self._file_inode = inode
            except FileNotFoundError:
                inode = None  # gone again between the stat and the watch
        if inode is None and self._dir_wd is None:
            self._dir_wd = self._add(self.directory, WATCH_DIR | IN_ONLYDIR)
            self.follow()  # the file may have appeared before the directory watch did
        elif inode is not None and self._dir_wd is not None:
            inotify.remove_watch(self.fd, self._dir_wd)
            self._dir_wd = None

    def _add(self, path: str, mask: int) -> int:
        return inotify.add_watch(self.fd, path, mask)

    def drain(self) -> int:
        """Consume pending events; return how many there were."""
        count = 0
        for wd, mask, _ in inotify.events(self.fd):
            count += 1
            if mask & IN_IGNORED and wd == self._file_wd:  # the watched file is gone for good: its number is
                self._file_inode = self._file_wd = None     # free, and a new file under the name may have it
        return count

    def close(self) -> None:
        os.close(self.fd)
