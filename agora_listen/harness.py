"""Is the harness that armed this listener still there to hear a wake?

A hook's `agora listen --once` runs in its own process group, so when the
session that armed it ends, nothing kills it: it would take the next wake,
print it to nobody and record it as rung, and the seat's next listener would
stay silent. So the listener watches for its harness going away, and the poll
loop it already sleeps in learns of it without polling:

- standard output: a pipe whose reader is gone reports POLLERR, a socket or a
  terminal that hung up POLLHUP (poll(2) reports both without being asked);
  a regular file or /dev/null never does. This is the signal when the hook
  runs under `/bin/sh -c`, whose shell may outlive the session.
- the parent (--once only): a pidfd (Linux >= 5.3) is readable once the
  process exits. Elsewhere, or if pidfd_open fails, the parent is compared
  with the original at each of the loop's existing wake-ups (heartbeat,
  file events), which is later but costs no extra wake-up.
"""

from __future__ import annotations

import os
import select
import sys

from agorad.surface.pidfiles import open_pidfd

_HANGUP = select.POLLERR | select.POLLHUP | select.POLLNVAL


class Harness:
    def __init__(self, watch_parent: bool):
        self.stdout_fd = _stdout_fd()
        self.parent = os.getppid() if watch_parent else None
        # pid 1: already orphaned (gone() says so), nothing to watch
        self.pidfd = open_pidfd(self.parent) if self.parent and self.parent > 1 else None

    def fds(self) -> list[tuple[int, int]]:
        """(fd, events) to register with the loop's poll: a wake from either means "look at gone()"."""
        fds = [(self.stdout_fd, 0)] if self.stdout_fd is not None else []  # 0: only errors and hangups
        if self.pidfd is not None:
            fds.append((self.pidfd, select.POLLIN))
        return fds

    def gone(self) -> str | None:
        """Why the harness is gone ("stdout closed", "parent exited"), or None while it is there."""
        if self.stdout_fd is not None and _ready(self.stdout_fd, 0) & _HANGUP:
            return "stdout closed"
        if self.parent is not None:
            if self.pidfd is not None and _ready(self.pidfd, select.POLLIN):
                return "parent exited"
            if os.getppid() != self.parent:  # reparented: the parent exited (also catches a pidfd race)
                return "parent exited"
        return None

    def close(self) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


def _stdout_fd() -> int | None:
    try:
        return sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):  # no stdout at all: nothing to hear a wake, nothing to watch
        return None


def _ready(fd: int, events: int) -> int:
    """The events poll(2) reports on `fd` right now (without waiting)."""
    poller = select.poll()
    poller.register(fd, events)
    found = poller.poll(0)
    return found[0][1] if found else 0


class Gone(Exception):
    """The harness is gone: gone() said so, or writing to it failed (EPIPE). The text says which."""


def write(stream, text: str) -> None:
    """Write and flush `text`; a reader gone raises Gone (and the stream is silenced, see below)."""
    try:
        stream.write(text)
        stream.flush()
    except (BrokenPipeError, ConnectionResetError):
        _silence(stream)
        raise Gone(f"{'stdout' if stream is sys.stdout else 'stderr'} closed") from None


def _silence(stream) -> None:
    """Point the stream's descriptor at /dev/null: what is left in its buffer then flushes there at exit,
    instead of failing again (Python would print the error and exit 120)."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, stream.fileno())
    finally:
        os.close(null)
