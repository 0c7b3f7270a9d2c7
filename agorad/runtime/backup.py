"""`agora backup`: a consistent copy of the home's database while the hub serves.

The copy is made by a read-only connection of the caller's own, not through the hub: only the
home's owner can open the database file (the home is 0700, the file 0600), which is exactly who
the hub would let call an operator method, so a hub method would add no protection; and in WAL
mode a reader sees one committed state (store/snapshot.py) without ever holding the hub's writer
back, while a copy made inside the hub would stall its one event loop for the whole copy. It also
works with no hub running.
"""

from __future__ import annotations

import os
from pathlib import Path

import apsw

from agorad.store import snapshot
from agorad.store.connection import sqlite_path
from agorad.surface.errors import AgoraError
from agorad.surface import filenames
from agorad.surface.filenames import sync_path
from agorad.surface.paths import FILE_MODE, Home


def backup(home: Home, target: Path, force: bool = False) -> dict:
    """Copy the home's database to `target` (0600, whole or not at all); return what was written."""
    target = Path(os.path.abspath(target))
    sqlite_path(target)  # a name SQLite cannot take fails here, named as given, not as its temp file
    if not home.db.is_file():
        raise AgoraError(f"no database at {home.db}: nothing to back up")
    if _names_a_hub_file(home, target):
        raise AgoraError(f"{target} is one of the hub's own files; back up to another path")
    if target.exists() and not force:
        raise AgoraError(f"{target} exists; give --force to replace it")
    _require_directory(target)
    temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        _create_private(temp, target)
        facts = _copy(home.db, temp)
        sync_path(temp)
        _put_in_place(temp, target, force)
    finally:
        temp.unlink(missing_ok=True)
    return {"path": str(target), "bytes": target.stat().st_size, **facts}


# The home's own names: a backup put in place of one (the rename replaces the entry) would stand where the
# hub and its seats read theirs. Any other name in the home is the user's to choose.
_HUB_NAMES = frozenset({filenames.SOCKET_NAME, filenames.PIDFILE_NAME, filenames.LOCKFILE_NAME, filenames.LOG_NAME,
                        filenames.LOG_NAME + filenames.ROTATED_SUFFIX,
                        filenames.HUB_URL_NAME, filenames.SETUP_LOCK_NAME})


def _names_a_hub_file(home: Home, target: Path) -> bool:
    """Whether `target` is the directory entry of the database, a companion, or another file of the hub's or
    its seats', however spelled: the copy replaces the entry, so a symbolic link or `..` in the path to the
    home's directory must not get past a comparison of strings (the hub would write on into the unlinked
    database, and serve the copy after a restart; `agorad.sock` replaced, no client finds the hub). A link
    to the file itself is replaced, not followed: no harm there."""
    name = target.name
    try:
        where = os.stat(target.parent)
    except OSError:  # a directory that is not there is not the home's (nor its keys/)
        return False
    if _is_directory(where, home.keys_dir):  # every name there is a seat's key, or may become one
        return True
    return (name in _HUB_NAMES or name in {path.name for path in home.db_files}
            or name.startswith(filenames.SEAT_FILE_PREFIXES) or bool(filenames.notify_file_owner(name))) and \
        _is_directory(where, home.root)


def _is_directory(info: os.stat_result, path) -> bool:
    try:
        return os.path.samestat(info, os.stat(path))
    except OSError:
        return False


def _copy(database: Path, temp: Path) -> dict:
    try:
        source = snapshot.open_readonly(database)
        try:
            snapshot.copy_into(source, temp)
        finally:
            source.close()
        copy = snapshot.open_readonly(temp)
        try:
            return snapshot.summary(copy)
        finally:
            copy.close()
    except apsw.Error as exc:
        raise AgoraError(f"copying the database {database}: {exc}") from None


def _require_directory(target: Path) -> None:
    """Refuse a FILE whose directory is not there, saying so. The directory is not made here: a
    mistyped path would grow a tree, and a backup, where nobody looks for one."""
    directory = target.parent
    if directory.is_dir():
        return
    if directory.exists():
        raise AgoraError(f"cannot write the backup {target}: {directory} is not a directory; "
                         "give a FILE in a directory")
    raise AgoraError(f"cannot write the backup {target}: its directory {directory} does not exist; "
                     f"create it (`mkdir -p {directory}`) or give a FILE in a directory that exists")


def _create_private(path: Path, target: Path) -> None:
    """Create the temp file `path` beside `target`; a failure names the backup and its directory,
    which the user chose, not the temp name, which they never gave."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE))
    except OSError as exc:
        raise OSError(f"cannot write the backup {target}: creating a file in {target.parent}: "
                      f"{exc.strerror}") from None


def _put_in_place(temp: Path, target: Path, force: bool) -> None:
    """Rename the finished copy to its name. Without --force a hard link puts it there instead,
    which fails if the name was taken meanwhile: a file that appeared after the check is never replaced."""
    try:
        if force:
            os.replace(temp, target)
        else:
            os.link(temp, target)
    except FileExistsError:
        raise AgoraError(f"{target} exists; give --force to replace it") from None
    except OSError as exc:
        raise OSError(f"writing the backup {target}: {exc.strerror}") from None
    sync_path(target.parent)
