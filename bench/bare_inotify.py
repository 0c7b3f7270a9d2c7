"""The bare inotify reader: the least a process can do to turn an appended line into a stdout line.

inotify_init1 through ctypes, one IN_MODIFY watch on a directory, then a
blocking read(2) on the inotify fd; on each event it reads what was appended
to FILE (from where it last stopped) and writes every complete line to
stdout, flushed. No poll loop, no parsing, no debounce, no bookkeeping: the
listener's send-to-wake latency divided by this reader's is the share of the
raw limit it keeps. It prints `ready` once the watch is set.

Run as a script (stdlib only):  python bench/bare_inotify.py DIR FILE
It ends on SIGTERM (the default action).
"""

from __future__ import annotations

import ctypes
import os
import sys

IN_MODIFY = 0x002
IN_ONLYDIR = 0x01000000
MAX_EVENTS = 10_000_000  # a bound on the loop, far above what a run reaches


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write("usage: python bench/bare_inotify.py DIR FILE\n")
        return 2
    directory, path = argv
    libc = ctypes.CDLL(None, use_errno=True)
    watch = libc.inotify_init1(os.O_CLOEXEC)  # blocking: read(2) sleeps until an event
    if watch < 0 or libc.inotify_add_watch(watch, os.fsencode(directory), IN_MODIFY | IN_ONLYDIR) < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"inotify on {directory}: {os.strerror(errno)}")
    source = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    os.lseek(source, 0, os.SEEK_END)
    out = sys.stdout
    out.write("ready\n")
    out.flush()
    partial = b""
    for _ in range(MAX_EVENTS):
        os.read(watch, 4096)  # one or more events; which file does not matter here
        data = partial + os.read(source, 1 << 16)
        *lines, partial = data.split(b"\n")
        if lines:
            out.write("".join(line.decode() + "\n" for line in lines))
            out.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
