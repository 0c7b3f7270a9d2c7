"""A turn's process tree: its leader (the harness), and every descendant that can be found.

Signalling the leader's process group is not enough. A descendant that called setsid() has left the
group, and once its parent exits it is re-parented (to init or a subreaper) and is no longer the
leader's descendant at all. So the tree is found two ways, and signals go to the group and to every
process found:

- the leader's descendants, listed with psutil while the leader lives (`collect`), which is the
  only time the parent links still lead to them;
- every process of ours whose environment carries the turn's token (`sweep`): run_turn puts it in
  the leader's environment and children inherit it, so a double-forked daemon whose parent exited
  between two collections is still found. Only our own processes' environments are readable;
- in the driver, which is a child subreaper (`become_subreaper`), its own children other than the
  leader: an orphan of the turn re-parents to the driver, not to init, so one that also cleared its
  environment (`env -i setsid ...`, a review's) is found too.

The leader is never reaped here: an unreaped leader keeps its pid, and so its process-group id,
from being reused, which makes `killpg` on it safe until run_turn reaps it last.
"""

from __future__ import annotations

import os

import psutil

from agorad.surface.vocab import TURN_ENV

# The environment variable that marks every process a turn started (see `sweep`).
TURN_TOKEN = TURN_ENV


class Tree:
    """The leader `pid` (unreaped, in a session and group of its own) and the descendants found."""

    def __init__(self, pid: int, token: str):
        self.pid = pid
        self.token = token
        self.leader = psutil.Process(pid)
        self.found: dict[int, psutil.Process] = {}

    def leader_exited(self) -> bool:
        """The leader has exited (a zombie until it is reaped)."""
        try:
            return self.leader.status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    def collect(self) -> None:
        """Add the leader's current descendants: while it lives, the parent links still lead to them."""
        try:
            self._add(self.leader.children(recursive=True))
        except psutil.Error:
            pass
        self._add(strays(self.pid))

    def sweep(self) -> None:
        """Add every process carrying this turn's token, wherever it was re-parented to."""
        self._add(marked(self.token) + strays(self.pid))

    def end(self, sig: int) -> None:
        """Find what is there now, then send it `sig`: the group first, then each process found."""
        if not self.leader_exited():
            self.collect()
        self.sweep()
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        for process in list(self.found.values()):
            try:
                process.send_signal(sig)  # psutil refuses a pid that now names another process
            except psutil.Error:
                pass

    def descendants_alive(self) -> bool:
        """Any descendant found is still running (zombies and the gone are forgotten)."""
        self.found = {pid: p for pid, p in self.found.items() if _running(p)}
        return bool(self.found)

    def _add(self, processes) -> None:
        for process in processes:
            if process.pid == self.pid or process.pid == os.getpid():
                continue
            known = self.found.get(process.pid)
            if known is None or not known.is_running():  # a pid reused since: keep the newer process
                self.found[process.pid] = process


_PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
_subreaper = False  # this process is a child subreaper: every child but a turn's leader is a turn's leftover


def prctl():
    """The C library's prctl(2) through ctypes (Linux), or None where there is none."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def become_subreaper() -> bool:
    """Make this process (the driver, which runs nothing but turns) a child subreaper (prctl, Linux 3.4):
    what its turns leave behind re-parents to it, where `strays` finds it. False where it cannot be."""
    global _subreaper
    call = prctl()
    _subreaper = call is not None and call(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    return _subreaper


def strays(leader: int) -> list[psutil.Process]:
    """The subreaper's children and their descendants other than the turn's leader `leader`: orphans of
    the turn (none unless `become_subreaper`: a test's process has children of its own)."""
    if not _subreaper:
        return []
    try:
        return [p for p in psutil.Process().children(recursive=True) if p.pid != leader]
    except psutil.Error:
        return []


def reap_strays(leader: int) -> None:
    """Reap the subreaper's children that have exited (an orphan that ends becomes the driver's zombie);
    only zombies, by pid, so no live child's status is taken from whoever waits for it, and never the
    turn's `leader`, whose status is its Popen's."""
    for process in strays(leader):
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                os.waitpid(process.pid, os.WNOHANG)
        except (psutil.Error, ChildProcessError):
            pass


def marked(token: str) -> list[psutil.Process]:
    """Every process of ours carrying `token` in its environment (TURN_TOKEN)."""
    return [p for p in psutil.process_iter(["environ"]) if (p.info["environ"] or {}).get(TURN_TOKEN) == token]


def end_marked(token: str) -> int:
    """SIGKILL every process carrying `token`: what is left of the turn of a driver that died mid-turn (its
    turn had no one to end it at its limit). How many there were."""
    found = [p for p in marked(token) if p.pid != os.getpid()]
    for process in found:
        try:
            process.kill()
        except psutil.Error:
            pass
    return len(found)


def _running(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
