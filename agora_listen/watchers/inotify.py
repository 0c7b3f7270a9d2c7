"""The inotify watcher: Linux inotify(7) through ctypes wakes a poll loop when a notify file grows or is replaced.

The default wherever inotify exists. Why not watchdog there: importing its
observer costs tens of milliseconds and it runs threads, while
`agora listen --once` runs in a loop where start-up time is the budget
(inotify(7) is the kernel interface watchdog itself uses on Linux).

In steady state the file is watched (appends, and its own rename at a
rotation or a seat's rename, or its unlink at a seat's removal), and the
directory only for itself: moved away or deleted (the hub makes a notify
directory that went under it again, runtime/notify.py). The directory's entries
are watched only while the name is missing, until the hub creates the file
again: a watch on them would wake every listener whenever anything in the home
changes (the database, other seats' files). While the directory itself is
missing, its parent is watched for it to come back.
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
WATCH_DIR_ITSELF = IN_MOVE_SELF | IN_DELETE_SELF | IN_ONLYDIR  # no entry's event: the home is busy
WATCH_DIR_ENTRIES = WATCH_DIR_ITSELF | IN_CREATE | IN_MOVED_TO  # while the name holds no file
WATCH_PARENT = IN_CREATE | IN_MOVED_TO | IN_ONLYDIR  # while the directory is missing


class Inotify:
    """A non-blocking inotify instance following one file by name."""

    def __init__(self, directory: str, path: str):
        if not available():
            raise OSError(errno.ENOSYS, f"inotify is not available on this system ({sys.platform}); "
                          "use --watcher watchdog (or auto)")
        self.directory, self.path = directory, path
        self.fd = inotify.init()
        self._dir_wd: int | None = None
        self._dir_inode: int | None = None
        self._dir_mask = 0
        self._parent_wd: int | None = None
        self._file_inode: int | None = None
        self._file_wd: int | None = None
        try:
            self.follow()
        except OSError:
            os.close(self.fd)
            raise

    def follow(self) -> None:
        """Watch whatever file the name holds now, and the directory there now; the directory's entries only
        while the name holds no file, and its parent only while the directory is missing."""
        try:
            inode = os.stat(self.path).st_ino
        except FileNotFoundError:
            inode = None
        if inode is None:
            # The file left the name. Its watch stays: the hub may append to it until it makes the name again
            # (with no watch of its own directory, not at all), and the follower reads on in it. The next file
            # is watched whatever its number: ext4 gives a freed one to the next new file.
            self._file_inode = None
        elif inode != self._file_inode:
            self._forget_file()  # another file under the name: the follower reads the old one to its end first
            try:
                self._file_wd = self._add(self.path, WATCH_FILE)
                self._file_inode = inode
            except FileNotFoundError:
                inode = None  # gone again between the stat and the watch
        aimed = self._aim_at_directory(WATCH_DIR_ENTRIES if inode is None else WATCH_DIR_ITSELF)
        if aimed is None:
            self._aim_at_parent()
        elif aimed and inode is None and os.path.exists(self.path):
            self.follow()  # the file appeared before the directory's entries were watched

    def _forget_file(self) -> None:
        if self._file_wd is not None:
            inotify.remove_watch(self.fd, self._file_wd)  # (EINVAL when it went with its file: ignored)
        self._file_wd = self._file_inode = None

    def _aim_at_directory(self, mask: int) -> bool | None:
        """Watch the directory under its path with `mask`: True when the watch was set now, False when it
        was so already, None when there is no directory. A directory moved away, or deleted and made
        again, is another inode: the watch of the old one is given up."""
        try:
            inode = os.stat(self.directory).st_ino
        except FileNotFoundError:
            inode = None
        if inode != self._dir_inode and self._dir_wd is not None:
            inotify.remove_watch(self.fd, self._dir_wd)  # (EINVAL when it went with its directory: ignored)
            self._dir_wd = self._dir_inode = None
        if inode is None:
            return None
        if self._dir_wd is None or mask != self._dir_mask:
            try:
                self._dir_wd = self._add(self.directory, mask)
            except FileNotFoundError:
                return None  # gone again between the stat and the watch
            self._dir_inode, self._dir_mask = inode, mask
            if self._parent_wd is not None:
                inotify.remove_watch(self.fd, self._parent_wd)
                self._parent_wd = None
            return True
        return False

    def _aim_at_parent(self) -> None:
        """The directory is missing: watch its parent for it to come back (the hub makes it again). With
        no parent either, FileNotFoundError: the listener ends, saying so."""
        if self._parent_wd is None:
            self._parent_wd = self._add(os.path.dirname(os.path.abspath(self.directory)), WATCH_PARENT)
            if os.path.isdir(self.directory):
                self.follow()  # it came back before the parent was watched

    def _add(self, path: str, mask: int) -> int:
        return inotify.add_watch(self.fd, path, mask)

    def drain(self) -> int:
        """Consume pending events; return how many there were."""
        count = 0
        for wd, mask, _ in inotify.events(self.fd):
            count += 1
            if mask & IN_IGNORED:  # a watch gone for good (its file or directory deleted): watched anew
                if wd == self._file_wd:  # its number is free, and a new file under the name may have it
                    self._file_inode = self._file_wd = None
                elif wd == self._dir_wd:
                    self._dir_inode = self._dir_wd = None
                elif wd == self._parent_wd:
                    self._parent_wd = None
        return count

    def close(self) -> None:
        os.close(self.fd)
