"""Follow a notify file by name, like `tail -F`, resumable across processes and rotations.

Position is (inode, byte offset, last delivery id), and the inode's generation
where the file system keeps one: an inode number alone can be a deleted file's,
given to a new one (ext4 does so at once), and a generation is new with each
file. Every line read past the saved position rings, whatever its id: ids never
make the listener deaf (a restored database can restart them lower). Ids are used only where bytes
cannot say what was already read (a file rotated twice since the last run,
whose `.1` is re-read from its start), to confirm that a file under the saved
inode number still holds the saved place (where no generation tells: `_place`),
and to count deliveries whose lines were rotated away unread (gaps in the
per-agent sequence), which still ring.
"""

from __future__ import annotations

import errno
import os
import stat

from agorad.surface import cjson
from agorad.surface.filenames import ROTATED_SUFFIX, file_generation

TYPE_CHECKING = False  # typing's, without importing typing
if TYPE_CHECKING:
    from pathlib import Path

_CHUNK = 1 << 16
_TAIL = 1 << 16
_LINE_MAX = 16 << 10  # bytes a notify line takes at most (title 200, preview 120 characters, escaped): under 6 KiB


class Follower:
    def __init__(self, path: str | Path):
        self.path = path
        self.rotated = os.fspath(path) + ROTATED_SUFFIX  # paths.rotated, as text: no pathlib in a listener
        self.fd: int | None = None
        self.inode: int | None = None
        self.generation: int | None = None  # the inode's, taken with its number (kept when the descriptor goes)
        self.pos = 0
        self.partial = b""
        self.last_id = 0
        self.missed = 0  # deliveries whose lines were rotated away before they were read
        self.pending: list[dict] = []  # lines read while arming (from .1 after a rotation)
        # Armed where the file did not exist yet: every line the name comes to hold is new, and so is a
        # `.1` found before the first read above the id armed on (the first file filled and rotated
        # meanwhile; a `.1` the hub keeps when it makes the name again holds lines from before the arm).
        # Rare: the hub makes a seat's file, empty, when it adds the seat (Notifier.create).
        # A first arm counts from the hub's newest id; with none (no hub answered), lines rotated out of
        # both files before the first read are neither rung nor counted.
        self.fileless = False
        self.unplaced: int | None = None  # while placeless: the id rung (a `.1` made since is read above it)
        # last_id 0 as the hub's word (a first arm asked it: the seat had no delivery yet), not "nothing known":
        # a gap before the first line read counts as missed. Saved as "zero": true, for the next run.
        self.zero_known = False

    # --- arming ---------------------------------------------------------------

    def arm(self, offset, newest: int | None = None) -> None:
        """Start from a saved offset: a dict, None (first arm: at the end) or "corrupt" (from the start).

        A dict whose inode is None was saved by a follower that had no file yet: this one has none either.
        `newest`, for a first arm: the id the seat's notify files have got to, as the hub said just before
        (None if it did not), counted from where the file under the name holds no line to go by.
        """
        if offset is None:
            self._arm_at_end(newest)
            return
        if offset == "corrupt":
            self.fileless = not self._open(self.path)
            return
        self.last_id = offset["id"]
        self.zero_known = offset["id"] == 0 and offset.get("zero") is True
        if offset["inode"] is None:  # saved with no file yet: all the name holds came since, a `.1` too (read_new)
            self.fileless = True
            return
        if _inode(self.path) == offset["inode"] and self._open(self.path) and self._holds_saved_file(offset):
            place = _place(self.fd, offset)  # (opened as looked at: not a file the name got in between)
            if place is not None:
                self.pos = place
                return
        # Rotated since: finish the old file (now .1) from where we were; if it was rotated
        # twice, re-read .1 from its start, skipping only ids already rung.
        if self._open(self.rotated):
            saved_file = self._holds_saved_file(offset)
            place = _place(self.fd, offset) if saved_file else None
            rung = 0  # read on from the place: nothing before it comes again
            if place is not None:
                self.pos = place
            elif saved_file and offset["pos"] == 0:
                pass  # saved at the start of this very file: none of it was read, all of it is new (the id may be
                      # another seat's: a listener alive across its seat's removal and re-add kept the old ids)
            else:
                rung = offset["id"]
                if _last_id_before(self.fd, os.fstat(self.fd).st_size) <= rung:
                    self.pos = _end_of_last_line(self.fd)  # ids ascend in a file: all of it rang, none to parse
            self.pending = self._read_lines(rung)
            self._close()
        if not self._open(self.path):  # the saved file gone and no file under the name (see _open_first)
            self.unplaced = self.last_id  # what was rung, the `.1` just read included
        else:  # (a file rotated between the look at `.1` and the open of the name is `.1` now)
            self.pending += self._read_rotated(self.last_id)

    def _holds_saved_file(self, offset: dict) -> bool:
        """Whether the open file is the one the place was saved in: its inode number, and its generation
        where both the place and the file system have one (a place saved before they were kept has none)."""
        if self.inode != offset["inode"]:
            return False
        saved = offset.get("gen")
        return saved is None or self.generation in (None, saved)

    def _arm_at_end(self, newest: int | None = None) -> None:
        """First arm: what the files hold now is old news. With no file under the name but a `.1` (a rotation
        under way, a file deleted or moved away), that is the end of `.1`: placed there with the name missing,
        as after a saved place whose file went, a `.1` made since is read skipping what `.1` held, then the
        name's file whole (`_open_first`). `.1` is looked at first (looked at after the name, it could be the
        first file, filled and rotated in between, its new lines taken for old ones), and held open until
        the name has been looked at: if `.1` is not the same file then (a rotation between the looks), or
        is there only then, the arm looks again."""
        while True:
            kept = _open_or_none(self.rotated)
            try:
                if self._open(self.path):
                    self.pos = _end_of_last_line(self.fd)  # a line half written is new: read it once it is whole
                    self.last_id = _last_id_before(self.fd, self.pos)  # same descriptor, same bytes: no race
                    if self.pos == 0:  # an empty file (a restore leaves one, its history in `.1`): `.1` now is old
                        from agorad.surface.notifyfile import last_id_in  # news too (not `kept`: one made since
                                                                          # came first); imported only here
                        # With no line there either, the hub's newest: so a first file rotated out of both
                        # before a later run read it counts as missed (the add makes the file empty; from 0,
                        # deliveries a power cut or a --notify-dir change left out of the files would count)
                        self.last_id = max(last_id_in(self.rotated) or 0, newest or 0)
                        self.zero_known = newest == 0 and self.last_id == 0
                    return
                now = _inode(self.rotated)
                if kept is None and now is None:  # no file at all (deleted by hand, a seat added while the
                    self.fileless = True          # hub wrote none): count from the hub's newest, as above
                    self.last_id = newest or 0
                    self.zero_known = newest == 0
                    return
                if kept is not None and now == os.fstat(kept).st_ino:  # held open: no other file has its number
                    self.inode, self.generation, self.pos = now, file_generation(kept), _end_of_last_line(kept)
                    self.last_id = self.unplaced = _last_id_before(kept, self.pos)
                    return
            finally:
                if kept is not None:
                    os.close(kept)

    # --- reading --------------------------------------------------------------

    def read_new(self) -> list[dict]:
        """Every complete new line (as dicts), following a rotation if the name moved on.

        Lines rotated out of both generations before they were read cannot be
        returned; their number is added to `missed`, so they still ring.
        """
        lines, self.pending = self.pending, []
        if self.fd is None:
            lines += self._open_first()
        if self.fd is not None:
            lines += self._read_lines()
            current = _inode(self.path)
            if current is not None and current != self.inode:
                lines += self._read_lines()  # drain the old file, then follow the name
                self._close()
                if self._open(self.path):  # a file between the two, rotated twice meanwhile, is `.1` now
                    lines += self._read_rotated(self.last_id)
                    lines += self._read_lines()
            elif current is None:  # the name between two files: one rotated since the followed one is `.1`
                lines += self._read_rotated(self.last_id, finished=True)
        return lines

    def _open_first(self) -> list[dict]:
        """Open the file under the name, to read from its start, after a `.1` the follower has not read:

        - armed on a place whose file was gone, with no file under the name: the hub, making the name again,
          first puts what the lost file held and this listener may not have read into a new `.1`
          (runtime/notify_lost.py), read skipping what was rung;
        - armed with no file: the first file, filled and rotated before this read, read whole (a later gap
          between its last id and the next file's first counts as missed, as after any rotation), but for
          ids up to the one a place saved with no file had rung (the hub may since have put a line the
          listener rang in a `.1`, runtime/notify_lost.py);
        - otherwise (the name was missing when the follower last looked): a file rotated meanwhile, past
          the one it finished.

        The name is opened before `.1` is looked at, and stays open while `.1` is read: in the other order
        the file under the name could rotate in between, its lines then lost to the follower.
        """
        current = self.inode if self._open(self.path) else None
        if self.unplaced is not None:
            if current is None:
                return []
            rung, self.unplaced = self.unplaced, None
            return self._read_rotated(rung)
        if self.fileless:
            lines = self._read_rotated(self.last_id)
            self.fileless = current is None and not lines
            return lines
        return self._read_rotated(self.last_id) if current is not None else []

    def _read_rotated(self, rung: int, finished: bool = False) -> list[dict]:
        """`.1`'s lines with ids above `rung`, through a descriptor of its own: the followed file's stays open
        where it was, so a rotation meanwhile moves that file, not its lines away from the follower.

        Nothing when `.1` is the followed file, or holds no id above `rung` (a file read already, whatever
        its inode number: ext4 hands a freed one to the next new file). Unless the followed file is
        `finished` (drained, and no longer under the name), only `.1`'s lines below the followed file's
        first, which it is read after: the lines from there on are the followed file's, or come after it and
        are reached by following the name (a `.1` the hub kept after a deletion may hold both kinds,
        runtime/notify_lost.py). A followed file still empty once `.1` is open has not rotated: `.1` is older."""
        followed = self.fd, self.inode, self.generation, self.pos, self.partial
        if followed[0] is not None and _inode(self.rotated) == followed[1]:
            return []
        self.fd = None
        try:
            if not self._open(self.rotated) or self.inode == followed[1]:
                return []
            if _last_id_before(self.fd, os.fstat(self.fd).st_size) <= rung:
                return []
            first = None if finished or followed[0] is None else _first_id(followed[0])
            return self._read_lines(rung, below=first)
        finally:
            self._close()
            self.fd, self.inode, self.generation, self.pos, self.partial = followed

    def offset(self) -> dict:
        """Where the next instance should resume: the start of any incomplete line."""
        place = {"inode": self.inode, "pos": self.pos - len(self.partial), "id": self.last_id}
        if self.inode is not None and self.generation is not None:  # none where the file system keeps none
            place["gen"] = self.generation
        if self.zero_known and self.last_id == 0:
            place["zero"] = True  # (a reader that does not know the key counts nothing: as before)
        return place

    def _read_lines(self, rung: int = 0, below: int | None = None) -> list[dict]:
        """The open file's complete lines from the read position on, but for ids up to `rung` (a file read
        again from its start: those rang already) and from `below` on (another file's, read next)."""
        if self.pos and os.fstat(self.fd).st_size < self.pos:  # emptied under the reader (by hand, or a
            self.pos, self.partial = 0, b""                    # copytruncate): what it holds now is new
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
            if line is None or line["id"] <= rung or (below is not None and line["id"] >= below):
                continue
            if (self.last_id or self.zero_known) and line["id"] > self.last_id + 1:
                self.missed += line["id"] - self.last_id - 1  # ids are gapless per agent
            self.last_id = line["id"]
            found.append(line)
        return found

    def _open(self, path: str | Path) -> bool:
        self._close()
        self.fd = _open_or_none(path)
        if self.fd is None:
            return False
        self.inode, self.generation = os.fstat(self.fd).st_ino, file_generation(self.fd)
        self.pos, self.partial = 0, b""
        return True

    def _close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def close(self) -> None:
        self._close()


