"""The home's hub lock, `agorad.lock`: one hub per home, and no restore under a running one.

An flock, not the pidfile: the kernel drops it when its holder dies however it dies, so a
stale pidfile never blocks a start, and a live hub always holds it.
"""

from __future__ import annotations

import fcntl
import os
import socket

from agorad.surface.filenames import made_private
from agorad.surface.paths import FILE_MODE, Home
from agorad.surface.pidfiles import process_alive, read_pidfile, start_ticks


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
    """The pid the home's pidfile names, whether or not that process runs."""
    found = read_pidfile(home.pidfile)
    return found[0] if found else None


def running_hub(home: Home) -> int | None:
    """The pid of the hub the home's pidfile names, if that process still runs (the hub holding the lock,
    when one does): the lock is also held by a hub starting or stopping, or an `agora restore` under way,
    and a pidfile a killed hub left names nobody."""
    found = read_pidfile(home.pidfile)
    if found is None or not process_alive(found[0]):
        return None
    pid, facts = found
    started = facts.get("started")
    return None if started is not None and start_ticks(pid) not in (None, started) else pid


def held_elsewhere(home: Home) -> str:
    """What holds the lock when no running hub is named: said as such, so nobody looks for a hub that is not there."""
    return (f"{home.lockfile} is held by another process (a hub starting or stopping, or an agora restore under "
            "way); try again once it is done")


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
