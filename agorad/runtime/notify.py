"""Notify files: one JSON line per delivery in `<dir>/<agent>-inbox.log`, crash-safe.

Lines are written whole, one or several per write(2) on an O_APPEND
descriptor, after the deliveries are committed. Delivery ids count up per
agent, so the file says exactly which deliveries it holds: at start-up, and
whenever a write failed, the writer appends what the database has beyond the
file's last id. A crash between COMMIT and write therefore costs a delay,
never a line, and never a duplicate. The file rotates to `.1` before a write
would take it past the rotation size.
"""

from __future__ import annotations

import errno
import os
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path

import apsw

from agorad.domain.delivery import Deliveries
from agorad.runtime.helper import Helper
from agorad.surface.fence import one_line, preview
from agorad.runtime.log import log
from agorad.runtime.notify_dir import MIN_OPEN_FILES, tighten
from agorad.runtime.notify_reconcile import Survey, rewrite_without_lost
from agorad.store import messages as sql
from agorad.store import write
from agorad.surface import filenames
from agorad.surface.paths import notify_file, rotated
from agorad.surface.protocol import encode_text as _text

_OPEN_FLAGS = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW  # (filenames.open_regular: never a FIFO)


def line_fields(row: dict) -> dict:
    """The contract fields (agora-files(5) "NOTIFY FILES") of one delivery row; also what a push carries."""
    flags = row["flags"].split(",") if isinstance(row["flags"], str) else list(row["flags"])
    return {
        "v": 1, "id": row["id"], "ts": row["ts"], "agent": row["agent"], "channel": row["channel"],
        "seq": row["seq"], "sender": row["sender"], "title": one_line(row["title"], 200),
        "flags": [f for f in flags if f], "preview": row.get("preview") or preview(row["body"]), "owed": row["owed"],
    }


def notify_line(row: dict) -> bytes:
    """`encode(line_fields(row))`: compact, ASCII, one line (the wire's own frame codec), formatted
    directly because it runs once per delivery: half the cost of building the dict and encoding it.
    A test holds the two to the same bytes."""
    flags = row["flags"]
    return (
        f'{{"v":1,"id":{row["id"]},"ts":{row["ts"]!r},"agent":{_text(row["agent"])},'
        f'"channel":{_text(row["channel"])},"seq":{row["seq"]},"sender":{_text(row["sender"])},'
        f'"title":{_text(one_line(row["title"], 200))},'
        f'"flags":{(_FLAG_ARRAYS.get(flags) or _flag_array(flags)) if type(flags) is str else _flag_array(flags)},'
        f'"preview":{_text(row.get("preview") or preview(row["body"]))},"owed":{row["owed"]}}}\n'
    ).encode()


def notify_lines(rows: list[dict]) -> list[bytes]:
    return [notify_line(row) for row in rows]


def line_template(event: dict) -> bytes:
    """The notify line every delivery of one event shares, with `%d` for the id, `%s` for the agent
    and the flags (JSON, as bytes) and `%d` for owed: a fan-out formats the timestamp's repr, channel,
    sender, title and preview once (~3 us a line each time, the repr alone ~1 us), then one `%` a member."""
    def shared(text: str) -> bytes:
        return text.encode().replace(b"%", b"%%")
    return (b'{"v":1,"id":%d' + shared(f',"ts":{event["ts"]!r},"agent":') + b"%s"
            + shared(f',"channel":{_text(event["channel"])},"seq":{event["seq"]},"sender":{_text(event["sender"])},'
                     f'"title":{_text(one_line(event["title"], 200))},"flags":') + b"%s"
            + shared(f',"preview":{_text(event.get("preview") or preview(event["body"]))},"owed":') + b"%d}\n")


_FLAG_ARRAYS: dict[str, str] = {}  # a delivery's flags text -> its JSON array; a few dozen at most
_FLAG_BYTES: dict[str, bytes] = {}  # ... and as bytes, for line_template


def _flag_array(flags: str | list) -> str:
    """The JSON array of a delivery's flags (a comma-separated text, or a list), remembered for a text:
    flags come from a small vocabulary (vocab.FLAGS), so a line need not split and escape them."""
    parts = flags.split(",") if isinstance(flags, str) else flags
    text = f'[{",".join([_text(f) for f in parts if f])}]'
    if isinstance(flags, str) and len(_FLAG_ARRAYS) < 256:
        _FLAG_ARRAYS[flags] = text
    return text


