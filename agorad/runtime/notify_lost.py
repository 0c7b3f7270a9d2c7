"""A notify file deleted or moved away under the running hub: noticed at once, and no wake lost.

The hub appends through descriptors it keeps open (notify.py). A file deleted or
renamed away by hand (`rm`, `mv`, logrotate without SIGUSR2) went on taking the
seat's lines where no reader finds them by name, until a restart or SIGUSR2; a
listener started meanwhile (`agora listen --once` runs in a loop) found no file
and waited, deaf to mail already delivered.

`NameWatch` watches the notify directory (inotify, Linux) for names that leave
or are replaced. For each seat whose name changed, `recover` runs once the open
batch is settled (so the database holds committed deliveries only):

- a descriptor holding a file that is no longer the one under the name is closed:
  the seat's next line opens the name anew, as after SIGUSR2;
- when neither the file under the name nor its `.1` then holds the seat's newest
  line, the seat's newest deliveries (one rotation's worth, from the database) are
  written into a new `.1`, as `agora restore` does (notify_rebuild.py). A listener
  resuming from an offset in the lost file finds its inode gone and reads `.1`,
  skipping the ids it rang (agora_listen/follow.py): what it never read rings once.
  One still reading the lost file through its own descriptor has those lines
  already, and goes on with the new file from its start.

The new `.1` is made before the descriptor closes, so it cannot take the lost
file's inode number. The hub's own rotations, renames and removals close the
descriptor before they move a name and leave every line where a reader looks:
they pass through here as nothing lost. Where inotify is missing (macOS, the
BSDs) SIGUSR2 runs the same check over every open file before it closes them.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import apsw

from agorad.runtime.log import log
from agorad.runtime.notify import Notifier
from agorad.runtime.notify_rebuild import write_history
from agorad.store import agents as agents_sql
from agorad.store import messages as sql
from agorad.surface import inotify
from agorad.surface.filenames import notify_file_owner, sync_path
from agorad.surface.notifyfile import last_id_in
from agorad.surface.paths import notify_file, rotated

# A name leaves (unlink, a rename away) or is replaced (a rename onto it). Not IN_CREATE or
# IN_MODIFY: the hub's own appends and new files would wake it for nothing.
NAME_CHANGES = inotify.IN_DELETE | inotify.IN_MOVED_FROM | inotify.IN_MOVED_TO
WATCHED = NAME_CHANGES | inotify.IN_MOVE_SELF | inotify.IN_ONLYDIR


class NameWatch:
    """An inotify watch on the notify directory, reporting the seats whose notify file names changed."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.fd = inotify.init()
        self.wd: int | None = None  # None while the directory is not watched (gone, or moved away)
        try:
            self.rearm()
        except OSError:
            os.close(self.fd)
            raise

    @property
    def watching(self) -> bool:
        return self.wd is not None

    def rearm(self) -> bool:
        """Watch the directory under its path again if the watch went (the directory deleted, or moved away
        and made again); True when it did: moves were missed meanwhile, so every open file is to be looked at."""
        if self.watching:
            return False
        self.wd = inotify.add_watch(self.fd, os.fspath(self.directory), WATCHED)
        return True

    def changed(self) -> set[str] | None:
        """The agent ids whose notify file (or `.1`) names changed since the last call; None when the
        kernel dropped events, or the directory went, so that every open file is to be looked at."""
        owners: set[str] | None = set()
        for wd, mask, name in inotify.events(self.fd):
            if mask & inotify.IN_Q_OVERFLOW:
                owners = None
            elif wd != self.wd:
                continue  # a watch given up already: its IN_IGNORED
            elif mask & (inotify.IN_IGNORED | inotify.IN_MOVE_SELF):
                self._lost()
                owners = None
            elif owners is not None:
                owner = notify_file_owner(name)
                if owner:
                    owners.add(owner)
        return owners

    def _lost(self) -> None:
        """The directory went (IN_IGNORED) or moved (IN_MOVE_SELF: the watch would follow it away from
        the path the hub writes under). The sweep watches the path again once a directory is there."""
        inotify.remove_watch(self.fd, self.wd)  # after IN_IGNORED it is gone already: EINVAL, ignored
        self.wd = None
        log("notify-watch-lost", directory=self.directory)

    def close(self) -> None:
        os.close(self.fd)