def _inode(path: str | Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except FileNotFoundError:
        return None


def _parse(raw: bytes) -> dict | None:
    if raw.lstrip(b" \t\r")[:1] != b"{":  # not a line: the piece after the last newline, one cut at the front
        return None  # (and cjson imports json to word an error: the armed listener does not load it)
    try:
        line = cjson.loads(raw)
    except (ValueError, RecursionError):  # not a line the hub wrote (it nests nothing that deep): skipped
        return None
    if not isinstance(line, dict) or not isinstance(line.get("id"), int) or isinstance(line.get("id"), bool):
        return None
    if not isinstance(line.get("channel"), str):
        return None
    line["flags"] = [f for f in line.get("flags", []) if isinstance(f, str)] if isinstance(line.get("flags"), list) else []
    return line


def _place(fd: int, offset: dict) -> int | None:
    """Where to resume in the open file, whose inode number the offset names: just past the line of the
    saved id, at the saved byte offset or a little after it; None when the file does not hold that line.

    Asked only of a file whose generation agrees with the place's, or where either has none (tmpfs, a place
    saved before generations were kept): there the inode number alone names the file. One rotated out of
    both generations frees its number, and a later file under the name may get it (it holds only newer
    lines); a power cut's reconciliation rewrites a file as a new one (runtime/notify_reconcile.py), which
    may get the number of one it replaced, without the lines the database lost. Resuming at the byte offset
    in such a file would pass lines the listener never rang; without the saved line there, the caller reads
    `.1` skipping what it rang and the file from its start instead (wakes again, never fewer). The line ends after the offset,
    by less than a line, only after a replay ended a torn line: the lines from there on are the same,
    shifted later by the torn bytes. A place saved at 0 (an empty file) holds no line to check: the
    caller's re-read of `.1` skips by id what the listener had as old news."""
    pos, last = offset["pos"], offset["id"]
    if pos <= 0 or last <= 0:
        return None
    if pos <= os.fstat(fd).st_size and os.pread(fd, 1, pos - 1) == b"\n" and _last_id_before(fd, pos) == last:
        return pos  # the usual case: two small reads
    start = max(0, pos - _LINE_MAX)
    at = start
    for raw in os.pread(fd, 2 * _LINE_MAX, start).split(b"\n")[:-1]:  # whole lines only
        at += len(raw) + 1
        if pos < at <= pos + _LINE_MAX:
            line = _parse(raw)
            if line is not None and line["id"] == last:
                return at
    return None


def _open_or_none(path: str | Path) -> int | None:
    """The file under `path` open for reading; None when there is none, or something that is no file (a
    FIFO put there, a socket) until the hub's next file replaces it: filenames.open_regular's rule, with
    this module's own `os` (tests/test_follow.py acts between the follower's looks through it)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)  # a FIFO's plain open waits for a writer
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket
            return None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def _first_id(fd: int) -> int | None:
    """The id of the open file's first complete line; None if it has none yet."""
    head = os.pread(fd, _LINE_MAX, 0)
    for raw in head.split(b"\n")[:-1]:
        line = _parse(raw)
        if line is not None:
            return line["id"]
    return None


def _end_of_last_line(fd: int) -> int:
    """The offset just past the file's last newline: where a half-written line would start."""
    size = os.fstat(fd).st_size
    tail = os.pread(fd, min(size, _TAIL), max(0, size - _TAIL))
    return size - len(tail.rsplit(b"\n", 1)[-1]) if b"\n" in tail else (0 if size <= _TAIL else size)


def _last_id_before(fd: int, pos: int) -> int:
    """The id of the last complete line before `pos` in the open file."""
    tail = os.pread(fd, min(pos, _TAIL), max(0, pos - _TAIL))
    for raw in reversed(tail.split(b"\n")):
        line = _parse(raw)
        if line is not None:
            return line["id"]
    return 0
