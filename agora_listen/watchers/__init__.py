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
pipe: for systems without inotify, and selectable on Linux. `auto` picks
inotify where it is available, else watchdog.

Each watcher module is imported only when chosen: `agora listen --once` runs in
a loop, and importing watchdog's observer costs tens of milliseconds.
"""

from __future__ import annotations

import os

from agorad.surface.vocab import WATCHERS


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
    if choose(name) == "inotify":
        from agora_listen.watchers.inotify import Inotify

        return Inotify(directory, path)
    from agora_listen.watchers.watchdog import Watchdog

    return Watchdog(directory, path)


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
