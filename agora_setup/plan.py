"""Wire or unwire a workspace: compute every file's new text first, then write them all.

Every target is read and merged before any is written, so a corrupt file, a
broken marker or an unwritable directory stops setup with nothing changed.
Runs on one host are serialised by a lock in the home, so two setups never
interleave their read-merge-write of one file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from agora_setup import harnesses, pristine, record
from agora_setup.harnesses import Seat
from agora_setup.targets import OwnedFile, SetupError, Target
from agorad.surface.paths import FILE_MODE, SEAT_DIR_NAME, Home, seat_record

LOCK_WAIT = 30.0  # seconds to wait for a concurrent setup on this host


@dataclass
class Change:
    target: Target
    relative: str  # the path inside the workspace
    before: str | None
    after: str | None

    @property
    def changed(self) -> bool:
        return self.before != self.after


def wire(seat: Seat, wanted: list[str], key_file: Path) -> tuple[list[str], list[Change]]:
    """Wire `wanted` harnesses (and keep those an earlier run wired); returns the harnesses now wired
    and every target's change."""
    with _lock(seat.home):
        record_path = seat_record(seat.workspace)
        earlier = _recorded(record_path)
        names = [h for h in harnesses.supported() if h in wanted or (earlier and h in earlier.harnesses)]
        changes = [_change(t, seat.workspace, lambda t, text: t.wire(text)) for t in harnesses.targets(names, seat)]
        created = set(earlier.created if earlier else ())
        created |= {c.relative for c in changes if c.before is None and c.after is not None}
        text = record.render(seat.agent, Home(seat.home).socket, key_file, names, sorted(created))
        changes.append(_record_change(record_path, seat.workspace, text))
        _check_writable(changes)
        for change in changes:
            if change.changed and change.before is not None and change.relative not in created:
                pristine.keep(seat.workspace, change.relative, change.before)
        _write(seat.workspace, changes)
        return names, changes


def unwire(seat: Seat, names: list[str] | None) -> list[Change]:
    """Take out what setup wrote for `names` (None: every harness, and the seat record)."""
    with _lock(seat.home):
        record_path = seat_record(seat.workspace)
        earlier = _recorded(record_path)
        removing = list(harnesses.supported()) if names is None else names
        keeping = [h for h in (earlier.harnesses if earlier else ()) if h not in removing]
        # A file the kept harnesses also use (AGENTS.md) is rewired for them rather than emptied.
        kept = {t.path: t for t in harnesses.targets(keeping, seat)}
        changes = [_change(kept.get(t.path, t), seat.workspace,
                           (lambda t, text: t.wire(text)) if t.path in kept else
                           (lambda t, text: _unwired(t, text, seat.workspace)))
                   for t in harnesses.targets(removing, seat)]
        if keeping:  # only a readable record names harnesses to keep
            deleted = {ch.relative for ch in changes if ch.after is None}
            text = record.render(seat.agent, Home(seat.home).socket, Path(earlier.key_file), keeping,
                                 sorted(c for c in earlier.created if c not in deleted))
        else:
            text = None
        changes.append(_record_change(record_path, seat.workspace, text))
        _check_writable(changes)
        _write(seat.workspace, changes)
        for change in changes:
            if change.after is None or not change.target.has_ours(change.after):
                pristine.forget(seat.workspace, change.relative)
        if text is None:
            _prune(seat.workspace / SEAT_DIR_NAME, stop=seat.workspace)
        return changes


def _unwired(target: Target, text: str | None, workspace: Path) -> str | None:
    if not target.has_ours(text):
        return text
    return pristine.restored(workspace, _relative(target.path, workspace), target.unwire(text))


def _change(target: Target, workspace: Path, compute) -> Change:
    before = _read(target.path)
    return Change(target, _relative(target.path, workspace), before, compute(target, before))


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise SetupError(f"{path} is not UTF-8 text; fix it by hand, setup will not overwrite it") from None
    except IsADirectoryError:
        raise SetupError(f"{path} is a directory where setup writes a file; move it away") from None
    except OSError as exc:
        raise SetupError(f"cannot write {path}: {exc.strerror}; nothing was changed") from None


def _relative(path: Path, workspace: Path) -> str:
    return str(path.relative_to(workspace))


def _check_writable(changes: list[Change]) -> None:
    for change in changes:
        if not change.changed:
            continue
        directory = change.target.path.parent
        while not directory.exists():
            directory = directory.parent
        if not os.access(directory, os.W_OK | os.X_OK) or (
                change.target.path.exists() and not os.access(change.target.path, os.W_OK)):
            raise SetupError(f"cannot write {change.target.path}: permission denied in {directory}; "
                             "nothing was changed")


def _write(workspace: Path, changes: list[Change]) -> None:
    for change in changes:
        if not change.changed:
            continue
        path = change.target.path
        if change.after is None:
            path.unlink(missing_ok=True)
            _prune(path.parent, stop=workspace)
        else:
            _replace(path, change.after)


def _replace(path: Path, text: str) -> None:
    """Write atomically, keeping an existing file's mode (a new one gets the umask's)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.agora-setup")
    mode = path.stat().st_mode & 0o777 if path.exists() else None
    with open(tmp, "w") as out:
        out.write(text)
    if mode is not None:
        os.chmod(tmp, mode)
    os.replace(tmp, path)


def _prune(directory: Path, stop: Path) -> None:
    """Remove directories setup left empty, up to (not including) the workspace."""
    while directory != stop and stop in directory.parents:
        try:
            directory.rmdir()
        except OSError:  # not empty, or not ours to remove
            return
        directory = directory.parent


def _recorded(path: Path):
    """The seat record an earlier setup wrote, or None when there is none or it cannot be read
    (a re-run then rewrites it from what it wires now)."""
    from agorad.surface.seat_record import RecordError, load

    try:
        return load(path) if path.exists() else None
    except RecordError:
        return None


def _record_change(path: Path, workspace: Path, text: str | None) -> Change:
    return Change(OwnedFile(path, marker=record.HEADER), _relative(path, workspace), _read(path), text)


class _lock:
    """The host's setup lock (a file lock in the home)."""

    def __init__(self, home: Path):
        self.home = Home(home)

    def __enter__(self):
        from filelock import FileLock, Timeout

        self.home.ensure()
        self._lock = FileLock(str(self.home.setup_lock), mode=FILE_MODE)
        try:
            self._lock.acquire(timeout=LOCK_WAIT)
        except Timeout:
            raise SetupError(f"another `agora setup` has held {self.home.setup_lock} for {LOCK_WAIT:.0f} s; "
                             "let it finish and run setup again") from None
        return self

    def __exit__(self, *exc):
        self._lock.release()
