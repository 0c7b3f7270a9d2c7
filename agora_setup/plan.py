"""Wire or unwire a workspace: compute every file's new text first, then write them all.

Every target is read and merged before any is written, so a corrupt file, a
broken marker or an unwritable directory stops setup with nothing changed.
Runs are serialised by a lock on the workspace and one in the home, so two
setups never interleave their read-merge-write of one file. A write that fails
halfway puts back the files written before it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agora_setup import harnesses, pristine, record
from agora_setup.harnesses import Seat
from agora_setup.targets import OwnedFile, SeatDirIgnore, SetupError, Target, in_line_ends_of, lf
from agorad.surface.filenames import SEAT_RECORD_NAME
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


def wire(seat: Seat, wanted: list[str], key_file: Path,
         before_writing: Callable[[], None] = lambda: None) -> tuple[list[str], list[Change]]:
    """Wire `wanted` harnesses (and keep those an earlier run wired); returns the harnesses now wired
    and every target's change. `before_writing` runs once every file has been read and checked writable,
    before the first is written (the CLI registers the seat there: a refused setup registers nothing)."""
    with _lock(seat.home, seat.workspace):
        record_path = seat_record(seat.workspace)
        earlier = _recorded(record_path)
        names = [h for h in harnesses.supported() if h in wanted or (earlier and h in earlier.harnesses)]
        changes = [_change(t, seat.workspace, lambda t, text: t.wire(text)) for t in harnesses.targets(names, seat)]
        created = set(earlier.created if earlier else ())
        created |= {c.relative for c in changes if c.before is None and c.after is not None}
        made = _made_now(earlier, [c.target.path for c in changes if c.before is None and c.after is not None]
                         + [record_path], seat.workspace)
        text = record.render(seat.agent, Home(seat.home).socket, key_file, names, sorted(created), made)
        changes += [_record_change(record_path, seat.workspace, text),
                    _change(_seat_dir_ignore(seat.workspace), seat.workspace, lambda t, text: t.wire(text))]
        _check_writable(changes)
        before_writing()
        for change in changes:
            if change.changed and change.before is not None and change.relative not in created:
                _keep(seat.workspace, change)
        _write(seat.workspace, changes, None if made is None else set(made))
        return names, changes


def unwire(seat: Seat, names: list[str] | None) -> list[Change]:
    """Take out what setup wrote for `names` (None: every harness, and the seat record). Only harnesses
    the seat record names are setup's: with no record nothing is, and the files stay as they are."""
    record_path = seat_record(seat.workspace)
    if not os.path.lexists(record_path):
        return []
    with _lock(seat.home, seat.workspace):
        earlier = _recorded(record_path)
        removing = _removing(earlier, names)
        if names is not None and not removing:
            return []  # none of those named is wired here
        keeping = [h for h in harnesses.supported() if earlier and h in earlier.harnesses and h not in removing]
        # A file the kept harnesses also use (AGENTS.md) is rewired for them rather than emptied.
        kept = {t.path: t for t in harnesses.targets(keeping, seat)}
        changes = [_change(kept.get(t.path, t), seat.workspace,
                           (lambda t, text: t.wire(text)) if t.path in kept else
                           (lambda t, text: _unwired(t, text, seat.workspace)))
                   for t in harnesses.targets(removing, seat)]
        deleted = {ch.relative for ch in changes if ch.after is None}
        # only a readable record names harnesses to keep
        text = _kept_record(seat, earlier, keeping, deleted, earlier.made_dirs) if keeping else None
        changes.append(_record_change(record_path, seat.workspace, text))
        if text is None:  # the whole seat goes: its directory's ignore file with it
            changes.append(_change(_seat_dir_ignore(seat.workspace), seat.workspace, lambda t, text: t.unwire(text)))
        _check_writable(changes)
        made = set(earlier.made_dirs) if earlier and earlier.made_dirs is not None else None
        _write(seat.workspace, changes, made)
        for change in changes:
            if change.target.path not in kept:  # a file kept harnesses still use keeps its first copy
                pristine.forget(seat.workspace, change.relative)
        if text is None:
            _prune(seat.workspace / SEAT_DIR_NAME, seat.workspace, made)
            return changes
        # Directories this removal took away are setup's no longer: one the user makes there later is the
        # user's, and a later removal must leave it.
        gone = {d for d in made if not (seat.workspace / d).is_dir()} if made is not None else set()
        if gone:
            _replace(record_path, _kept_record(seat, earlier, keeping, deleted, sorted(made - gone)))
        return changes


def _removing(earlier, names: list[str] | None) -> list[str]:
    """The harnesses to unwire: those named (or all) that the record says setup wired. A record that cannot
    be read says nothing: a whole removal then takes every harness's wiring out (the CLI refuses a partial
    one first, and says so for a whole one)."""
    if earlier is None:
        return list(harnesses.supported()) if names is None else []
    return [h for h in harnesses.supported() if h in earlier.harnesses and (names is None or h in names)]


