"""A notify file deleted or moved away under the running hub: noticed at once, and no wake lost.

The hub appends through descriptors it keeps open (notify.py). A file deleted or
renamed away by hand (`rm`, `mv`, logrotate without SIGUSR2) went on taking the
seat's lines where no reader finds them by name, until a restart or SIGUSR2; a
listener started meanwhile (`agora listen --once` runs in a loop) found no file
and waited, deaf to mail already delivered.

Two parts:

- `keep_unread`, called by the writer whenever it is about to open a seat's file
  by name and finds none there, or an empty one (`Notifier.on_empty_file`). If
  `.1` does not hold the newest line the writer has written for the seat, the
  file that held it left the name: the deliveries after the place the seat's
  listener saved (`listen-<id>.offset`), at most `HISTORY_LINES` and at least the
  newest, go into a new `.1` from the database, ending at that line, before the
  name is made (a listener woken by the new name finds `.1` there). A listener
  resuming from a place in the lost file finds its inode gone and reads `.1`,
  skipping the ids it rang (agora_listen/follow.py): what it never read rings once.
  One still reading the lost file through its own descriptor has those lines
  already, and goes on with the new file from its start, which the writer's next
  line is the first of. The files end at the writer's newest line again, as
  start-up's reconciliation expects. Run at the one moment lines would start
  landing in a new file, it covers every order of events: a deletion noticed
  before or after the seat's next line, a file the hub did not hold open, a
  seat renamed in between. A file deleted, emptied or torn while no hub ran is
  start-up's: when the seat's listener saved a place past `.1`'s last line, `.1`
  is ended at that place here and the rest replayed under the name
  (`Notifier._replay_after_rung`).
- `NameWatch` watches the notify directory (inotify, Linux) for names that leave
  or are replaced, and `recover` opens each such seat's name again at once
  (`Notifier.renew`, which calls `keep_unread`) if the file the hub holds open
  left it, or if the seat has lines and its name holds no file: no descriptor goes
  on writing into a file nobody reads, and a fresh listener finds an empty file
  under the name (so it takes `.1` as old news) rather than no file. Where there is
  no inotify (macOS, the BSDs) SIGUSR2 runs `recover` over every open file first.

The hub's own rotations, renames and removals close the descriptor before they
move a name and leave the files ending at the newest line: they pass through here
as nothing lost. The new files are made before the old descriptor is closed, so
they cannot take the lost file's inode number.
"""

from __future__ import annotations

import os
from pathlib import Path

import apsw

from agorad.runtime.log import log
from agorad.runtime.notify import Notifier, notify_lines
from agorad.runtime.notify_reconcile import rung_id
from agorad.store import agents as agents_sql
from agorad.store import messages as sql
from agorad.surface import filenames, inotify
from agorad.surface.filenames import notify_file_owner, write_private
from agorad.surface.notifyfile import last_id_in
from agorad.surface.paths import rotated
from agorad.surface.protocol import is_agent_id

SEATS_A_TURN = 32    # seats `recover` takes in one loop turn (HubState.look_at_notify_files)
HISTORY_LINES = 100  # at most this many unread deliveries kept in `.1`; a listener counts older ones as missed

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
        self.inode: tuple[int, int] | None = None  # the watched directory's (device, inode)
        try:
            self.rearm()
        except OSError:
            os.close(self.fd)
            raise

    @property
    def watching(self) -> bool:
        """Whether the directory under the path is the one watched. A directory deleted while any process
        holds a file in it open (a seat's listener does) sends no IN_IGNORED until the last one is closed:
        one made again under the path meanwhile is another, so the inode says, not the watch alone."""
        if self.wd is None:
            return False
        try:
            return _identity(self.directory) == self.inode
        except OSError:
            return False

    def rearm(self) -> bool:
        """Watch the directory under its path again if the watch went (the directory deleted, or moved away
        and made again); True when it did: moves were missed meanwhile, so every open file is to be looked at."""
        if self.watching:
            return False
        if self.wd is not None:
            inotify.remove_watch(self.fd, self.wd)  # the gone directory's (EINVAL if gone already: ignored)
            self.wd = None
        inode = _identity(self.directory)  # before the watch: one made again between reads as unwatched
        self.wd = inotify.add_watch(self.fd, os.fspath(self.directory), WATCHED)
        self.inode = inode
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
                if is_agent_id(owner):  # not some other file, nor a name no seat can have
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


