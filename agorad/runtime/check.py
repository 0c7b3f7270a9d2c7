"""`agora check`: is the database sound, and do the notify files and listeners' offsets agree with it?

Everything here only reads, so it runs beside a live hub: its own connection sees one committed
state, and leaves no file behind (`_reader`). The notify files are read after that state, so a file
may end past it by what the hub stored since: such a file is judged against a read made after it
(`_stored_since`). A delivery whose line was still being written when its file was read can show
as a file one line behind; run it again before acting on that alone.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import apsw

from agorad.store import integrity, snapshot
from agorad.store.connection import BUSY_TIMEOUT_MS, sqlite_path
from agorad.store.migrations import available
from agorad.surface.errors import AgoraError
from agorad.surface.filenames import file_generation, read_regular
from agorad.surface.notifyfile import last_id_in
from agorad.surface.paths import Home, listen_file, notify_file, rotated
from agorad.surface.places import is_place


def check(home: Home, notify_dir: Path | None, quick: bool = False) -> dict:
    """The report: `ok`, the database's `integrity` problems and `schema`, and one entry per seat."""
    if not home.db.is_file():
        raise AgoraError(f"no database at {home.db}")
    seats: list[dict] = []
    try:
        db = _reader(home)
        try:
            found = integrity.problems(db, quick)
            version = integrity.schema_version(db)
            marks = snapshot.summary(db)["last_delivery_id"] if version is not None else {}
            stored = _stored_marks(db) if version is not None else {}
            newest_now = _newest_now(db)
            seats = [_seat(home, notify_dir, agent, last, stored.get(agent), newest_now)
                     for agent, last in marks.items()]
        finally:
            db.close()
    except apsw.Error as exc:
        found, version, unread = [f"cannot read the database: {exc}"], None, True
    else:
        unread = False
    newest = max(number for number, _, _ in available())
    if version is None:
        if not unread:  # a file that could not be read says nothing of its tables
            found.append("not an Agora database (its tables are missing)")
    elif version > newest:
        found.append(f"schema {version} is newer than this agora knows ({newest})")
    return {"ok": not found and not any(seat["problems"] for seat in seats), "database": str(home.db),
            "integrity": found, "schema": version, "notify_dir": str(notify_dir) if notify_dir else None,
            "seats": seats}


def _newest_now(db: apsw.Connection):
    """A seat's newest delivery id as the database holds it now, in a read of its own (each statement
    outside a transaction sees the newest commit): a file read after the report's first read may be
    ahead of that read by the deliveries a live hub stored since, and is only ahead of the database
    if it is ahead of a read made after the file's."""
    if db.execute("SELECT 1 FROM sqlite_schema WHERE name = 'delivery_heads'").fetchone() is None:
        newest = "SELECT MAX(d.id) FROM deliveries d JOIN agents a ON a.pk = d.agent_pk WHERE a.id = ?"
    else:  # (a copy from before migration 0009 has no heads)
        newest = "SELECT h.last_id FROM delivery_heads h JOIN agents a ON a.pk = h.agent_pk WHERE a.id = ?"

    def now(agent: str) -> int:
        found = db.execute(newest, (agent,)).fetchone()
        return (found[0] if found else None) or 0
    return now


def _reader(home: Home) -> apsw.Connection:
    """A connection that only reads. Read-only, unless the database has no -wal and -shm beside it (no
    hub runs, and the last one closed cleanly): a read-only connection would make both and leave them
    behind, empty; a read-write one that only reads removes them when it closes, as the last
    connection (with a hub started meanwhile it is not the last, and the hub's stay)."""
    if any(companion.exists() for companion in home.db_files[1:]):
        return snapshot.open_readonly(home.db)
    db = apsw.Connection(sqlite_path(home.db), flags=apsw.SQLITE_OPEN_READWRITE)  # never creates the file
    db.setbusytimeout(BUSY_TIMEOUT_MS)
    return db


def _stored_marks(db: apsw.Connection) -> dict[str, int]:
    """{agent: the last id the hub stored as written to its notify file} (`agents.notified_upto`, which the
    sweep and a clean stop store): a start with no line to go by replays from there."""
    try:
        return dict(db.execute("SELECT id, notified_upto FROM agents"))
    except apsw.SQLError:  # a copy from before the column
        return {}


def _seat(home: Home, notify_dir: Path | None, agent: str, last: int, stored: int | None = None,
          newest_now=None) -> dict:
    entry = {"agent": agent, "database_id": last, "file_id": None, "offset": None, "problems": [], "notes": []}
    if notify_dir is not None:
        path = notify_file(notify_dir, agent)
        entry["file_id"] = _last_id(path)
        if not _stored_since(entry, newest_now):
            _compare_file(entry, path, stored)
        _judge_offset(entry, home, path)
    return entry


