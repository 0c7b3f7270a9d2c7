"""Follow a notify file by name, like `tail -F`, resumable across processes and rotations.

Position is (inode, byte offset, last delivery id). The offset makes resuming
cheap; the id makes it exact: a line whose id was already seen is skipped, so
re-reading after a rotation or a corrupt offset can add wakes but never lose one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from agorad.notifyfile import last_id_in

_CHUNK = 1 << 16


class Follower:
    def __init__(self, path: Path):
        self.path = path
        self.rotated = path.with_name(path.name + ".1")
        self.fd: int | None = None
        self.inode: int | None = None
        self.pos = 0
        self.partial = b""
        self.last_id = 0
        self.missed = 0  # deliveries whose lines were rotated away before they were read
        self.pending: list[dict] = []  # lines read while arming (from .1 after a rotation)

    # --- arming ---------------------------------------------------------------

    def arm(self, offset) -> None:
        """Start from a saved offset: a dict, None (first arm: at the end) or "corrupt" (from the start)."""
        if offset is None:
            if self._open(self.path):
                self.pos = os.lseek(self.fd, 0, os.SEEK_END)
                self.last_id = _last_id(self.path)
            return
        if offset == "corrupt":
            self._open(self.path)
            return
        self.last_id = offset.get("id", 0)
        if _inode(self.path) == offset.get("inode"):
            self._open(self.path)
            self.pos = offset["pos"] if offset.get("pos", 0) <= os.fstat(self.fd).st_size else 0
            return
        # Rotated since: finish the old file (now .1) from where we were, or all of it if unknown.
        start = offset.get("pos", 0) if _inode(self.rotated) == offset.get("inode") else 0
        if self._open(self.rotated):
            self.pos = start if start <= os.fstat(self.fd).st_size else 0
            self.pending = self._read_lines()
            self._close()
        self._open(self.path)

    # --- reading --------------------------------------------------------------

    def read_new(self) -> list[dict]:
        """Every complete new line (as dicts), following a rotation if the name moved on.

        Lines rotated out of both generations before they were read cannot be
        returned; their number is added to `missed`, so they still ring.
        """
        lines, self.pending = self.pending, []
        if self.fd is None:
            self._open(self.path)
        if self.fd is not None:
            lines += self._read_lines()
            current = _inode(self.path)
            if current is not None and current != self.inode:
                lines += self._read_lines()  # drain the old file, then follow the name
                self._close()
                self._open(self.path)
                lines += self._read_lines()
        return lines

    def offset(self) -> dict:
        """Where the next instance should resume: the start of any incomplete line."""
        return {"inode": self.inode, "pos": self.pos - len(self.partial), "id": self.last_id}

    def _read_lines(self) -> list[dict]:
        data = bytearray()
        while True:
            chunk = os.pread(self.fd, _CHUNK, self.pos)
            if not chunk:
                break
            data += chunk
            self.pos += len(chunk)
        if not data:
            return []
        *complete, self.partial = (self.partial + bytes(data)).split(b"\n")
        found = []
        for raw in complete:
            line = _parse(raw)
            if line is not None and line["id"] > self.last_id:
                if self.last_id and line["id"] > self.last_id + 1:
                    self.missed += line["id"] - self.last_id - 1  # ids are gapless per agent
                self.last_id = line["id"]
                found.append(line)
        return found

    def _open(self, path: Path) -> bool:
        self._close()
        try:
            self.fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return False
        self.inode = os.fstat(self.fd).st_ino
        self.pos, self.partial = 0, b""
        return True

    def _close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def close(self) -> None:
        self._close()


def _inode(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except FileNotFoundError:
        return None


def _parse(raw: bytes) -> dict | None:
    try:
        line = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(line, dict) or not isinstance(line.get("id"), int) or isinstance(line.get("id"), bool):
        return None
    if not isinstance(line.get("channel"), str):
        return None
    line["flags"] = [f for f in line.get("flags", []) if isinstance(f, str)] if isinstance(line.get("flags"), list) else []
    return line


def _last_id(path: Path) -> int:
    return last_id_in(path) or 0
