"""Notify files against the database at start-up, after a power cut (or a restored database).

The hub appends a line only after its delivery's COMMIT returned, but it never
fsyncs a notify file. At synchronous=FULL a committed delivery is on disk, so
after a power cut a file can only lack lines, or end in a torn one. Replay
(`Notifier.start`) then ends the torn line with a newline and appends the
rest from the database, each line byte for byte what it was (a line is a
function of its stored row). What follows a saved byte offset is then the
file as it was, shifted later by the torn bytes: a listener resumes at or
before the first line it never read, re-reading at worst a fragment (skipped)
and lines it rang. Cutting the torn tail instead would keep the bytes in
place, but a listener still running (a hub restarted after a short write,
with no power cut) holds the torn bytes as its partial line and would glue
them to the next line. Below FULL (or with a restored database)
the file, or a listener's saved offset, can also name deliveries the database
lost; the database then hands those ids out again. Two things keep that from
hiding mail:

- The seat's id floor (`agents.notified_upto`) is raised to the highest id any
  file or offset showed, and new deliveries are numbered above it
  (store/messages.MARKS). A listener re-reading a `.1` skips ids at or below
  its saved id (agora_listen/follow.py): a reused id there would be skipped.
- The file is rewritten without the lost lines as a new file (a new inode).
  A saved offset names the old inode, so the listener re-reads the file from
  its start: the lines it had rung ring again (more wakes), and none it never
  saw can sit behind a byte offset that no longer means anything.

Chosen over trimming in place: a trimmed file grows back past a listener's old
byte offset with different lines, and the listener would resume in the middle
of them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from agorad.surface.filenames import ROTATED_SUFFIX, NotRegularFile, read_regular, write_private
from agorad.surface.notifyfile import MAX_FILE_ID, is_file_id, last_id_in
from agorad.surface.paths import rotated


class Survey:
    """What one agent's files and saved listener offset show, against the database's newest id."""

    def on_disk(self) -> int | None:
        """The id the agent's notify lines have got to: the file's last, else its `.1`'s; None if neither."""
        return self.last_ids[0] if self.last_ids[0] is not None else self.last_ids[1]

    def rung_past_files(self) -> int | None:
        """The id the listener saved as rung when it is past `.1`'s last line while the name holds no whole
        line (no file, an empty one, a torn line, zeros): the file it read is gone (`Notifier._replay_after_rung`).
        None otherwise."""
        if self.last_ids[0] is None and self.offset_id > (self.last_ids[1] or 0) and self.newest:
            return self.offset_id
        return None

    def __init__(self, path: str, offset_file: str | None, newest: int, floor: int,
                 present: tuple[bool, bool] = (True, True)):
        """`path`: the notify file; `present`: whether it and its `.1` exist, when the caller listed the
        directory (a file known absent is not opened: start-up surveys every seat)."""
        self.path = path
        self.newest = newest
        self.last_ids = (last_id_in(path) if present[0] else None,  # the file's, its `.1`'s
                         last_id_in(path + ROTATED_SUFFIX) if present[1] else None)
        self.file_ids = [i for i in self.last_ids if i is not None]
        self.offset_id = saved_id(offset_file)
        shown = max([i for i in (*self.file_ids, self.offset_id) if i <= MAX_FILE_ID], default=0)
        # Lines naming deliveries the database lacks; or a listener that saw ids above both the
        # database and a floor already raised for them (a floor raised before needs no new file).
        self.ahead = max(self.file_ids, default=0) > newest or self.offset_id > max(newest, floor)
        self.floor = max(shown, floor) if self.ahead else floor


def rewrite_without_lost(survey: Survey) -> int:
    """Rewrite the files so no line names a delivery above the database's newest id, the file
    under the name always as a new inode (see the module docstring); return the lines dropped.
    The survey's `last_ids` then say what the files hold now."""
    dropped, named = 0, Path(survey.path)
    for path in (rotated(named), named):
        try:
            data = read_regular(path, limit=None)
        except FileNotFoundError:
            continue
        except NotRegularFile:  # (a FIFO put there) no lines; under the name, a file replaces it below
            data = b""
        lines = [line for line in data.split(b"\n") if line]
        kept = [line for line in lines if 0 < (_id(line) or 0) <= survey.newest]
        dropped += len(lines) - len(kept)
        if path == named or len(kept) < len(lines):
            write_private(path, b"".join(line + b"\n" for line in kept).decode("ascii"))
    _sync_directory(named.parent)
    survey.last_ids = (last_id_in(named), last_id_in(rotated(named)))
    return dropped


def _id(line: bytes) -> int | None:
    try:
        value = json.loads(line)["id"]
    except (ValueError, KeyError, TypeError, RecursionError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def saved_id(offset_file: str | None) -> int:
    """The delivery id a listener's saved offset (listen-<id>.offset) says it has rung; 0 if none."""
    return rung_id(offset_file) or 0


def rung_id(offset_file: str | None) -> int | None:
    """As `saved_id`, but None when no place says an id, and 0 only for a place saved at 0 as the hub's
    word (`"zero": true`, agora-files(5)): a seat with no delivery when its listener first armed."""
    if offset_file is None:
        return None
    try:
        place = json.loads(read_regular(offset_file))
        value = place.get("id")
    except (OSError, ValueError, AttributeError, RecursionError):  # a deep nest stopped the start
        return None
    if is_file_id(value):
        return value
    return 0 if value == 0 and type(value) is int and place.get("zero") is True else None


def _sync_directory(directory: Path) -> None:
    """The renames must outlive another cut: they are what invalidates the old offsets."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