def _kept_record(seat: Seat, earlier, keeping: list[str], deleted: set[str], made_dirs) -> str:
    """The record after a partial removal: the harnesses kept, the created files not deleted."""
    return record.render(seat.agent, Home(seat.home).socket, Path(earlier.key_file), keeping,
                         sorted(c for c in earlier.created if c not in deleted), made_dirs)


def _made_now(earlier, paths: list[Path], workspace: Path) -> list[str] | None:
    """The directories setup has made in the workspace, with those it is about to make for `paths`; None
    while an earlier record from before setup noted them stands (which it made, nobody knows)."""
    if earlier is not None and earlier.made_dirs is None:
        return None
    made = set(earlier.made_dirs if earlier else ())
    for path in paths:
        made.update(_new_dirs(path, workspace))
    return sorted(made)


def _keep(workspace: Path, change: Change) -> None:
    _refuse_linked_directory(pristine.directory(workspace) / change.relative, workspace)  # the copy may hold secrets
    try:
        pristine.keep(workspace, change.relative, change.before)
    except OSError as exc:
        raise SetupError(f"cannot keep a copy of {change.target.path} in {pristine.directory(workspace)} "
                         f"({exc.strerror or exc}); nothing was changed") from None


def _unwired(target: Target, text: str | None, workspace: Path) -> str | None:
    """The file without our part: the user's saved bytes when their part is as setup found it."""
    if not target.has_ours(text):
        return text
    after = target.unwire(text)
    before = pristine.saved(workspace, _relative(target.path, workspace))
    return before if before is not None and _left_as_found(target, lf(before), lf(after or "") or None) else after


def _left_as_found(target: Target, before: str, after: str | None) -> bool:
    """Whether `after` is what taking our part out of setup's own wiring of `before` leaves. A removal
    prunes containers it empties, the user's too (an empty `permissions.allow`), so comparing `after`
    with `before` itself would take an unchanged file for one with nothing of the user's in it."""
    try:
        return target.unwire(target.wire(before)) == after
    except SetupError:
        return False


def _change(target: Target, workspace: Path, compute) -> Change:
    _refuse_linked_directory(target.path, workspace)
    before = read_target(target.path)
    return Change(target, _relative(target.path, workspace), before,
                  in_line_ends_of(before, lambda text: compute(target, text)))


def _refuse_linked_directory(path: Path, workspace: Path) -> None:
    """Refuse a path inside the workspace that goes through a symbolic link to a directory (`.claude` linked to
    a directory other projects share): setup would write the file the link leads to, outside what it wires."""
    directory = workspace
    for part in path.parent.relative_to(workspace).parts:
        directory = directory / part
        if directory.is_symlink():
            raise SetupError(f"{directory} is a symbolic link (to {os.readlink(directory)}); setup does not write "
                             f"through links ({_relative(path, workspace)} is inside it): replace the link with a "
                             "copy of its directory, or wire without the harness that uses it; nothing was changed")


def read_target(path: Path) -> str | None:
    """The file's text as its bytes spell it (\r\n kept); None when there is none. Only a regular file is
    setup's to edit: a symbolic link would be replaced by a copy (and the file it names left as it was),
    and a FIFO would hang the read."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise SetupError(f"cannot write {path}: a file stands where a directory of its path belongs; move it "
                         "away; nothing was changed") from None
    except OSError as exc:
        raise SetupError(f"cannot read {path}: {exc.strerror}; nothing was changed") from None
    if stat.S_ISLNK(found.st_mode):
        raise SetupError(f"{path} is a symbolic link (to {os.readlink(path)}); setup edits only regular files: "
                         "replace the link with a copy of its file, or wire without the harness that uses it; "
                         "nothing was changed")
    if stat.S_ISDIR(found.st_mode):
        raise SetupError(f"{path} is a directory where setup writes a file; move it away")
    if not stat.S_ISREG(found.st_mode):
        raise SetupError(f"{path} is not a regular file; move it away and run setup again")
    try:
        with open(path, newline="") as file:
            return file.read()
    except UnicodeDecodeError:
        raise SetupError(f"{path} is not UTF-8 text; fix it by hand, setup will not overwrite it") from None
    except OSError as exc:
        raise SetupError(f"cannot read {path}: {exc.strerror}; nothing was changed") from None


def _relative(path: Path, workspace: Path) -> str:
    return str(path.relative_to(workspace))


def _check_writable(changes: list[Change]) -> None:
    for change in changes:
        if not change.changed:
            continue
        path = change.target.path
        if path.exists() and change.after is not None and not os.access(path, os.W_OK):
            raise SetupError(f"cannot write {path}: it is read-only; nothing was changed")
        directory = path.parent
        while not directory.exists():
            directory = directory.parent
        if not os.access(directory, os.W_OK | os.X_OK):
            raise SetupError(f"cannot write {path}: permission denied in {directory}; nothing was changed")


def _write(workspace: Path, changes: list[Change], made_dirs: set[str] | None) -> None:
    """Write every change; if one fails (a full disk, a file size limit), put back the files already
    written, so no run leaves half a wiring behind. `made_dirs`: the directories (relative) setup made,
    the only ones a removal may take away once empty."""
    done: list[Change] = []
    try:
        for change in changes:
            if change.changed:
                _apply(workspace, change.target.path, change.after, made_dirs)
                done.append(change)
    except OSError as exc:
        failed = change.target.path
        if made_dirs is not None:
            _prune(failed.parent, workspace, made_dirs)  # made for the file that failed
        for written in reversed(done):
            try:
                _apply(workspace, written.target.path, written.before, made_dirs)
            except OSError:
                pass  # a best effort: the error below names the file that failed
        raise SetupError(f"cannot write {failed}: {exc.strerror or exc}; the files written before it were "
                         "put back") from None


def _apply(workspace: Path, path: Path, text: str | None, made_dirs: set[str] | None) -> None:
    if text is None:
        path.unlink(missing_ok=True)
        _prune(path.parent, workspace, made_dirs)
    else:
        _replace(path, text)


def _replace(path: Path, text: str) -> None:
    """Write atomically, keeping an existing file's mode (a new one gets the umask's). The temporary file
    is private until it is whole: a merged config may hold the user's tokens from a 0600 file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.agora-setup")
    mode = path.stat().st_mode & 0o777 if path.exists() else None
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600 if mode is not None else 0o666)
    try:
        with open(fd, "w", newline="") as out:  # newline="": the text's own line ends, \r\n kept
            out.write(text)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _prune(directory: Path, workspace: Path, made_dirs: set[str] | None) -> None:
    """Remove directories setup made that are now empty, up to (not including) the workspace; a directory
    the user made (an empty `.claude/`, which also tells setup the workspace uses Claude Code) stays.
    `made_dirs` None: every empty one (a workspace whose record predates setup noting them)."""
    while directory != workspace and workspace in directory.parents:
        if made_dirs is not None and _relative(directory, workspace) not in made_dirs:
            return
        try:
            directory.rmdir()
        except OSError:  # not empty
            return
        directory = directory.parent


