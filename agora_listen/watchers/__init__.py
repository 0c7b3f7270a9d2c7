"""How the listener learns that its notify file changed: one seam, two watchers.

A watcher follows one file by name in one directory and offers:

    fd         a descriptor that polls readable when the file may have changed
    drain()    consume whatever made `fd` readable
    follow()   re-aim after a change (inotify watches the file itself, which a rotation moves away)
    close()

`inotify` (watchers/inotify.py) is Linux inotify(7) through ctypes: no thread,
no import cost, and the default wherever it exists. `watchdog`
(watchers/watchdog.py) is the watchdog package's native observer (FSEvents on
macOS, kqueue on the BSDs, inotify on Linux) on a thread of its own, feeding a
pipe: for systems without inotify, and selectable on Linux. `poll`
(watchers/poll.py) stats the file on a thread every tenth of a second. `auto`
picks inotify where it is available, else watchdog; where inotify exists but
the user's instances or watches are used up, at the start or at a later re-aim
(`FallingBack`), it says so on stderr and polls.

Each watcher module is imported only when chosen: `agora listen --once` runs in
a loop, and importing watchdog's observer costs tens of milliseconds.
"""

from __future__ import annotations

import errno
import os
import sys

from agorad.surface.vocab import WATCHERS

# inotify_init1(2) EMFILE: the user's inotify instances are used up (fs.inotify.max_user_instances);
# inotify_add_watch(2) ENOSPC: the user's watches are (fs.inotify.max_user_watches).
USED_UP = {errno.EMFILE: "max_user_instances", errno.ENOSPC: "max_user_watches"}


def choose(name: str) -> str:
    """The watcher `name` stands for: `auto` is inotify where it is available, else watchdog."""
    if name not in WATCHERS:
        raise ValueError(f"unknown watcher {name!r}; one of {', '.join(WATCHERS)}")
    if name != "auto":
        return name
    from agora_listen.watchers import inotify

    return "inotify" if inotify.available() else "watchdog"


def open_watcher(name: str, directory: str, path: str):
    """Start watching `path` (a file in `directory`, which may not exist yet) with the watcher `name`."""
    chosen = choose(name)
    if chosen == "inotify":
        from agora_listen.watchers.inotify import Inotify

        try:
            watch = Inotify(directory, path)
        except OSError as exc:
            if name != "auto" or exc.errno not in USED_UP:
                raise
            _say_polling(exc)  # ended here, a listener left its seat deaf (a suite's listeners used them up)
        else:
            return watch if name != "auto" else FallingBack(watch)
    elif chosen == "watchdog":
        from agora_listen.watchers.watchdog import Watchdog

        return Watchdog(directory, path)
    from agora_listen.watchers.poll import Poll

    return Poll(directory, path)


class FallingBack:
    """`auto`'s inotify watcher, which polls from the first re-aim that finds the user's watches used up.

    A watch is added again after a rotation, a new file under the name, or a directory made again
    (`follow`), and the user's watches are shared with every program of theirs: one failing there ended
    the listener, and its seat was deaf until its harness ran it again. The poll watcher's pipe is put
    under the inotify descriptor's number (dup2), which closes the inotify instance and leaves the
    caller's poller registered on a descriptor that now rings for the poll watcher.
    """

    def __init__(self, watch):
        self.watch, self.fd, self.polling = watch, watch.fd, False

    def drain(self) -> int:
        return self.watch.drain()

    def follow(self) -> None:
        try:
            self.watch.follow()
        except OSError as exc:
            if exc.errno not in USED_UP or self.polling:
                raise
            self._poll_instead(exc)

    def _poll_instead(self, exc: OSError) -> None:
        from agora_listen.watchers.poll import Poll

        poll = Poll(self.watch.directory, self.watch.path)  # first: if it cannot start, the listener ends, not polls
        _say_polling(exc)
        os.dup2(poll.fd, self.fd, inheritable=False)  # the inotify instance closes with its last descriptor
        os.close(poll.fd)
        poll.fd, self.watch, self.polling = self.fd, poll, True
        poll.ring()  # what changed while no watch was set is read at the next turn

    def close(self) -> None:
        self.watch.close()


def _say_polling(exc: OSError) -> None:
    from agora_listen.watchers.poll import POLL_INTERVAL

    limit = f"fs.inotify.{USED_UP[exc.errno]}"
    print(f"agora: {exc.strerror or exc}: this user's inotify {limit.rsplit('_', 1)[1]} are used up ({limit}); "
          f"watching the notify file by polling instead (a wake up to {POLL_INTERVAL:g} s late). To watch with "
          "inotify again, "
          f"raise the limit (sysctl -w {limit}=N, as root) or end programs that hold them", file=sys.stderr)


def drain_rings(fd: int) -> int:
    """Consume the bytes a thread rang into the wake pipe read at `fd`; how many there were."""
    count = 0
    while True:
        try:
            data = os.read(fd, 4096)
        except BlockingIOError:
            return count
        if not data:
            return count
        count += len(data)


def wake_pipe() -> tuple[int, int]:
    """A pipe whose ends are non-blocking and close-on-exec, to wake a poll loop.

    pipe2(2) sets both flags in the call where it exists (Linux, FreeBSD);
    macOS has no pipe2, so there it is pipe(2), which Python already makes
    close-on-exec (PEP 446), then O_NONBLOCK through fcntl(2).
    """
    if hasattr(os, "pipe2"):
        return os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    os.set_blocking(write_fd, False)
    return read_fd, write_fd