def _flag_bytes(flags: str) -> bytes:
    found = _FLAG_BYTES.get(flags)
    if found is None:
        found = _flag_array(flags).encode()
        if len(_FLAG_BYTES) < 256:
            _FLAG_BYTES[flags] = found
    return found


class _OpenFile:
    __slots__ = ("fd", "size", "agent")

    def __init__(self, fd: int, size: int, agent_id: str):
        self.fd = fd
        self.size = size  # bytes, counted as written: the rotation check needs no fstat
        self.agent = _text(agent_id).encode()  # the line's "agent" value, for line_template


class Notifier:
    """Appends delivery lines per agent and knows how far each file has got."""

    def __init__(self, directory: Path | None, rotate_bytes: int = 8 << 20, seats: Path | None = None,
                 open_files: int = MIN_OPEN_FILES, helper: Helper | None = None):
        self.directory = directory
        self.open_files = max(MIN_OPEN_FILES, open_files)  # descriptors kept open, least recent closed first
        self.seats = seats  # the home, where listeners save their offsets (start-up reads them)
        self.rotate_bytes = rotate_bytes
        self.written: dict[int, int] = {}  # agent pk -> last delivery id in its file
        self.stored: dict[int, int] = {}   # agent pk -> the `written` the database holds as notified_upto
        self.behind: set[int] = set()      # agents whose last write failed
        self._failure_said: set[int] = set()  # agents whose failing writes were logged, until a catch-up succeeds
        self._files: OrderedDict[str, _OpenFile] = OrderedDict()  # agent id -> open file, least recent first
        self.helper = helper or Helper()
        self._is_home = True  # until start() has looked: a directory not known to be another is not made again
        self._directory_failed = False  # `notify-dir-failed` said since the last time it was made
        # Called (from the thread that made it) when `restore_directory` made the directory again: the hub's
        # watch of it is to move to the new one.
        self.on_directory_made: Callable[[], None] | None = None
        # Called with (agent pk, agent id) before a file under a seat's name is opened that is missing or empty:
        # the hub's keeps what a file that left the name held and a listener had not read (notify_lost.py).
        # True when `.1` ends at `written` (so start-up can rely on it), False when it could not be made to.
        self.on_empty_file: Callable[[int, str], bool] | None = None

    @property
    def enabled(self) -> bool:
        return self.directory is not None

    def path(self, agent_id: str) -> Path:
        return notify_file(self.directory, agent_id)

    def start(self, db: apsw.Connection) -> int:
        """Reconcile each file with the database (runtime/notify_reconcile.py), learn where it has got,
        and append what the database holds beyond it; return lines replayed."""
        if not self.enabled:
            return 0
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        tighten(self.directory)
        self._is_home = self.seats is not None and os.path.samefile(self.directory, self.seats)
        replayed = 0
        for pk, agent_id, newest, notified_upto, on_disk, rung in self._reconciled(db):
            self.written[pk] = on_disk if on_disk is not None else min(notified_upto, newest)
            if rung is not None:
                self._replay_after_rung(pk, agent_id, min(rung, newest))
            if newest > self.written[pk]:
                replayed += self.catch_up(db, pk)
        if replayed:
            log("notify-replayed", lines=replayed)
        return replayed

    def _reconciled(self, db: apsw.Connection) -> list[tuple[int, str, int, int, int | None, int | None]]:
        """Every seat's (pk, agent id, newest id, floor, the id its notify lines have got to or None, the id its
        listener rang from a file no longer under the name or None: `Survey.rung_past_files`), once no file
        names a delivery the database lacks. Floors are stored (and checkpointed, so even NORMAL keeps
        them) before any file is rewritten: a cut in between then finds the files still ahead and does it
        again. A seat with no notify file and no saved offset has nothing to survey: one listing of each
        directory says so (at 10,000 seats, opening each one's absent files was most of a second)."""
        marks = sql.seat_marks(db)
        notify_names = _names_in(self.directory)
        offset_names = _names_in(self.seats) if self.seats is not None else set()
        surveys = {}
        for pk, agent_id, newest, floor in marks:
            found = self._files_of_seat(agent_id, newest, notify_names, offset_names)
            if found is not None:
                path, offset, present = found
                surveys[pk] = Survey(path, offset, newest, floor, present)
        ahead = {pk: survey for pk, survey in surveys.items() if survey.ahead}
        if ahead:
            with write(db):
                sql.set_notified_upto(db, {pk: survey.floor for pk, survey in ahead.items()})
            db.execute("PRAGMA wal_checkpoint(FULL)").fetchall()
        for pk, survey in ahead.items():
            dropped = rewrite_without_lost(survey)
            log("notify-reconciled", path=survey.path, dropped=dropped, database_id=survey.newest, floor=survey.floor)
        reconciled = []
        for pk, agent_id, newest, floor in marks:
            survey = surveys.get(pk)
            reconciled.append((pk, agent_id, newest, floor, None, None) if survey is None else
                              (pk, agent_id, newest, survey.floor, survey.on_disk(), survey.rung_past_files()))
        return reconciled

    def _replay_after_rung(self, pk: int, agent_id: str, rung: int) -> None:
        """A seat whose listener rang lines from a file no longer under the name (deleted, emptied or torn
        while no hub ran): the replay starts after the line it rang, not after `.1`'s last (it rang those
        again), nor at the stored mark (a file that was alone got nothing back: its lines were behind it).
        `on_empty_file` first ends `.1` at that line (notify_lost.keep_unread), so the files hold every line
        from `.1`'s first on; a listener reads `.1` skipping what it rang, then the name's file whole, and one
        still holding the lost file follows the name to the same lines. If `.1` cannot be written (a full
        disk), the replay after `.1` stands: wakes again, but no line missing from the files."""
        if self.on_empty_file is None:
            return
        replay_from, self.written[pk] = self.written[pk], rung
        if not self.on_empty_file(pk, agent_id):
            self.written[pk] = replay_from

    def _files_of_seat(self, agent_id: str, newest: int, notify_names: set[str], offset_names: set[str]):
        """(notify file, offset file or None, (file there, `.1` there)) of a seat with any of the three in
        those listings, as Survey takes them; None for a seat with none, or with only the empty file its add
        made (`create`) and no delivery: a stat, not the survey's open and reads (at 10,000 such seats,
        174 ms of start-up against 38 ms with no files)."""
        name = os.path.basename(filenames.notify_file("", agent_id))
        present = (name in notify_names, name + filenames.ROTATED_SUFFIX in notify_names)
        offset = filenames.listen_file(os.fspath(self.seats), agent_id, "offset") if self.seats is not None else None
        saved = offset is not None and os.path.basename(offset) in offset_names
        if not (present[0] or present[1] or saved):
            return None
        path = filenames.notify_file(os.fspath(self.directory), agent_id)
        if newest == 0 and not (present[1] or saved) and _missing_or_empty(path):
            return None  # only the empty file its add made
        return path, offset if saved else None, present

    def unstored(self) -> dict[int, int]:
        """The marks in `written` the database does not hold yet: what a sweep stores (at 10,000 seats,
        storing them all was 10,000 UPDATEs a sweep, 9 of its 11 ms). `stored` learns them after COMMIT."""
        stored = self.stored
        return {pk: upto for pk, upto in self.written.items() if stored.get(pk) != upto}

    def write_all(self, db: apsw.Connection, events: Sequence[dict]) -> None:
        """Append one batch's committed deliveries (one event's `Deliveries`, or rows of any agents,
        each agent's in id order): each agent's lines in one write."""
        if not self.enabled or not events:
            return
        if len(events) == 1:  # a DM's: no grouping
            row = events[0]
            self.write(db, row["agent_pk"], [row])
            return
        if isinstance(events, Deliveries):
            self._fan_out(db, events)
            return
        by_agent: dict[int, list[dict]] = {}
        for row in events:
            by_agent.setdefault(row["agent_pk"], []).append(row)
        for agent_pk, rows in by_agent.items():
            self.write(db, agent_pk, rows)

    def _fan_out(self, db: apsw.Connection, deliveries: Deliveries) -> None:
        """One line for each of many agents, each from the event's `line_template`. A file that is open,
        next in line and far from rotating takes its line in one `Helper.write_each` for them all (two
        threads for a big channel, helper.py); the rest take `write`, after those writes, so that a file
        it opens cannot close one still to be written (a post to 1,000 members paid ~2 us a member in
        calls around its write)."""
        prepared = deliveries.lines
        template = line_template(deliveries.event) if prepared is None else b""
        files, written, behind, rotate = self._files, self.written, self.behind, self.rotate_bytes
        ready: list[tuple[_OpenFile, bytes, int, int, str]] = []  # (file, line, agent pk, delivery id, agent id)
        rest: list[tuple[int, bytes | None]] = []  # (index, its line if made) for `write`
        for index, (pk, agent_id, delivery_id, flags, owed) in enumerate(deliveries.recipients):
            opened = files.get(agent_id)
            if opened is None or pk in behind or written.get(pk, 0) + 1 != delivery_id:
                rest.append((index, None if prepared is None else prepared[index]))
                continue
            if prepared is None:
                line = template % (delivery_id, opened.agent, _FLAG_BYTES.get(flags) or _flag_bytes(flags), owed)
            else:
                line = prepared[index]
            if rotate and opened.size and opened.size + len(line) > rotate:
                rest.append((index, line))
                continue
            files.move_to_end(agent_id)
            ready.append((opened, line, pk, delivery_id, agent_id))
        results = self.helper.write_each([(opened.fd, line) for opened, line, _, _, _ in ready])
        failed = []  # handled after every line written is counted: a failure's handling cannot lose the count
        for (opened, line, pk, delivery_id, agent_id), done in zip(ready, results):
            if type(done) is not int:
                failed.append((pk, agent_id, done))
                continue
            opened.size += done
            if done != len(line):
                failed.append((pk, agent_id, OSError(f"short write ({done} of {len(line)} bytes)")))
            else:
                written[pk] = delivery_id
        for pk, agent_id, exc in failed:
            self._failed(pk, agent_id, exc)
        for index, line in rest:
            self.write(db, deliveries.recipients[index][0], [deliveries[index]], None if line is None else [line])

    def prepare(self, deliveries: Deliveries) -> None:
        """Format each line of a fan-out ahead, into `deliveries.lines`, for `_fan_out` to take: on the
        helper thread while the loop thread waits in COMMIT (batch.beside_commit). It reads the open
        files' JSON ids, which only the loop thread changes, and it is not in here during the COMMIT."""
        template, files = line_template(deliveries.event), self._files
        lines = []
        for _, agent_id, delivery_id, flags, owed in deliveries.recipients:
            opened = files.get(agent_id)
            agent = opened.agent if opened is not None else _text(agent_id).encode()
            lines.append(template % (delivery_id, agent, _FLAG_BYTES.get(flags) or _flag_bytes(flags), owed))
        deliveries.lines = lines

    def write(self, db: apsw.Connection, agent_pk: int, rows: list[dict], lines: list[bytes] | None = None) -> None:
        """Append `rows` (one agent's new, committed deliveries, in id order; `lines` their notify
        lines, if made already) unless the file has them.

        After a gap (a failed write, or lines the hub never wrote) the database fills it instead.
        """
        if not self.enabled:
            return
        done = self.written.get(agent_pk, 0)
        if rows[0]["id"] <= done:  # ids ascend
            rows, lines = [row for row in rows if row["id"] > done], None
            if not rows:
                return
        if rows[0]["id"] != done + 1 or agent_pk in self.behind:
            self.catch_up(db, agent_pk)
        else:
            self._append(agent_pk, rows[0]["agent"], rows, lines)

    def catch_up(self, db: apsw.Connection, agent_pk: int) -> int:
        """Append every delivery of the agent that its file lacks; return how many."""
        self.behind.discard(agent_pk)
        appended = 0
        for rows in sql.deliveries_after(db, agent_pk, self.written.get(agent_pk, 0)):
            if not self._append(agent_pk, rows[0]["agent"], rows):
                break
            appended += len(rows)
            if agent_pk in self._failure_said:  # the file takes lines again: said, so a failure later is too
                self._failure_said.discard(agent_pk)
                log("notify-write-resumed", agent=rows[0]["agent"], path=self.path(rows[0]["agent"]))
        return appended

    def catch_up_all(self, db: apsw.Connection) -> int:
        return sum(self.catch_up(db, pk) for pk in list(self.behind))

    def _append(self, agent_pk: int, agent_id: str, rows: list[dict], lines: list[bytes] | None = None) -> bool:
        """Append the rows' lines: whole lines per write(2) on O_APPEND, so never interleaved,
        and as many per write as fit before the file would have to rotate."""
        if lines is None:
            lines = notify_lines(rows)
        try:
            start = 0
            while start < len(lines):
                fd = self._fd(agent_pk, agent_id, len(lines[start]))
                end = self._fitting(agent_id, lines, start)
                data = b"".join(lines[start:end])
                written = os.write(fd, data)
                self._grew(agent_id, written)
                if written != len(data):
                    whole = _whole_lines(lines[start:end], written)
                    if whole:  # those lines are in the file: the catch-up must not append them again
                        self.written[agent_pk] = rows[start + whole - 1]["id"]
                    raise OSError(f"short write ({written} of {len(data)} bytes)")
                self.written[agent_pk] = rows[end - 1]["id"]
                start = end
            return True
        except OSError as exc:
            self._failed(agent_pk, agent_id, exc)
            return False

    def _failed(self, agent_pk: int, agent_id: str, exc: OSError) -> None:
        """A write failed or fell short: the file is closed, and its agent caught up from the database later."""
        if agent_pk not in self._failure_said:  # once, not once a delivery: each catch-up tries again
            log("notify-write-failed", agent=agent_id, path=self.path(agent_id), error=exc.strerror or exc)
            self._failure_said.add(agent_pk)
        self.behind.add(agent_pk)
        self._close(agent_id)

    def _fd(self, agent_pk: int, agent_id: str, incoming: int) -> int:
        opened = self._files.get(agent_id)
        if opened is not None:
            self._files.move_to_end(agent_id)
            if self.rotate_bytes and opened.size and opened.size + incoming > self.rotate_bytes:
                self._rotate(agent_id)
            else:
                return opened.fd
        try:
            fd = self._open_name(agent_pk, agent_id)
        except FileNotFoundError:
            if not self.restore_directory():
                raise
            fd = self._open_name(agent_pk, agent_id)
        size = _private(fd, self.path(agent_id)).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            size += os.write(fd, b"\n")  # end a line torn by a failed write, so the next one stands alone
        self._files[agent_id] = _OpenFile(fd, size, agent_id)
        if self.rotate_bytes and size and size + incoming > self.rotate_bytes:
            self._rotate(agent_id)
            return self._fd(agent_pk, agent_id, incoming)
        while len(self._files) > self.open_files:
            self._close(next(iter(self._files)))
        return fd

    def _open_name(self, agent_pk: int, agent_id: str) -> int:
        if self.on_empty_file is not None and _missing_or_empty(self.path(agent_id)):
            self.on_empty_file(agent_pk, agent_id)  # before the name is made: a listener finds `.1` first
        return filenames.open_regular(self.path(agent_id), _OPEN_FLAGS)

    def restore_directory(self) -> bool:
        """Make the notify directory again if it went under the running hub (deleted by a tmp cleaner or by
        hand, or moved away), as start-up would: True when made now. Not the home, the default directory:
        gone, it took the database's name and the socket with it, and a home made again holding only notify
        files would pass for a hub's. Nor a directory whose parent went: something bigger happened there."""
        if not self.enabled or self._is_home:
            return False
        try:
            self.directory.mkdir(mode=0o700)
        except FileExistsError:
            return False
        except OSError as exc:
            if not self._directory_failed:  # once, not once a line: each of them tries again
                log("notify-dir-failed", directory=self.directory, error=exc.strerror or exc)
            self._directory_failed = True
            return False
        self._directory_failed = False
        log("notify-dir-made", directory=self.directory)
        if self.on_directory_made is not None:
            self.on_directory_made()
        return True

    def _fitting(self, agent_id: str, lines: list[bytes], start: int) -> int:
        """The end of the run of lines from `start` that one write may take: the first line
        always (_fd has made room for it), then while the file stays within the rotation size."""
        end, size = start + 1, self._files[agent_id].size + len(lines[start])
        while end < len(lines) and (not self.rotate_bytes or size + len(lines[end]) <= self.rotate_bytes):
            size += len(lines[end])
            end += 1
        return end

    def _grew(self, agent_id: str, amount: int) -> None:
        self._files[agent_id].size += amount

    def _rotate(self, agent_id: str) -> None:
        # Synced before it moves to `.1`: start-up replays only beyond the newest line, so after a
        # power cut the `.1` must hold all it held (one fsync per --notify-rotate-mb of lines).
        os.fsync(self._files[agent_id].fd)
        self._close(agent_id)
        path = self.path(agent_id)
        try:
            os.replace(path, rotated(path))
        except FileNotFoundError:
            pass  # deleted or moved away under the hub: the new file's opening keeps what it held (notify_lost.py)

    def _close(self, agent_id: str) -> None:
        entry = self._files.pop(agent_id, None)
        if entry:
            os.close(entry.fd)

    def descriptors(self) -> dict[str, int]:
        """{agent id: descriptor} of the notify files held open (notify_lost.py compares them with the names)."""
        return {agent_id: opened.fd for agent_id, opened in self._files.items()}

    def renew(self, agent_pk: int, agent_id: str) -> None:
        """Open the agent's file under its name now (made anew if gone, `on_empty_file` called), and only then
        close the descriptor held until now (a file that left the name), so the new files cannot take its inode
        number. OSError when the name cannot be opened; the old descriptor is closed all the same."""
        stray = self._files.pop(agent_id, None)
        try:
            self._fd(agent_pk, agent_id, 0)
        finally:
            if stray is not None:
                os.close(stray.fd)

    def got_to(self, agent_pk: int, newest: int) -> int:
        """The id the agent's notify files have got to, its newest delivery's being `newest`: lower while a
        failed write waits for its catch-up (`behind`)."""
        return min(newest, self.written.get(agent_pk, 0)) if agent_pk in self.behind else newest

    def create(self, agent_id: str) -> None:
        """Make a new seat's file, empty, under its name. A listener armed before the seat's first delivery
        then holds the file its first lines go to: however many rotations pass before it reads, it reads that
        file to its end and counts what rotated out of `.1` after it (agora_listen/follow.py). Armed with no
        file, it counts from the id the hub gave it, and with none (no hub answered) the first file's lines,
        rotated away twice before it read, are neither rung nor counted. OSError when the file cannot be
        made (the first delivery tries again)."""
        if not self.enabled:
            return
        path = self.path(agent_id)
        try:
            fd = filenames.open_regular(path, _OPEN_FLAGS)
        except FileNotFoundError:
            if not self.restore_directory():
                raise
            fd = filenames.open_regular(path, _OPEN_FLAGS)
        _private(fd, path)  # (closes it when refusing a file another user made)
        os.close(fd)

    def rename(self, old_id: str, new_id: str) -> None:
        """Follow an agent rename: its files take the new name."""
        if not self.enabled:
            return
        self._close(old_id)
        for source, target in zip(self.files_of(old_id), self.files_of(new_id)):
            try:
                os.replace(source, target)
            except FileNotFoundError:
                pass
            except OSError as exc:
                log("notify-rename-failed", path=source, error=exc.strerror or exc)

    def forget(self, agent_pk: int, agent_id: str) -> None:
        """A removed agent: its files go, so a later agent of the same id starts clean."""
        self.written.pop(agent_pk, None)
        self.stored.pop(agent_pk, None)
        self.behind.discard(agent_pk)
        self._failure_said.discard(agent_pk)
        self.remove_files(agent_id)

    def remove_files(self, agent_id: str) -> None:
        """Close and delete the notify files named after `agent_id` (a removed agent's, or ones a cut
        removal left under an id taken again)."""
        self._close(agent_id)
        if self.enabled:
            for path in self.files_of(agent_id):
                path.unlink(missing_ok=True)

    def files_of(self, agent_id: str) -> tuple[Path, Path]:
        return self.path(agent_id), rotated(self.path(agent_id))

    def reopen(self) -> None:
        """Close every descriptor (SIGUSR2): the next write opens the file by name again."""
        for agent_id in list(self._files):
            self._close(agent_id)

    def close(self) -> None:
        self.reopen()
        self.helper.close()