def _new_dirs(path: Path, workspace: Path) -> list[str]:
    """The directories (relative) between the workspace and `path` that do not exist yet."""
    missing = []
    directory = path.parent
    while directory != workspace and workspace in directory.parents and not directory.exists():
        missing.append(_relative(directory, workspace))
        directory = directory.parent
    return missing


def _recorded(path: Path):
    """The seat record an earlier setup wrote, or None when there is none or it cannot be read (the CLI
    refuses a re-run on an unreadable one first; a whole `--remove` then takes it out with the rest)."""
    from agorad.surface.seat_record import RecordError, load

    try:
        return load(path) if path.exists() else None
    except RecordError:
        return None


# The seat directory holds this host's absolute paths and the copies of files setup changed (pristine.py),
# which may hold a user's secrets (a token in .mcp.json): nothing in it belongs in a repository.
SEAT_DIR_IGNORE = ("# Written by `agora setup`: the seat record names this host's paths, and pristine/ holds copies\n"
                   "# of the files setup changed (they may hold secrets); neither belongs in version control.\n"
                   f"/{SEAT_RECORD_NAME}\n/{pristine.PRISTINE_DIR}/\n/.gitignore\n")  # by name: a user's file shows


def _seat_dir_ignore(workspace: Path) -> SeatDirIgnore:
    return SeatDirIgnore(workspace / SEAT_DIR_NAME / ".gitignore", content=SEAT_DIR_IGNORE,
                         marker="Written by `agora setup`")


def _record_change(path: Path, workspace: Path, text: str | None) -> Change:
    _refuse_linked_directory(path, workspace)
    return Change(OwnedFile(path, marker=record.HEADER), _relative(path, workspace), read_target(path), text)


class _lock:
    """The workspace's setup lock (flock on its directory: two runs naming different homes still edit the
    same files) and the host's (a file lock in the home), taken in that order."""

    def __init__(self, home: Path, workspace: Path):
        self.home = Home(home)
        self.workspace = workspace

    def __enter__(self):
        from filelock import FileLock, Timeout

        self._workspace = _flock_directory(self.workspace, LOCK_WAIT)
        try:
            self.home.ensure()
            self._lock = FileLock(str(self.home.setup_lock), mode=FILE_MODE)
            self._lock.acquire(timeout=LOCK_WAIT)
        except Timeout:
            os.close(self._workspace)
            raise SetupError(f"another `agora setup` has held {self.home.setup_lock} for {LOCK_WAIT:.0f} s; "
                             "let it finish and run setup again") from None
        except OSError as exc:  # a setup.lock that is a symbolic link (refused: O_NOFOLLOW), an unwritable home
            os.close(self._workspace)
            raise SetupError(f"cannot take the setup lock {self.home.setup_lock}: {exc.strerror or exc}; "
                             "nothing was changed") from None
        except BaseException:
            os.close(self._workspace)
            raise
        return self

    def __exit__(self, *exc):
        self._lock.release()
        os.close(self._workspace)


def _flock_directory(directory: Path, wait: float) -> int:
    """An exclusive flock on the directory itself (no lock file to leave behind); its descriptor."""
    import fcntl
    import time

    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise SetupError(f"another `agora setup` has been editing {directory} for {wait:.0f} s; let it "
                                 "finish and run setup again") from None
            time.sleep(0.05)
