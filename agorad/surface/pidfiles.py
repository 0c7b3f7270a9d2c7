"""Pidfiles: decimal pid on the first line, `key=value` facts after it (agora-files(5) "PIDFILES").

A pidfile is live when its pid names a running process that started when the writer did (the
`started` fact: a pid is handed out again once its process is gone, and a driver killed with
SIGKILL leaves its pidfile behind); a listener's is also stale when it was not touched for twice
its heartbeat. Paths may be str or Path: the stop hook checks the seat's driver pidfile at every
turn's end, by a name made without pathlib (filenames.py).
"""

from __future__ import annotations

import os
import time

from agorad.surface.filenames import exists, read_regular_text, write_private

LIVE, STALE = "live", "stale"


def write_pidfile(path: str | os.PathLike, **facts) -> None:
    pid = os.getpid()
    started = start_ticks(pid)
    if started is not None:
        facts = {"started": started, **facts}
    write_private(path, f"{pid}\n" + "".join(f"{k}={v}\n" for k, v in facts.items()))


def start_ticks(pid: int) -> str | None:
    """When process `pid` started, in clock ticks after boot (proc(5): /proc/PID/stat, field 22), as text;
    None where it cannot be read (no such process, no /proc). Two processes that had one pid differ here."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return stat[stat.rindex(b")") + 2:].split()[19].decode()  # fields from the 3rd on, after the name
    except (OSError, ValueError, IndexError):
        return None


def read_pidfile(path: str | os.PathLike) -> tuple[int, dict] | None:
    """(pid, facts), or None when the file is missing or does not start with a pid."""
    try:
        first, *rest = read_regular_text(path).splitlines()
        pid = int(first)
    except (OSError, ValueError):
        return None
    facts = dict(line.split("=", 1) for line in rest if "=" in line)
    return pid, facts


def process_alive(pid: int) -> bool:
    import psutil  # only status paths pay for it

    if pid <= 0:  # 0 and negative "pids" name process groups, never one process
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return psutil.pid_exists(pid)


def pidfile_state(path: str | os.PathLike) -> str | None:
    """LIVE, STALE, or None when there is no pidfile."""
    found = read_pidfile(path)
    if found is None:
        return STALE if exists(path) else None
    pid, facts = found
    if not process_alive(pid):
        return STALE
    started = facts.get("started")
    if started is not None and start_ticks(pid) not in (None, started):
        return STALE  # the pid names a later process: the writer is gone
    heartbeat = _float(facts.get("heartbeat"))
    try:
        silent = time.time() - os.stat(path).st_mtime
    except FileNotFoundError:
        return None  # removed while we looked
    if heartbeat and silent > 2 * heartbeat:
        return STALE
    return LIVE


def open_pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when process `pid` exits, and names that process only, however
    its pid is reused (pidfd_open(2), Linux 5.3+); None on other systems, an older kernel (ENOSYS), or a
    process already gone. Callers that get None poll instead."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None or pid <= 0:
        return None
    try:
        return opener(pid)
    except OSError:
        return None


def remove_if_ours(path: str | os.PathLike) -> None:
    found = read_pidfile(path)
    if found and found[0] == os.getpid():
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def _float(text) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None