def _stored_since(entry: dict, newest_now) -> bool:
    """Whether a file ahead of the report's first read is not ahead of the database read after it: a live hub
    stored those deliveries in between (and the file may lag that read: it was read before). The entry then
    shows the newer read."""
    if newest_now is None or entry["file_id"] is None or entry["file_id"] <= entry["database_id"]:
        return False
    now = newest_now(entry["agent"])
    if entry["file_id"] > now:
        return False
    entry["database_id"] = now
    return True


def _last_id(path: Path) -> int | None:
    found = last_id_in(path)
    return found if found is not None else last_id_in(rotated(path))


def _compare_file(entry: dict, path: Path, stored: int | None = None) -> None:
    on_disk, last = entry["file_id"], entry["database_id"]
    inbox = f"no mail is lost: `agora inbox --as {entry['agent']}` shows it"
    # With no line to go by and no place saved, a start replays after the stored mark: all of the lines when
    # the hub stopped before it stored one (a crash before its first sweep, or before the seat's first line).
    unsaved = f"the lines after id {stored}, the last the hub stored as written"
    replays = stored is not None and stored < last
    if on_disk is None and last and not (path.exists() or rotated(path).exists()):
        # Deleted while no hub ran (a running one makes the file again at once, runtime/notify_lost.py).
        otherwise = f"with {unsaved}" if replays else "the seat's next delivery does"
        entry["problems"].append(f"{path} is missing; the database has deliveries up to id {last} ({inbox}; the "
                                 "next start makes the file again with what the seat's listener had not read if it "
                                 f"saved a place, else {otherwise})")
    elif on_disk is None and last:  # emptied by hand (or made empty at the add, the hub stopping before line 1)
        otherwise = f", or else {unsaved}" if replays else ""
        entry["problems"].append(f"{path} holds no line; the database has deliveries up to id {last} ({inbox}; "
                                 "wakes its listener had not read are lost if a running hub held the file, else the "
                                 f"next start writes them again if it saved a place{otherwise}; new lines come all "
                                 "the same)")
    elif on_disk is not None and on_disk < last:
        entry["problems"].append(f"{path} ends at id {on_disk}, the database at {last} "
                                 "(the hub fills the file in at its next start or sweep)")
    elif on_disk is not None and on_disk > last:
        entry["problems"].append(f"{path} goes to id {on_disk}, past the database's {last}: its lines "
                                 "above it name deliveries the database does not hold")


def _judge_offset(entry: dict, home: Home, path: Path) -> None:
    """Where the seat's listener will resume (listen-<id>.offset, agora-files(5)), against the files."""
    offset_file = listen_file(home.root, entry["agent"], "offset")
    try:
        offset = json.loads(read_regular(offset_file))
    except FileNotFoundError:
        return
    except (OSError, ValueError, RecursionError):  # RecursionError: nested past the parser's depth
        offset = None
    if not is_place(offset):
        entry["problems"].append(f"{offset_file} is not an offset (the next listener reads the file from its start)")
        return
    entry["offset"] = offset
    if offset["inode"] is None:
        entry["notes"].append(_fileless_note(offset))
        return
    for candidate in (path, rotated(path)):
        size = _size_if_saved(candidate, offset)
        if size is not None:
            if offset["pos"] > size:
                entry["problems"].append(f"offset {offset['pos']} is past the end of {candidate} ({size} bytes)")
            return
    entry["notes"].append(f"offset names a file that is gone (inode {offset['inode']}): the next listener reads "
                          f"{rotated(path).name} skipping ids up to {offset['id']}, then {path.name} whole")


def _fileless_note(offset: dict) -> str:
    """A place with no file (agora-files(5)): the seat's start, or the hub's newest id at a first arm."""
    if offset["id"] == 0 and offset.get("zero") is True:  # as the hub writes it at an add, too
        return "offset at the seat's start (no notify file yet): the next listener reads its files whole"
    above = f" above id {offset['id']}" if offset["id"] else ""
    return f"offset saved with no notify file: the next listener reads the first file whole, and a .1 it rotated to{above}"


def _size_if_saved(path: Path, offset: dict) -> int | None:
    """The size of the file at `path` if it is the one the place was saved in, else None: its inode number
    agrees and, where both have one, its generation (a freed number is handed to the next new file, with a
    new generation: agora-files(5)). One open for both, so they are of one file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)  # not to hang on a FIFO put there
    except FileNotFoundError:
        return None
    except OSError:  # not to be opened (a socket, no read permission): judged by its number alone
        try:
            info = os.stat(path)
        except FileNotFoundError:
            return None
        return info.st_size if info.st_ino == offset["inode"] else None
    try:
        info = os.fstat(fd)
        if info.st_ino != offset["inode"]:
            return None
        return info.st_size if offset.get("gen") is None or file_generation(fd) in (None, offset["gen"]) else None
    finally:
        os.close(fd)
