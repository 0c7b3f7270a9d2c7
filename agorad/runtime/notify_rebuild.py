"""Notify files made anew from a database, as `agora restore` leaves them.

After a restore the files on disk describe another database: lines for deliveries it lost, ids it
will hand out again. Each seat gets two new files (new inodes: all are made before any old one goes, so none
can take an old one's inode number):

- `<id>-inbox.log.1` holds the seat's newest deliveries, one rotation's worth, as the hub itself
  would have written them (the lines come from `Notifier`, not from a copy of its code);
- `<id>-inbox.log` is empty: the hub appends what comes next there.

A listener resuming from an offset saved on an old file finds its inode gone, reads `.1` from its
start skipping every id up to the one it saved (agora_listen/follow.py), then the new file whole.
So what it rang before the backup does not ring again, a delivery in the backup it never rang
does (or counts in `missed=N` if older than `.1`), and everything after the restore rings, whatever
its id: ids the restored hub hands out again land in the new file, read from its start.
The hub, starting, finds the last id in `.1` equal to the database's and replays nothing.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import apsw

from agorad.runtime.notify import Notifier
from agorad.store import messages as sql
from agorad.surface.filenames import FILE_MODE, HOME_MODE, notify_file_owner, sync_path
from agorad.surface.paths import notify_file, rotated

# The shortest notify line is ~110 bytes: this many lines per byte of rotation size fill a generation.
_SHORTEST_LINE = 100


def prepare(db: apsw.Connection, directory: Path, agents: list[str], rotate_bytes: int) -> Path:
    """Write every seat's new notify files from `db`, whose agents are `agents`, in a staging directory
    beside the files (same filesystem, so each is renamed into place whole); return it for `install`.
    Nothing in `directory` changes: a failure here leaves the old files, and no staging directory."""
    directory.mkdir(mode=HOME_MODE, parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".restore-", dir=directory))
    try:
        _write_history(db, staging, rotate_bytes)
        # Every new file exists before any old one goes, so none can be given an old one's inode
        # number: a listener whose saved inode came back would resume inside a file it never read.
        _make_empty(staging, agents)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return staging


def install(staging: Path, directory: Path, agents: list[str]) -> None:
    """Rename the files `prepare` made into place; files of ids the database does not know are removed."""
    try:
        for agent_id in agents:
            _install(staging, directory, agent_id)
        _remove_strays(directory, set(agents))
        sync_path(directory)  # the renames
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _write_history(db: apsw.Connection, staging: Path, rotate_bytes: int) -> None:
    """Each seat's newest deliveries in staging/<id>-inbox.log, by the hub's own writer."""
    history = rotate_bytes // _SHORTEST_LINE if rotate_bytes else None
    notifier = Notifier(staging, rotate_bytes)
    try:
        for pk, agent_id, newest, _ in sql.delivery_marks(db):
            notifier.written[pk] = max(0, newest - history) if history else 0
            notifier.catch_up(db, pk)
            if notifier.written[pk] != newest:
                raise OSError(f"writing the notify lines of {agent_id} in {staging} failed (see the log line above)")
    finally:
        notifier.close()


def _make_empty(staging: Path, agents: list[str]) -> None:
    for agent_id in agents:
        os.close(os.open(_empty(staging, agent_id), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE))


def _empty(staging: Path, agent_id: str) -> Path:
    return staging / f".{agent_id}.empty"


def _install(staging: Path, directory: Path, agent_id: str) -> None:
    """History to `.1` (or no `.1`), then the empty file under the name."""
    staged, target = notify_file(staging, agent_id), notify_file(directory, agent_id)
    if staged.exists():
        sync_path(staged)
        os.replace(staged, rotated(target))
    else:
        rotated(target).unlink(missing_ok=True)
    os.replace(_empty(staging, agent_id), target)


def _remove_strays(directory: Path, agents: set[str]) -> None:
    """Notify files of seats the restored database does not have: a seat added since the backup."""
    for entry in os.scandir(directory):
        owner = notify_file_owner(entry.name)
        if owner is not None and owner not in agents and entry.is_file(follow_symlinks=False):
            os.unlink(entry.path)
