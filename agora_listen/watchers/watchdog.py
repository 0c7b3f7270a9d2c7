"""The watchdog watcher: the watchdog package's native observer wakes a poll loop through a pipe.

For systems without inotify (FSEvents on macOS, kqueue on the BSDs), and
selectable on Linux, where watchdog itself uses inotify. The observer runs on
threads of its own; every event that names the notify file (written to,
closed after writing, created, moved to or from the name, deleted) writes a
byte into a pipe whose read end is the descriptor the listener polls.

The directory is watched, not recursively, rather than the file: one watch
that never has to move covers the name not existing yet and a rotation (the
file renamed to `.1` and created anew). follow() re-aims only when the
directory itself went: deleted (watchdog reports it, then stops that watch),
its parent is watched until the hub makes it again, then the new one. (Moved
away, it is not seen: watchdog's watch follows it and reports no move of its
own root.) The
price is that every change in the directory (the hub's database, when the
notify directory is the home) is an event for the observer thread to look
at and drop; the listener's own loop still wakes only for its file.

The watch must be live when start() returns, or a line appended between the
listener's first read and the watch would not ring until the next one:
watchdog sets inotify and kqueue watches before start() returns, and from
7.0 waits for the FSEvents stream to run (pyproject.toml asks for 7.0).

One loss watchdog does not report to handlers: when the kernel's inotify queue
overflows (IN_Q_OVERFLOW), events were dropped and watchdog discards the ones
it still held, then only logs a warning. An append whose events were lost
would ring no one until the next delivery, so every open watcher rings on that
warning (`_Overflow`, which says so on stderr) and the loop re-reads its file:
the loss is bounded by that one re-read.
"""

from __future__ import annotations

import logging
import os
import sys
import threading

from watchdog.events import (DirCreatedEvent, DirDeletedEvent, DirMovedEvent, FileClosedEvent, FileCreatedEvent,
                             FileDeletedEvent, FileModifiedEvent, FileMovedEvent, FileSystemEventHandler)
from watchdog.observers import Observer

from agora_listen.watchers import drain_rings, wake_pipe

# What can change what the name holds. Left out: opened, closed without writing,
# attributes: the listener's own reads and other processes' would wake it for nothing.
# The directory's own: deleted, and made again (seen from its parent).
WAKES = [FileCreatedEvent, FileModifiedEvent, FileMovedEvent, FileDeletedEvent, FileClosedEvent,
         DirCreatedEvent, DirMovedEvent, DirDeletedEvent]
_WAKE_TYPES = {"created", "modified", "moved", "deleted", "closed"}
JOIN_TIMEOUT = 2.0  # seconds to wait for the observer's threads at close (they are daemon threads)
OVERFLOW_LOGGER = "watchdog.observers.inotify_c"  # where watchdog's inotify reader says the kernel dropped events
OVERFLOW_MESSAGE = "Inotify queue overflowed"


class Watchdog:
    """A watchdog observer on the file's directory, ringing a pipe for events that name the file."""

    def __init__(self, directory: str, path: str):
        self.directory = directory
        self.name = os.path.basename(path)
        self._directory_name = os.path.basename(os.path.abspath(directory))
        self._observer = Observer()
        self._handler = _Handler(self)
        self._directory_inode = _inode(directory)
        self.fd, self._ring_fd = wake_pipe()
        self._lock = threading.Lock()  # close() never closes the pipe under a ring() in flight
        self._open = True
        try:
            _Overflow.install(self)
            self._observer.schedule(self._handler, directory, recursive=False, event_filter=WAKES)
            self._observer.start()
        except BaseException:
            self.close()
            raise

    def ring(self, event) -> None:
        """On the observer's thread: wake the loop if `event` names the file, or the directory itself."""
        if event.event_type not in _WAKE_TYPES:
            return
        # Names, not whole paths: FSEvents reports resolved paths (/private/var/... for /var/...),
        # and a watch that is not recursive only reports entries of the directory itself.
        name = self._directory_name if event.is_directory else self.name
        if name not in (os.path.basename(event.src_path), os.path.basename(event.dest_path or "")):
            return
        self.wake()

    def wake(self) -> None:
        """Wake the loop to read its file, whatever the event (or none: events were lost)."""
        with self._lock:
            if self._open:
                try:
                    os.write(self._ring_fd, b"\0")
                except BlockingIOError:
                    pass  # the pipe is full: the loop has a wake waiting already

    def follow(self) -> None:
        """Re-aim when the directory under the path is not the one watched (deleted, or made again): watch
        its parent while it is missing (FileNotFoundError with no parent either: the listener ends, saying
        so), then the new one, and wake the loop to read what landed before its watch."""
        inode = _inode(self.directory)
        if inode == self._directory_inode:
            return  # the directory watch follows the name through rotations
        self._observer.unschedule_all()
        self._directory_inode = inode
        if inode is None:
            parent = os.path.dirname(os.path.abspath(self.directory))
            self._observer.schedule(self._handler, parent, recursive=False, event_filter=WAKES)
            if _inode(self.directory) is not None:
                self.follow()  # it came back before its parent was watched
            return
        self._observer.schedule(self._handler, self.directory, recursive=False, event_filter=WAKES)
        self.wake()

    def drain(self) -> int:
        """Consume pending rings; return how many there were."""
        return drain_rings(self.fd)

    def close(self) -> None:
        _Overflow.watchers.discard(self)
        with self._lock:
            if not self._open:
                return
            self._open = False
            os.close(self._ring_fd)
            os.close(self.fd)
        # Stopping, watchdog's threads can log a benign race ("queue_events() called when the
        # thread is inactive") through logging's last resort, stderr: not the listener's words.
        for name in ("watchdog", "fsevents"):
            logging.getLogger(name).setLevel(logging.CRITICAL + 1)
        if self._observer.is_alive():
            self._observer.stop()
            self._observer.join(JOIN_TIMEOUT)


def _inode(directory: str) -> int | None:
    try:
        return os.stat(directory).st_ino
    except FileNotFoundError:
        return None


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: Watchdog):
        super().__init__()
        self.watcher = watcher

    def dispatch(self, event) -> None:
        self.watcher.ring(event)


class _Overflow(logging.Handler):
    """Rings every open watcher when watchdog logs that the kernel's inotify queue overflowed.

    The log record is the only sign watchdog gives of that loss, and it does not
    say which observer's queue overflowed: every open watcher rings (a wake too
    many reads nothing new; one too few leaves a delivery unrung).
    """

    watchers: set = set()  # the open Watchdog instances of this process
    _installed: "_Overflow | None" = None

    @classmethod
    def install(cls, watcher: Watchdog) -> None:
        cls.watchers.add(watcher)
        if cls._installed is None:
            cls._installed = cls()
            logger = logging.getLogger(OVERFLOW_LOGGER)
            # Its own level: close() silences the "watchdog" logger above it, which must not
            # silence this warning for a watcher opened later in the process (a re-arm).
            logger.setLevel(logging.WARNING)
            logger.addHandler(cls._installed)

    def emit(self, record: logging.LogRecord) -> None:
        if str(record.msg).startswith(OVERFLOW_MESSAGE):
            # Said, as watchdog's own warning was before this handler took it from logging's last resort.
            sys.stderr.write("agora listen: the kernel's inotify queue overflowed (events were lost); "
                             "re-reading the notify file\n")
            for watcher in list(self.watchers):
                watcher.wake()
