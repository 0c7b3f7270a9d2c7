"""Where the notify files live and how many of them the hub keeps open.

The notify directory must be the hub user's own: a shared one would let other users read the seats'
titles and plant forged wakes. The hub keeps a descriptor open per notify file it writes, up to half its
descriptor limit, which it raises at start (bench/README.md "Fan-out": reopening each file by name cost a
1,000-member post 18 us a member, not 6).
"""

from __future__ import annotations

import os
import resource
import stat
from pathlib import Path

MIN_OPEN_FILES = 128     # notify descriptors kept open at least, whatever RLIMIT_NOFILE says
MAX_OPEN_FILES = 32_768  # ... and at most: a channel this large reopens files on each post


def notify_files_allowed() -> int:
    """How many notify files the hub keeps open: half its descriptor limit (the rest is for
    connections, the database and logs). With fewer open than a channel has members, every
    post to it reopened each file by name (a post to 1,000 members: 18 us a member, not 6)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return MAX_OPEN_FILES if soft == resource.RLIM_INFINITY else min(MAX_OPEN_FILES, soft // 2)


def raise_descriptor_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard one (up to what the notify files can use twice over):
    the hub's loop is epoll, so no select() limit applies. Return the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 2 * MAX_OPEN_FILES if hard == resource.RLIM_INFINITY else min(hard, 2 * MAX_OPEN_FILES)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError):
            pass  # kept as it was: the notify files then share the lower limit
    return soft


def shared_dir_problem(directory: Path) -> str | None:
    """Why the hub will not keep its notify files in `directory`, or None: another user's directory, or a
    sticky one (/tmp, /dev/shm), is shared, and a file planted there would carry the seats' titles out and
    forged wakes in. A missing one is made 0700; one of ours that is merely loose is tightened."""
    try:
        link = os.lstat(directory)
        info = os.stat(directory)  # a link to a directory of yours is yours to use, if the link is yours too
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(link.st_mode) and link.st_uid != os.geteuid():
        return f"the notify directory {directory} is a symbolic link another user owns; give a directory of your own"
    if not stat.S_ISDIR(info.st_mode):
        return f"{directory} is not a directory"
    if info.st_uid != os.geteuid() or info.st_mode & 0o1000:
        owner = "another user's" if info.st_uid != os.geteuid() else "sticky (shared, as /tmp is)"
        return (f"the notify directory {directory} is {owner} (mode {oct(info.st_mode & 0o7777)}): other users "
                f"could plant or read notify files there; give --notify-dir a directory of your own, such as "
                f"{directory}/agora-notify (made 0700)")
    return None


def tighten(directory: Path) -> None:
    """Make our own notify directory 0700 (shared_dir_problem has refused a shared one before start)."""
    if os.stat(directory).st_mode & 0o077:
        os.chmod(directory, 0o700)