def watch(directory: Path | None) -> NameWatch | None:
    """A NameWatch on the notify directory; None without notify files or inotify (logged: SIGUSR2 is the
    remedy there)."""
    if directory is None:
        return None
    if not inotify.available():
        log("notify-watch-unavailable", reason="no inotify on this system; send SIGUSR2 after moving notify files")
        return None
    try:
        return NameWatch(directory)
    except OSError as exc:  # inotify instances or watches used up (fs.inotify.max_user_*), a directory gone
        log("notify-watch-unavailable", reason=exc.strerror or str(exc))
        return None


def recover(notifier: Notifier, db: apsw.Connection, agent_ids: set[str] | None) -> None:
    """See the module docstring: for each of `agent_ids` (None: every seat whose file is held open), stop
    writing to a file that left its name, and put what a listener may not have read into a new `.1`."""
    held = notifier.descriptors()
    pks = agents_sql.pks_by_id(db, sorted(held if agent_ids is None else agent_ids))
    for agent_id, pk in sorted(pks.items()):  # a former or removed id is none: the hub's own rename or removal
        fd = held.get(agent_id)
        if fd is not None and not _strayed(fd, notifier.path(agent_id)):
            continue
        try:
            _recover_seat(notifier, db, pk, agent_id, strayed=fd is not None)
        except OSError as exc:  # the seat's next line still opens the name; a listener counts the gap
            notifier.let_go(agent_id)
            log("notify-recover-failed", agent=agent_id, path=notifier.path(agent_id), error=exc.strerror or exc)


def _recover_seat(notifier: Notifier, db: apsw.Connection, pk: int, agent_id: str, strayed: bool) -> None:
    path = notifier.path(agent_id)
    kept = max(last_id_in(path) or 0, last_id_in(rotated(path)) or 0)
    if kept >= notifier.written.get(pk, 0):  # moved to `.1` (logrotate), or the hub's own doing
        if strayed:
            notifier.let_go(agent_id)
            log("notify-file-moved", agent=agent_id, path=path)
        return
    newest = sql.newest_delivery(db, pk)
    _rewrite_rotated(notifier, db, pk, agent_id, newest)
    notifier.let_go(agent_id)  # after the new `.1` exists: it cannot take the lost file's inode number
    notifier.written[pk] = max(newest, notifier.written.get(pk, 0))  # `.1` holds all up to it, any the writer
    notifier.behind.discard(pk)                                     # was behind on too
    log("notify-file-lost", agent=agent_id, path=path, kept_in=rotated(path), upto=newest)


def _strayed(fd: int, path: Path) -> bool:
    """Whether the open file `fd` is no longer the one under `path` (deleted, or renamed away)."""
    held = os.fstat(fd)
    try:
        named = os.lstat(path)
    except FileNotFoundError:
        return True
    return (held.st_dev, held.st_ino) != (named.st_dev, named.st_ino)


def _rewrite_rotated(notifier: Notifier, db: apsw.Connection, pk: int, agent_id: str, newest: int) -> None:
    """The seat's newest deliveries up to `newest` in a new `<id>-inbox.log.1`, synced before it takes the
    name (as a rotation's: start-up replays only beyond the newest line)."""
    staging = Path(tempfile.mkdtemp(prefix=".lost-", dir=notifier.directory))
    try:
        write_history(db, staging, notifier.rotate_bytes, [(pk, agent_id, newest)])
        staged = notify_file(staging, agent_id)
        sync_path(staged)
        os.replace(staged, rotated(notifier.path(agent_id)))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
