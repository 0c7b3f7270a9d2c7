"""Linux inotify(7) through ctypes: what the listener's watcher and the hub's notify-name watch share.

No thread and no import beyond ctypes: `agora listen --once` imports this on
every run. Where the C library has no inotify_init1 (macOS, the BSDs),
`available()` says so and nothing else here may be called.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys

IN_MODIFY = 0x002
IN_ATTRIB = 0x004
IN_CLOSE_WRITE = 0x008
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000   # the kernel's queue filled: events were dropped
IN_IGNORED = 0x8000      # the watch is gone (its directory deleted, or removed)
IN_ONLYDIR = 0x01000000

_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then `len` bytes of name


def available() -> bool:
    """Whether this system has inotify: Linux, whose C library has inotify_init1."""
    return sys.platform.startswith("linux") and hasattr(libc(), "inotify_init1")


_LOADED: dict = {}  # a cache by hand: functools loads collections, half a MiB of an armed listener (client.py)


def libc():
    """The C library, loaded once."""
    if "libc" not in _LOADED:
        _LOADED["libc"] = ctypes.CDLL(None, use_errno=True)
    return _LOADED["libc"]


def init() -> int:
    """A new non-blocking, close-on-exec inotify descriptor."""
    fd = libc().inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    if fd < 0:
        error = ctypes.get_errno()
        raise OSError(error, f"inotify_init1: {os.strerror(error)}")
    return fd


def add_watch(fd: int, path: str, mask: int) -> int:
    """Watch `path` on the inotify descriptor `fd`; the watch descriptor."""
    wd = libc().inotify_add_watch(fd, os.fsencode(path), mask)
    if wd < 0:
        error = ctypes.get_errno()
        raise OSError(error, f"watching {path}: {os.strerror(error)}", path)
    return wd


def remove_watch(fd: int, wd: int) -> None:
    libc().inotify_rm_watch(fd, wd)


def events(fd: int):
    """Every pending event on the non-blocking descriptor `fd`, as (wd, mask, name); the name is the
    file's within a watched directory, as text (surrogate-escaped like os.fsdecode), "" for none."""
    while True:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return
        yield from parse(data)


def parse(data: bytes):
    """The events in one read of an inotify descriptor, as `events` yields them."""
    offset = 0
    while offset + _EVENT.size <= len(data):
        wd, mask, _, length = _EVENT.unpack_from(data, offset)
        start = offset + _EVENT.size
        offset = start + length
        yield wd, mask, os.fsdecode(data[start:offset].rstrip(b"\0"))