def _identity(directory: Path) -> tuple[int, int]:
    """(device, inode): a file system mounted over the path can repeat an inode number."""
    info = os.stat(directory)
    return info.st_dev, info.st_ino


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
    """Open again, now, the name of each of `agent_ids` (None: every seat whose file is held open) whose
    held file left it, or that has lines and no file under it (see the module docstring). Never raises: it
    runs from the event loop and from SIGUSR2, whose reopening must follow all the same."""
    try:
        _recover(notifier, db, agent_ids)
    except Exception as exc:  # a database error: the seats' next lines keep what they can (keep_unread)
        log("notify-recover-failed", error=type(exc).__name__, detail=str(exc)[:200])


def _recover(notifier: Notifier, db: apsw.Connection, agent_ids: set[str] | None) -> None:
    held = notifier.descriptors()
    for agent_id, pk in sorted(agents_sql.pks_by_id(db, sorted(held if agent_ids is None else agent_ids)).items()):
        path = notifier.path(agent_id)
        try:
            fd = held.get(agent_id)
            if fd is not None and not _strayed(fd, path):
                continue
            if fd is None and (not notifier.written.get(pk) or filenames.exists(path)):
                continue  # nothing written yet, or a file the writer made (keep_unread ran then)
            notifier.renew(pk, agent_id)
            log("notify-file-renewed", agent=agent_id, path=path)
            if pk in notifier.behind:  # what failed while the name held no file (a FIFO, say) goes in now
                notifier.catch_up(db, pk)
        except OSError as exc:  # the name's directory gone, say: the seat's next line tries again
            log("notify-recover-failed", agent=agent_id, path=path, error=exc.strerror or exc)


def keep_unread_for(notifier: Notifier, db: apsw.Connection) -> None:
    """Have the notifier call `keep_unread` before it opens a missing or empty file, as the hub's does."""
    notifier.on_empty_file = lambda pk, agent_id: keep_unread(notifier, db, pk, agent_id)


def keep_unread(notifier: Notifier, db: apsw.Connection, pk: int, agent_id: str) -> bool:
    """Notifier.on_empty_file: see the module docstring. Never raises: the seat's line goes in all the same.
    False when `.1` should have been written and could not be."""
    path = notifier.path(agent_id)
    upto = notifier.written.get(pk, 0)
    try:
        if not upto or (last_id_in(rotated(path)) or 0) >= upto:
            return True
        saved = _saved_place(notifier, agent_id)
        after = upto - 1 if saved is None else min(upto - 1, max(saved, upto - HISTORY_LINES))
        lines = _lines_between(db, pk, after, upto)
        # Not synced, as notify lines never are: a power cut now costs these lines' wakes as `missed`, not mail.
        write_private(rotated(path), b"".join(lines), sync=False)
    except (OSError, apsw.Error) as exc:
        log("notify-recover-failed", agent=agent_id, path=rotated(path), error=getattr(exc, "strerror", None) or exc)
        return False
    log("notify-file-lost", agent=agent_id, path=path, kept_in=rotated(path), lines=len(lines), upto=upto)
    return True


def _saved_place(notifier: Notifier, agent_id: str) -> int | None:
    """The id the seat's listener saved as rung (listen-<id>.offset); 0 for a place at 0 saved as the hub's
    word (`"zero"`: everything since is unread); None when it saved none, or 0 with no word: a listener that
    knows nothing reads a `.1` made since above nothing (agora_listen/follow.py), so it is given only the
    newest line, not a history it would ring again."""
    if notifier.seats is None:
        return None
    return rung_id(filenames.listen_file(os.fspath(notifier.seats), agent_id, "offset"))


def _lines_between(db: apsw.Connection, pk: int, after: int, upto: int) -> list[bytes]:
    """The notify lines of the seat's deliveries with after < id <= upto, from the database."""
    lines = []
    for rows in sql.deliveries_after(db, pk, after):
        lines += notify_lines([row for row in rows if row["id"] <= upto])
    return lines


def _strayed(fd: int, path: Path) -> bool:
    """Whether the open file `fd` is no longer the one under `path` (deleted, renamed away, or its
    directory moved: any name that cannot be looked at counts)."""
    held = os.fstat(fd)
    try:
        named = os.lstat(path)
    except OSError:
        return True
    return (held.st_dev, held.st_ino) != (named.st_dev, named.st_ino)
