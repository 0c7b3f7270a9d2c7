"""Pidfiles: decimal pid on the first line, `key=value` facts after it (agora-files(5) "PIDFILES").

A pidfile is live when its pid names a running process; a listener's is also
stale when it was not touched for twice its heartbeat.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from agorad.surface.paths import write_private

LIVE, STALE = "live", "stale"


def write_pidfile(path: Path, **facts) -> None:
    write_private(path, f"{os.getpid()}\n" + "".join(f"{k}={v}\n" for k, v in facts.items()))


def read_pidfile(path: Path) -> tuple[int, dict] | None:
    """(pid, facts), or None when the file is missing or does not start with a pid."""
    try:
        first, *rest = path.read_text().splitlines()
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


def pidfile_state(path: Path) -> str | None:
    """LIVE, STALE, or None when there is no pidfile."""
    found = read_pidfile(path)
    if found is None:
        return STALE if path.exists() else None
    pid, facts = found
    if not process_alive(pid):
        return STALE
    heartbeat = _float(facts.get("heartbeat"))
    try:
        silent = time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return None  # removed while we looked
    if heartbeat and silent > 2 * heartbeat:
        return STALE
    return LIVE


def remove_if_ours(path: Path) -> None:
    found = read_pidfile(path)
    if found and found[0] == os.getpid():
        path.unlink(missing_ok=True)


def _float(text) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None
