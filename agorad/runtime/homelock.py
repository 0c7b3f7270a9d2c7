"""The home's hub lock, `agorad.lock`: one hub per home, and no restore under a running one.

An flock, not the pidfile: the kernel drops it when its holder dies however it dies, so a
stale pidfile never blocks a start, and a live hub always holds it.
"""

from __future__ import annotations

import fcntl
import os
import socket

from agorad.surface.filenames import made_private, read_regular_text
from agorad.surface.paths import FILE_MODE, Home


def take(home: Home) -> int | None:
    """Hold the home's lock and return its descriptor (closing it releases the lock); None while
    another process (a running hub) holds it."""
    fd = os.open(home.lockfile, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
    made_private(fd)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def holder(home: Home) -> int | None:
    """The pid the home's pidfile names (the hub holding the lock, when one does)."""
    try:
        return int(read_regular_text(home.pidfile).split("\n", 1)[0])
    except (OSError, ValueError):
        return None


def socket_answers(home: Home) -> bool:
    """Whether something accepts connections on the home's socket (a hub that lost its lock file)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(home.socket))
        return True
    except OSError:
        return False
    finally:
        probe.close()
