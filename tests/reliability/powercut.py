"""A VFS that can lose power: for tests only.

Reads and writes go through to the real files, but every write and truncate
since a file's last xSync is remembered with the bytes it replaced. `cut()`
puts each file back as it stood at its last sync (optionally keeping the
oldest un-synced writes, in order, and tearing the last sector of the next
one), which is what a disk that honours fsync and nothing more may hold after
power loss. The database is then reopened with the normal VFS, which
recovers from the -wal as after a real cut.

The power can also fail in the middle of SQLite's work: `fail_after(n)`
makes the n-th write, truncate or sync the last one that reaches the disk.
From then on the process is as good as dead: writes, syncs, truncates and
deletes do nothing, but SQLite is told they worked, so whatever the caller
sees afterwards (a COMMIT returning) must not count as acknowledged; callers
check `powered` after each step.

apsw's Python VFS files have no shared-memory methods (xShm*), so SQLite runs
WAL on them only in exclusive locking mode, keeping the WAL index in the heap
(`store.connect(..., vfs=...)` sets it). No -shm file exists to lose: after a
cut the normal VFS rebuilds the index from the -wal, as it would anyway.

Real fsyncs are skipped: the model, not the disk, decides what survives, and
an fsync per COMMIT would make hundreds of cuts too slow for `make test`.
"""

from __future__ import annotations

import itertools
import os
import random

import apsw

SECTOR = 512
_names = itertools.count()


class _Change:
    """One write or truncate, with what it replaced, so it can be undone and redone."""

    __slots__ = ("offset", "old", "size_before", "data", "new_size")

    def __init__(self, offset: int, old: bytes, size_before: int, data: bytes | None, new_size: int | None):
        self.offset, self.old, self.size_before, self.data, self.new_size = offset, old, size_before, data, new_size


class _History:
    """A file's changes since its last sync."""

    def __init__(self, path: str):
        self.path = path
        self.changes: list[_Change] = []

    def record(self, change: _Change) -> None:
        self.changes.append(change)

    def synced(self) -> None:
        self.changes.clear()

    def roll_back(self, rng: random.Random, keep_some: bool, tear: bool) -> tuple[int, int]:
        """Put the file back as at its last sync, then redo a random run of the oldest changes and
        tear the next write's last sector. Returns (changes lost, changes kept)."""
        if not self.changes or not os.path.exists(self.path):
            return 0, 0
        fd = os.open(self.path, os.O_RDWR)
        try:
            for change in reversed(self.changes):
                os.pwrite(fd, change.old, change.offset)
                os.ftruncate(fd, change.size_before)
            kept = rng.randrange(len(self.changes) + 1) if keep_some else 0
            for change in self.changes[:kept]:
                _redo(fd, change)
            if tear and kept < len(self.changes) and self.changes[kept].data:
                _tear(fd, self.changes[kept], rng)
        finally:
            os.close(fd)
        return len(self.changes) - kept, kept


def _redo(fd: int, change: _Change) -> None:
    if change.data is None:
        os.ftruncate(fd, change.new_size)
    else:
        os.pwrite(fd, change.data, change.offset)


def _tear(fd: int, change: _Change, rng: random.Random) -> None:
    """The write's sectors before its last land whole; its last sector lands only in part."""
    data = change.data
    last = max(0, (len(data) - 1) // SECTOR * SECTOR)
    os.pwrite(fd, data[:last] + data[last:last + rng.randrange(1, len(data) - last + 1)], change.offset)


class PowerCutVFS(apsw.VFS):
    """Register with `PowerCutVFS()`; open with `store.connect(path, level, vfs=vfs.name)`."""

    def __init__(self):
        self.name = f"powercut{next(_names)}"
        self.histories: dict[str, _History] = {}
        self.powered = True
        self.ops = 0
        self.fail_at: int | None = None
        super().__init__(self.name, base="")

    def fail_after(self, ops: int) -> None:
        """The power fails right after the `ops`-th write, truncate or sync from now."""
        self.fail_at = self.ops + ops

    def history(self, path: str) -> _History:
        return self.histories.setdefault(path, _History(path))

    def step(self) -> bool:
        """Count one mutating operation; False once the power is off (the operation must not happen)."""
        if not self.powered:
            return False
        self.ops += 1
        if self.fail_at is not None and self.ops >= self.fail_at:
            self.powered = False  # this operation still lands: the power goes right after it
        return True

    def xOpen(self, name, flags):
        return _File(self, name, flags)

    def xDelete(self, filename, syncdir):
        if not self.step():
            return  # the process is dead: nothing it "deletes" goes
        self.histories.pop(filename, None)
        super().xDelete(filename, syncdir)

    def cut(self, rng: random.Random, keep_some: bool = False, tear: bool = False) -> dict:
        """Lose power now (if it has not failed already): every file goes back to what a disk may hold.
        Close every connection on this VFS first. Returns counts of the changes lost and kept."""
        self.powered = False
        lost = kept = 0
        for history in self.histories.values():
            gone, stayed = history.roll_back(rng, keep_some, tear)
            lost, kept = lost + gone, kept + stayed
        self.histories.clear()
        self.unregister()
        return {"changes_lost": lost, "changes_kept": kept}


class _File(apsw.VFSFile):
    def __init__(self, vfs: PowerCutVFS, name, flags):
        super().__init__("", name, flags)  # inherit the default VFS's file: the real file
        self.vfs = vfs
        path = name.filename() if isinstance(name, apsw.URIFilename) else name
        self.history = vfs.history(path) if path else None  # temp files (no name) vanish with power anyway
        self.path = path

    def xWrite(self, data, offset):
        if not self.vfs.step():
            return
        if self.history is not None:
            data = bytes(data)
            self.history.record(_Change(offset, self._read(len(data), offset), self._size(), data, None))
        super().xWrite(data, offset)

    def xTruncate(self, newsize):
        if not self.vfs.step():
            return
        if self.history is not None:
            size = self._size()
            self.history.record(_Change(newsize, self._read(max(0, size - newsize), newsize), size, None, newsize))
        super().xTruncate(newsize)

    def xSync(self, flags):
        if not self.vfs.step():
            return
        if self.history is not None:
            self.history.synced()  # durable from here: see the module docstring for the skipped fsync

    def _size(self) -> int:
        return os.stat(self.path).st_size

    def _read(self, amount: int, offset: int) -> bytes:
        with open(self.path, "rb") as handle:
            handle.seek(offset)
            return handle.read(amount)