def _names_in(directory: Path) -> set[str]:
    try:
        return set(os.listdir(directory))
    except OSError:
        return set()


def _missing_or_empty(path: Path) -> bool:
    """Whether no file, or an empty one, is under `path`; False when it cannot be looked at, its directory
    missing included (the open says why, once: the write's failure)."""
    try:
        return os.lstat(path).st_size == 0
    except FileNotFoundError:
        return os.path.isdir(os.path.dirname(path))
    except OSError:
        return False


def _whole_lines(lines: list[bytes], written: int) -> int:
    """How many of `lines` a write that got only `written` bytes out put in the file whole."""
    count = 0
    for line in lines:
        written -= len(line)
        if written < 0:
            break
        count += 1
    return count


def _private(fd: int, path: Path) -> os.stat_result:
    """The open notify file's stat, once it is the hub user's and 0600: a file another user made there
    is closed and refused (OSError: the write fails, logged), a loose one of ours tightened. (Something
    other than a regular file, a FIFO that would block the hub once full, `open_regular` refused.)"""
    info = os.fstat(fd)
    if info.st_uid != os.geteuid():
        os.close(fd)
        raise PermissionError(errno.EPERM, f"{path} belongs to uid {info.st_uid}, not the hub's user; remove it")
    return filenames.made_private(fd, info)
