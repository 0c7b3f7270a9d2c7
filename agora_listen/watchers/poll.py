"""The poll watcher: a thread looks at the notify file every POLL_INTERVAL and wakes the loop through a pipe.

What `auto` falls back to where inotify cannot be had: the user's inotify
instances or watches are used up (fs.inotify.max_user_instances, 128 on many
systems, is shared by every program of the user: editors, file indexers,
other listeners). A listener that ended there left its seat deaf for as long
as its harness did not run it again. Selectable as `--watcher poll` too. Its
price: a wake up to POLL_INTERVAL late, and three stat(2) calls a tick.

A tick compares what it sees with the tick before, and rings when it moved:
- the file under the name (device, inode, size, mtime): an append, a rotation
  (the name holds another file), an unlink, a file emptied in place;
- the file it looked at last, through a descriptor it holds (size, mtime): the
  hub appends to a file that left the name until it makes the name again,
  and the follower reads on in it;
- the directory under its path (device, inode): deleted or moved away, and
  made again. Entries beside the file (the database, other seats' files)
  change nothing it compares, so they do not ring.

The first look is taken before the constructor returns, so a line appended
between the listener's first read and the watch rings at the next tick.
"""

from __future__ import annotations

import os
import threading

from agora_listen.watchers import drain_rings, wake_pipe

POLL_INTERVAL = 0.1  # seconds between looks: the wake's latency at worst, against 3 stat(2) calls a tick
JOIN_TIMEOUT = 2.0   # seconds to wait for the thread at close (a daemon thread: it dies with the process)


class Poll:
    """A thread that stats the file by name and rings a pipe when it changed."""

    def __init__(self, directory: str, path: str, interval: float = POLL_INTERVAL):
        if not os.path.isdir(directory) and not os.path.isdir(os.path.dirname(os.path.abspath(directory))):
            raise FileNotFoundError(2, f"no directory {directory}, nor its parent, to watch", directory)
        self.directory, self.path, self.interval = directory, path, interval
        self._held: int | None = None  # a descriptor on the file the name held at the last follow()
        self._held_inode: tuple[int, int] | None = None
        self._lock = threading.Lock()  # the thread's look never runs beside a follow() or a close()
        self.fd, self._ring_fd = wake_pipe()
        self._stop = threading.Event()
        self.follow()
        self._seen = self._look()
        self._thread = threading.Thread(target=self._run, name="agora-poll-watcher", daemon=True)
        self._thread.start()

    def follow(self) -> None:
        """Hold the file the name holds now: appends to one that left the name still ring until another is
        there (the hub writes on in it, the follower reads on)."""
        with self._lock:
            inode = _identity(self.path)
            if inode is None or (inode == self._held_inode and os.fstat(self._held).st_nlink):
                return  # (a held file unlinked, whose number the kernel gave to the new one, is let go)
            self._release()
            try:
                self._held = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOFOLLOW)
            except OSError:
                return  # gone again, or not a file to read: the next tick sees the name as it is
            self._held_inode = _identity_of(os.fstat(self._held))

    def drain(self) -> int:
        """Consume pending rings; return how many there were."""
        return drain_rings(self.fd)

    def ring(self) -> None:
        """Wake the loop once, as a change would."""
        with self._lock:
            if self._ring_fd >= 0:
                _ring(self._ring_fd)

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(JOIN_TIMEOUT)
        with self._lock:
            if self._ring_fd < 0:
                return
            os.close(self._ring_fd)
            os.close(self.fd)
            self._ring_fd = -1
            self._release()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                if self._ring_fd < 0:
                    return
                seen = self._look()
                if seen != self._seen:
                    self._seen = seen
                    _ring(self._ring_fd)

    def _look(self) -> tuple:
        held = None
        if self._held is not None:
            info = os.fstat(self._held)
            held = info.st_size, info.st_mtime_ns
        return _file_state(self.path), held, _identity(self.directory)

    def _release(self) -> None:
        if self._held is not None:
            os.close(self._held)
            self._held, self._held_inode = None, None


def _ring(fd: int) -> None:
    try:
        os.write(fd, b"\0")
    except BlockingIOError:
        pass  # the pipe is full: the loop has a wake waiting already


def _file_state(path: str) -> tuple | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


def _identity(path: str) -> tuple[int, int] | None:
    try:
        return _identity_of(os.stat(path))
    except OSError:
        return None


def _identity_of(info: os.stat_result) -> tuple[int, int]:
    return info.st_dev, info.st_ino
