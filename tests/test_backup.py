"""agora backup, restore and check against a real hub, through the CLI.

The promise (RELIABILITY.md, "Backup and restore"): a backup taken while the hub serves holds every
send acknowledged before it began (tests/reliability/test_backup_storm.py); a restore installs it only when it is a sound Agora database and
no hub runs, and remakes the notify files so that listeners ring nothing twice and miss nothing new.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import sqlite3
import stat

import pytest

from agorad.surface.filenames import file_generation
from agorad.surface.places import NEW_SEAT_PLACE, is_place
from tests.conftest import Cli
from tests.hubproc import Hub, short_home
from tests.listenproc import Listener, fields, listen_once
from tests.seats import seats, send
from tests.test_notify import crash_during_send


def mode_of(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def home_snapshot(home) -> dict:
    """Every file in the home: its bytes and inode (what "nothing changed" compares)."""
    return {p.name: (p.read_bytes(), p.stat().st_ino) for p in home.iterdir() if p.is_file()}


# --- backup -------------------------------------------------------------------------------------

def test_backup_refuses_to_overwrite_unless_forced(hub, cli, tmp_path):
    target = tmp_path / "taken.db"
    target.write_text("precious")
    result = cli("backup", str(target), code=1)
    assert "exists; give --force" in result.stderr and target.read_text() == "precious"
    assert [p.name for p in tmp_path.iterdir()] == ["taken.db"]  # no temp file left behind
    cli("backup", str(target), "--force")
    assert mode_of(target) == 0o600 and target.read_bytes().startswith(b"SQLite format 3\0")


def test_a_backup_whose_copy_fails_leaves_no_temp_file_and_no_target(hub, cli, tmp_path):
    """Whole or absent: the copy is made under a temp name and moved into place last; when the copy fails
    (here the home's database is not one any more), the temp file goes and nothing takes the name."""
    hub.stop()
    for companion in ("agora.db-wal", "agora.db-shm"):
        (hub.home / companion).unlink(missing_ok=True)
    (hub.home / "agora.db").write_bytes(b"not a database\n" * 512)
    result = cli("backup", str(tmp_path / "b.db"), code=1)
    assert "copying the database" in result.stderr and "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_backup_into_a_directory_that_does_not_exist_names_it_and_says_to_create_it(hub, cli, tmp_path):
    missing = tmp_path / "not" / "made"
    result = cli("backup", str(missing / "b.db"), code=1)
    assert f"its directory {missing} does not exist; create it (`mkdir -p {missing}`)" in result.stderr
    assert ".tmp" not in result.stderr and not (tmp_path / "not").exists()
    (tmp_path / "plain").write_text("a file\n")
    result = cli("backup", str(tmp_path / "plain" / "b.db"), code=1)
    assert f"{tmp_path / 'plain'} is not a directory" in result.stderr and ".tmp" not in result.stderr


def test_backup_refuses_the_hubs_own_database(hub, cli, tmp_path):
    """However the path is spelled: with --force, a symbolic link to the home's directory, or `..` through
    one, replaced the live database's entry, and a restart served the copy without the sends since."""
    link = tmp_path / "link"
    link.symlink_to(hub.home, target_is_directory=True)
    (tmp_path / "sub").mkdir()
    database = (hub.home / "agora.db").stat()
    for spelled in (hub.home / "agora.db", link / "agora.db", link / "agora.db-wal",
                    tmp_path / "sub" / ".." / "link" / "agora.db", link / "agorad.sock", hub.home / "a-inbox.log.1",
                    hub.home / "listen-a.offset", link / "keys" / "a.key", hub.home / "agorad.log.1"):
        result = cli("backup", "--force", str(spelled), code=1)
        assert "is one of the hub's own files" in result.stderr, (spelled, result.stderr)
    assert (hub.home / "agorad.sock").is_socket()  # (a review: --force replaced it, and no client found the hub)
    os.rename(hub.home / "keys", tmp_path / "keys-away")  # a home without keys/ is no way past the check
    try:
        assert "is one of the hub's own files" in cli("backup", "--force", str(link / "agora.db"), code=1).stderr
    finally:
        os.rename(tmp_path / "keys-away", hub.home / "keys")
    after = (hub.home / "agora.db").stat()
    assert (after.st_ino, after.st_dev) == (database.st_ino, database.st_dev)
    (tmp_path / "elsewhere").mkdir()
    cli("backup", str(tmp_path / "elsewhere" / "agora.db"))  # the name alone is no bar
    assert (tmp_path / "elsewhere" / "agora.db").is_file()
    cli("backup", str(hub.home / "nightly.db"))  # nor the home: any name that is not the hub's


# --- restore ------------------------------------------------------------------------------------

def test_restore_refuses_while_a_hub_runs(hub, cli, tmp_path):
    target = tmp_path / "b.db"
    with seats(hub, "a", "b") as s:
        send(s["a"], "@b", "one")
        cli("backup", str(target))
        send(s["a"], "@b", "two")
        result = cli("restore", str(target), code=1)
        assert "a hub is running" in result.stderr and str(hub.proc.pid) in result.stderr
        assert hub.call("hub.status")["counts"]["messages"] == 2  # still the live database
        assert s["b"].call("messages.read", ref="dm:a--b#2")["title"] == "two"


def test_a_restore_refused_for_a_lock_no_running_hub_holds_says_so(hub, cli, tmp_path):
    """With the lock held and no live hub named (a hub starting, another restore), the refusal named
    "a hub is running (pid ?)"; it names the lock and what may hold it."""
    import fcntl

    target = tmp_path / "b.db"
    cli("backup", str(target))
    hub.stop()
    fd = os.open(hub.home / "agorad.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        refused = cli("restore", str(target), code=1)
        assert "a hub is running" not in refused.stderr
        assert "agorad.lock is held by another process" in refused.stderr
    finally:
        os.close(fd)


def test_a_restore_whose_notify_files_cannot_be_made_keeps_the_homes_database(hub, cli, tmp_path):
    """The notify files are made before the database is replaced: a restore that cannot make them
    (here the notify directory's parent is a file) changes nothing."""
    target = tmp_path / "backup.db"
    with seats(hub, "a", "b") as s:
        cli("backup", str(target))
        send(s["a"], "@b", "after the backup")
    hub.stop()
    database = hub.home / "agora.db"
    before = (database.stat().st_ino, database.read_bytes())
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    result = Cli(hub.home)("restore", str(target), "--notify-dir", str(blocker / "notify"), code=1)
    assert "not-a-directory" in result.stderr
    assert (database.stat().st_ino, database.read_bytes()) == before
    assert not list(hub.home.glob(".agora.db.restore.*"))


def test_restore_refuses_a_file_that_is_not_a_sound_agora_database(hub, cli, tmp_path):
    good = tmp_path / "good.db"
    with seats(hub, "a", "b") as s:
        send(s["a"], "@b", "one")
    cli("backup", str(good))
    hub.stop()
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n" * 500)
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as foreign:
        foreign.execute("CREATE TABLE agents (id TEXT)")
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(good.read_bytes())
    with sqlite3.connect(good) as reading:
        root, size = reading.execute("SELECT rootpage FROM sqlite_schema WHERE name = 'messages'").fetchone()[0], \
            reading.execute("PRAGMA page_size").fetchone()[0]
    with open(corrupt, "r+b") as file:  # cell pointers of the messages table pointing nowhere
        file.seek((root - 1) * size + 8)
        file.write(b"\xff" * 64)
    before = home_snapshot(hub.home)
    # SQLite may find the damage in integrity_check's report or by failing a read on the way (malformed)
    for path, why in ((text, r"not a sound Agora database \(file is not a database\)"), (other, "not an Agora one"),
                      (corrupt, "fails integrity_check|malformed"), (tmp_path / "missing.db", "no file")):
        result = cli("restore", str(path), code=1)
        assert re.search(why, result.stderr), result.stderr
        assert home_snapshot(hub.home) == before, f"restoring {path.name} changed the home"
    new_home = tmp_path / "new-home"  # a home not made yet stays unmade (it was made, with keys/ and its lock)
    for path, why in ((text, "not a sound Agora database"), (other, "not an Agora one")):
        result = cli("restore", "--home", str(new_home), str(path), code=1)
        assert re.search(why, result.stderr) and not new_home.exists(), result.stderr


def test_restore_installs_the_backup_0600_and_notify_files_that_ring_nothing_twice(hub, cli, tmp_path):
    """Seat b's listener rang everything before the backup (and one DM after it, lost by the restore);
    seat c's listener rang only the first of its three. After the restore b rings only what is new,
    c rings its two it never rang, and neither rings the rest again."""
    target = tmp_path / "b.db"
    with seats(hub, "a", "b", "c") as s:
        for seat in ("b", "c"):
            ear = Listener(hub, "--once", "--as", seat, "--debounce", "0")
            ear.wait_for("AGORA_LISTEN armed")
            send(s["a"], f"@{seat}", "first")
            assert ear.finish()[0] == 2
        send(s["a"], "@b", "second")
        send(s["a"], "@b", "third")
        send(s["a"], "@c", "second")
        send(s["a"], "@c", "third")
        code, lines, _ = listen_once(hub, "--as", "b", "--debounce", "0", "--max-wait", "5")
        assert code == 2 and fields(lines[1])["n"] == "2"  # b has rung all three
        cli("backup", str(target))
        send(s["a"], "@b", "lost by the restore")
        code, lines, _ = listen_once(hub, "--as", "b", "--debounce", "0", "--max-wait", "5")
        assert code == 2 and fields(lines[1])["n"] == "1"
    old_inodes = {p.name: p.stat().st_ino for p in hub.home.glob("*-inbox.log*")}
    hub.stop()

    facts = json.loads(cli("restore", str(target), "--json").stdout)
    assert facts["last_delivery_id"] == {"a": 0, "b": 3, "c": 3} and facts["messages"] == 6
    home = hub.home
    assert not (home / "agora.db-wal").exists() and not (home / "agora.db-shm").exists()
    for name in ("agora.db", "b-inbox.log", "b-inbox.log.1", "c-inbox.log", "c-inbox.log.1"):
        assert mode_of(home / name) == 0o600, name
        assert (home / name).stat().st_ino not in old_inodes.values(), f"{name} took an old file's inode"
    assert (home / "b-inbox.log").read_bytes() == b""
    assert [json.loads(line)["id"] for line in (home / "b-inbox.log.1").read_text().splitlines()] == [1, 2, 3]

    restored = Hub(home).start()
    try:
        assert "notify-replayed" not in restored.log()  # the files already hold what the database does
        with restored.client("a") as a:
            send(a, "@b", "new after the restore")
            send(a, "@c", "new after the restore")
        code, lines, _ = listen_once(restored, "--as", "b", "--debounce", "0", "--max-wait", "5")
        wake = fields(lines[1])
        assert code == 2 and wake["n"] == "1" and wake["channels"] == "dm:a--b#4", lines  # id 4 again, new mail
        code, lines, _ = listen_once(restored, "--as", "c", "--debounce", "0", "--max-wait", "5")
        assert code == 2 and fields(lines[1])["n"] == "3", lines  # its two unrung ones and the new one, once each
        code, lines, _ = listen_once(restored, "--as", "c", "--debounce", "0", "--max-wait", "1")
        assert code == 0, lines  # and not again
        report = json.loads(cli("check", "--json").stdout)
        assert report["ok"], report
    finally:
        restored.stop()


def test_a_first_listener_after_a_restore_takes_the_restored_history_as_old_news(hub, cli, tmp_path):
    """A restore leaves each seat an empty file under the name and its history in `.1`. A first listener
    arms at the end, so all of it is old news; its next run, with nothing new, rings nothing (it rang the
    whole `.1` while a place saved at 0 was re-read from `.1` with nothing to skip by)."""
    from tests.listenproc import listen_once

    target = tmp_path / "b.db"
    with seats(hub, "a", "d") as s:
        for n in range(3):
            send(s["a"], "@d", f"old {n}")
        cli("backup", str(target))
    hub.stop()
    cli("restore", str(target))
    assert (hub.home / "d-inbox.log").read_bytes() == b"" and (hub.home / "d-inbox.log.1").stat().st_size > 0
    hub.start()
    first, _, _ = listen_once(hub, "--as", "d", "--debounce", "0", "--max-wait", "1")
    again, lines, _ = listen_once(hub, "--as", "d", "--debounce", "0", "--max-wait", "1")
    assert (first, again) == (0, 0), lines
    with hub.client("a") as a:
        send(a, "@d", "new")
    rang, lines, _ = listen_once(hub, "--as", "d", "--debounce", "0", "--max-wait", "5")
    assert rang == 2 and "n=1" in lines[1] and "missed" not in lines[1], lines


def test_restore_removes_notify_files_of_seats_the_backup_does_not_have(hub, cli, tmp_path):
    target = tmp_path / "b.db"
    with seats(hub, "a", "b") as s:
        cli("backup", str(target))
        hub.add_agent("later")
        send(s["a"], "@later", "hello")
    assert (hub.home / "later-inbox.log").exists()
    hub.stop()
    (hub.home / "unrelated.txt").write_text("kept")
    cli("restore", str(target))
    assert not (hub.home / "later-inbox.log").exists() and (hub.home / "unrelated.txt").read_text() == "kept"


def test_a_restore_after_a_kill_9_serves_the_backup_not_the_wal_the_dead_hub_left(hub, cli, tmp_path):
    """A hub killed with -9 leaves its -wal (and -shm) beside the database. Restore removes them before
    it installs the copy: SQLite would otherwise replay the dead hub's WAL into the restored file, its
    pages over the backup's (the sends after the backup back, or a corrupt database)."""
    import signal

    target = tmp_path / "b.db"
    with seats(hub, "a", "b") as s:
        send(s["a"], "@b", "before")
        cli("backup", str(target))
        for n in range(20):
            send(s["a"], "@b", f"after {n}")
    hub.stop(signal.SIGKILL)
    assert os.path.getsize(hub.home / "agora.db-wal") > 0  # the dead hub's frames, not checkpointed
    cli("restore", str(target))
    hub.start()
    assert hub.call("hub.status")["counts"]["messages"] == 1
    with hub.client("b") as b:
        assert b.call("messages.read", ref="dm:a--b#1")["title"] == "before"
        assert [m["title"] for c in b.call("inbox.check")["channels"] for m in c["messages"]] == ["before"]
    assert cli("check").exit_code == 0


def test_a_restore_from_a_database_whose_wal_holds_commits_restores_them_too(hub, cli, tmp_path):
    """A home's agora.db left by a hub killed with -9 keeps its last commits in agora.db-wal beside it.
    Restored from that file (moving a crashed home, say), every acknowledged send comes along: a copy of
    the main file alone dropped them and reported the smaller count as if nothing were missing."""
    import signal

    crashed = Hub(short_home()).start()
    try:
        with seats(crashed, "a", "b") as s:
            for n in range(20):
                send(s["a"], "@b", f"sent {n}")
    finally:
        crashed.stop(signal.SIGKILL)
    assert os.path.getsize(crashed.home / "agora.db-wal") > 0  # the commits are in the WAL, not the main file
    hub.stop()
    restored = json.loads(cli("restore", str(crashed.home / "agora.db"), "--json").stdout)
    assert restored["messages"] == 20
    hub.start()
    key = (crashed.home / "keys" / "b.key").read_text().strip()  # a backup holds no keys (agora-backup(1))
    with hub.client("b", key) as b:
        assert b.call("messages.read", ref="dm:a--b#20")["title"] == "sent 19"
    shutil.rmtree(crashed.home.parent, ignore_errors=True)


def test_a_backup_or_restore_file_whose_name_is_not_utf8_is_refused_naming_it(hub, cli, tmp_path):
    """A Linux file name may hold any bytes; SQLite takes only UTF-8 names. Such a FILE is refused with one
    line that names it and says what to do (it ended in apsw's UnicodeEncodeError, a traceback), and
    nothing is written: no backup, no temp file, no change to the home."""
    good = tmp_path / "good.db"
    cli("backup", str(good))
    odd = os.fsdecode(os.fsencode(str(tmp_path)) + b"/b\xff.db")  # as Python hands such an argument over
    result = cli("backup", odd, code=1)
    assert "not valid UTF-8" in result.stderr and "b\\udcff.db" in result.stderr and "Traceback" not in result.stderr
    assert sorted(os.listdir(tmp_path)) == ["good.db"]
    hub.stop()
    os.link(good, os.fsencode(odd))
    before = home_snapshot(hub.home)
    result = cli("restore", odd, code=1)
    assert "not valid UTF-8" in result.stderr
    assert home_snapshot(hub.home) == before


# --- check --------------------------------------------------------------------------------------

def test_check_beside_a_live_hub_takes_a_file_ahead_of_its_first_read_for_mail_stored_since(hub, monkeypatch):
    """The hub stores and writes while check reads: a file read after the database can end past that read
    (a review saw `check` fail 12 times in 14 beside one sender). Here a send lands between the two reads,
    every time; only a file ahead of the database read after it is a problem."""
    from agorad.runtime import check
    from agorad.surface.paths import Home

    real_last_id = check._last_id
    with seats(hub, "a", "b") as s:
        send(s["a"], "@b", "before")

        def sent_meanwhile(path):
            if path.name == "b-inbox.log":
                send(s["a"], "@b", "meanwhile")  # committed and its line written before the file is read
            return real_last_id(path)
        monkeypatch.setattr(check, "_last_id", sent_meanwhile)
        report = check.check(Home(hub.home), hub.home)
    b = next(seat for seat in report["seats"] if seat["agent"] == "b")
    assert report["ok"] and b["problems"] == [] and b["file_id"] == b["database_id"] == 2, report

    monkeypatch.setattr(check, "_last_id", lambda path: 7 if path.name == "b-inbox.log" else real_last_id(path))
    report = check.check(Home(hub.home), hub.home)  # a file truly ahead is still said to be
    b = next(seat for seat in report["seats"] if seat["agent"] == "b")
    assert not report["ok"] and b["problems"] == [
        f"{hub.home / 'b-inbox.log'} goes to id 7, past the database's 2: its lines above it name deliveries the "
        "database does not hold"], report


def test_check_reports_a_truncated_notify_file_and_a_bogus_offset(hub, cli):
    with seats(hub, "a", "b", "c") as s:
        for n in range(3):
            send(s["a"], "@b", f"m{n}")
        send(s["a"], "@c", "hello")
    clean = json.loads(cli("check", "--json").stdout)
    assert clean["ok"] and clean["integrity"] == [] and clean["schema"] >= 5
    assert {seat["agent"]: seat["file_id"] for seat in clean["seats"]} == {"a": None, "b": 3, "c": 1}
    assert "check: ok" in cli("check", "--quick").stdout

    notify = hub.home / "b-inbox.log"
    lines = notify.read_bytes().splitlines(keepends=True)
    notify.write_bytes(b"".join(lines[:1]) + lines[1][:20])  # the last line and a half cut off
    (hub.home / "listen-c.offset").write_text(json.dumps(
        {"inode": (hub.home / "c-inbox.log").stat().st_ino, "pos": 10_000, "id": 1}))
    (hub.home / "listen-a.offset").write_text("{not json")
    result = cli("check", "--json", code=1)
    report = {seat["agent"]: seat for seat in json.loads(result.stdout)["seats"]}
    assert report["b"]["file_id"] == 1 and "ends at id 1, the database at 3" in report["b"]["problems"][0]
    assert "past the end" in report["c"]["problems"][0]
    assert "is not an offset" in report["a"]["problems"][0]
    text = cli("check", code=1).stdout
    assert "problem: b:" in text and "check: something is wrong" in text


def test_check_says_the_next_start_writes_what_a_crash_kept_from_the_file_made_at_the_add(home):
    """The hub crashed after the seat's first delivery committed, before its line: the file the add made
    is empty, no place is saved, and the hub stored no line as written, so the next start writes line 1."""
    first = Hub(home).start()
    with seats(first, "memory", "runtime"):
        pass
    first.stop()
    crash_during_send(home, "after-commit")
    report = {seat["agent"]: seat for seat in json.loads(Cli(home)("check", "--json", code=1).stdout)["seats"]}
    assert report["runtime"]["problems"] == [
        f"{home / 'runtime-inbox.log'} holds no line; the database has deliveries up to id 1 (no mail is lost: "
        "`agora inbox --as runtime` shows it; wakes its listener had not read are lost if a running hub held the "
        "file, else the next start writes them again if it saved a place, or else the lines after id 0, the last "
        "the hub stored as written; new lines come all the same)"]
    again = Hub(home).start()
    try:
        assert [json.loads(line)["id"] for line in (home / "runtime-inbox.log").read_text().splitlines()] == [1]
        assert json.loads(Cli(home)("check", "--json").stdout)["ok"]
    finally:
        again.stop()


def test_check_neither_hangs_nor_stops_on_notify_files_that_are_no_regular_files(home):
    """A FIFO under the name blocked the read of its last line (check's, and the hub's at start); a `.1` that
    cannot be opened (a socket) ended the whole report with one errno line. Both are judged, not read."""
    first = Hub(home).start()
    with seats(first, "a", "b") as s:
        send(s["a"], "@b", "one")
    first.stop()
    notify = home / "b-inbox.log"
    (home / "listen-b.offset").write_text(json.dumps({"inode": 1, "pos": 5, "id": 1}))
    notify.unlink()
    os.mkfifo(notify, 0o600)
    with socket.socket(socket.AF_UNIX) as dot_one:
        dot_one.bind(f"{notify}.1")
        seat = next(seat for seat in json.loads(Cli(home)("check", "--json", code=1).stdout)["seats"]
                    if seat["agent"] == "b")
    assert seat["file_id"] is None and "holds no line" in seat["problems"][0], seat
    assert "offset names a file that is gone" in seat["notes"][0], seat


def test_check_says_a_deleted_notify_file_is_missing_and_an_empty_one_holds_no_line(hub, cli):
    with seats(hub, "a", "b", "c") as s:
        send(s["a"], "@b", "one")
        send(s["a"], "@c", "one")
    hub.stop()  # a running hub keeps a deleted file's lines in `.1` at once (tests/test_notify_lost.py)
    (hub.home / "b-inbox.log").unlink()
    kept = (hub.home / "c-inbox.log").read_bytes()
    (hub.home / "c-inbox.log").write_bytes(b"")
    report = {seat["agent"]: seat for seat in json.loads(cli("check", "--json", code=1).stdout)["seats"]}
    assert report["b"]["problems"] == [
        f"{hub.home / 'b-inbox.log'} is missing; the database has deliveries up to id 1 (no mail is lost: "
        "`agora inbox --as b` shows it; the next start makes the file again with what the seat's listener had not "
        "read if it saved a place, else the seat's next delivery does)"]
    assert report["c"]["problems"] == [
        f"{hub.home / 'c-inbox.log'} holds no line; the database has deliveries up to id 1 (no mail is lost: "
        "`agora inbox --as c` shows it; wakes its listener had not read are lost if a running hub held the file, "
        "else the next start writes them again if it saved a place; new lines come all the same)"]
    (hub.home / "c-inbox.log").write_bytes(kept)
    hub.start()
    with hub.client("a") as a:
        send(a, "@b", "two")
    assert (hub.home / "b-inbox.log").exists()  # as the problem said
    assert json.loads(cli("check", "--json").stdout)["ok"]


def test_check_on_a_stopped_hubs_home_leaves_no_file_behind(home):
    """A read-only connection made -wal and -shm beside a database a stopped hub had closed cleanly,
    and left them there; `agora check` leaves the home as it found it."""
    stopped = Hub(home).start()
    stopped.add_agent("a")
    stopped.stop()
    before = sorted(p.name for p in home.iterdir())
    assert "agora.db-wal" not in before and "agora.db-shm" not in before
    assert json.loads(Cli(home)("check", "--json").stdout)["ok"]
    assert sorted(p.name for p in home.iterdir()) == before


def test_check_notes_an_offset_on_a_file_that_is_gone_without_failing(hub, cli):
    with seats(hub, "a", "b") as s:
        send(s["a"], "@b", "one")
    (hub.home / "listen-b.offset").write_text(json.dumps({"inode": 1, "pos": 0, "id": 1}))
    report = json.loads(cli("check", "--json").stdout)
    seat = next(seat for seat in report["seats"] if seat["agent"] == "b")
    assert report["ok"] and seat["problems"] == [] and "gone" in seat["notes"][0]


def test_check_takes_a_place_whose_file_number_came_back_with_another_generation_for_gone(hub, cli):
    """A freed inode number is handed to the next new file (ext4): a place past the end of such a file is not
    a problem of that file, whose generation is another (it was a false `past the end`, exit 1)."""
    with seats(hub, "a", "b") as s:
        send(s["a"], "@b", "one")
    notify = hub.home / "b-inbox.log"
    fd = os.open(notify, os.O_RDONLY)
    try:
        generation = file_generation(fd)
    finally:
        os.close(fd)
    if generation is None:
        pytest.skip("this file system keeps no inode generation")
    place = {"inode": notify.stat().st_ino, "pos": 10_000, "id": 1}
    for gen, problem in ((generation, "past the end"), (generation ^ 1, None)):
        (hub.home / "listen-b.offset").write_text(json.dumps(place | {"gen": gen}))
        report = json.loads(cli("check", "--json", code=1 if problem else 0).stdout)
        seat = next(seat for seat in report["seats"] if seat["agent"] == "b")
        if problem:
            assert problem in seat["problems"][0], seat
        else:
            assert seat["problems"] == [] and "gone" in seat["notes"][0], seat
    for bad in (-1, "7", True):
        (hub.home / "listen-b.offset").write_text(json.dumps(place | {"gen": bad}))
        seat = next(seat for seat in json.loads(cli("check", "--json", code=1).stdout)["seats"] if seat["agent"] == "b")
        assert "is not an offset" in seat["problems"][0], (bad, seat)


@pytest.mark.parametrize("place", [
    {"pos": 0, "id": 1},                                    # no inode at all: not the null of a seat with no file
    {"inode": 5, "pos": 0, "id": -1},
    {"inode": -5, "pos": 0, "id": 1},
    {"inode": 5, "pos": True, "id": 1},
    {"inode": 5, "pos": 0, "id": "1"},
    {"inode": None, "pos": -1, "id": 0},
    [5, 0, 1],
    {"inode": 5, "pos": 0, "id": 2**63 - 1},                # past any id a hub believes (MAX_FILE_ID)
], ids=["no-inode", "negative-id", "negative-inode", "bool-pos", "text-id", "negative-pos", "a-list", "huge-id"])
def test_check_calls_not_an_offset_every_place_the_listener_reads_as_corrupt(hub, cli, place):
    """One rule (agorad/surface/places.py) for both: check called the first three fine, while the next
    listener would read the file from its start."""
    with seats(hub, "a", "b") as s:
        send(s["a"], "@b", "one")
    assert not is_place(place)
    (hub.home / "listen-b.offset").write_text(json.dumps(place))
    seat = next(seat for seat in json.loads(cli("check", "--json", code=1).stdout)["seats"] if seat["agent"] == "b")
    assert "is not an offset" in seat["problems"][0], seat


def test_a_place_is_what_a_listener_saves():
    assert is_place(json.loads(NEW_SEAT_PLACE))
    assert is_place({"inode": 7, "pos": 120, "id": 3, "gen": 0})
    assert not is_place({"inode": 7, "pos": 120, "id": 3, "gen": None})


def test_check_says_from_which_id_a_place_saved_with_no_file_reads_the_first_file(hub, cli):
    # A place saved with no file is read above its id (the hub's newest at the first arm): 0 with no word
    # from the hub is "nothing known" and reads the file whole; 0 as the hub's word is the seat's start (the
    # place the hub writes at an add, too: it was worded as a place saved with no file).
    with seats(hub, "a", "b") as s:
        send(s["a"], "@b", "one")
    fileless = "offset saved with no notify file: the next listener reads the first file whole, and a .1 it rotated to"
    for place, note in (({"id": 1}, f"{fileless} above id 1"), ({"id": 0}, fileless),
                        (json.loads(NEW_SEAT_PLACE), "offset at the seat's start (no notify file yet): the next "
                                                     "listener reads its files whole")):
        (hub.home / "listen-b.offset").write_text(json.dumps({"inode": None, "pos": 0} | place))
        report = json.loads(cli("check", "--json").stdout)
        seat = next(seat for seat in report["seats"] if seat["agent"] == "b")
        assert report["ok"] and seat["notes"] == [note]


def test_a_listener_running_across_a_restore_rings_only_what_the_restored_hub_writes(hub, cli, tmp_path, watcher):
    """A persistent listener outlives hubs; the restore replaces the file it holds open. It must follow
    the name to the new file and ring each new delivery once, never the history put back in `.1`."""
    target = tmp_path / "b.db"
    with seats(hub, "a", "b") as s:
        send(s["a"], "@b", "before")
        ear = Listener(hub, "--as", "b", "--debounce", "0")
        ear.wait_for("AGORA_LISTEN armed")
        cli("backup", str(target))
        send(s["a"], "@b", "lost by the restore")
        assert fields(ear.wait_for("AGORA_WAKE"))["channels"] == "dm:a--b#2"
    hub.stop()
    cli("restore", str(target))
    restored = Hub(hub.home).start()
    try:
        with restored.client("a") as a:
            send(a, "@b", "new after the restore")
        wake = fields(ear.wait_for("AGORA_WAKE"))
        assert wake["n"] == "1" and wake["channels"] == "dm:a--b#2"  # seq 2 again: the restored channel's next
        with restored.client("a") as a:
            send(a, "@b", "and the next")
        wake = fields(ear.wait_for("AGORA_WAKE"))
        assert wake["n"] == "1" and wake["channels"] == "dm:a--b#3"
    finally:
        code, lines, _ = ear.stop()
        restored.stop()
    assert sum(line.startswith("AGORA_WAKE") for line in lines) == 3, lines


def test_check_on_a_home_whose_path_is_not_utf8_says_so_in_one_line(hub, cli, tmp_path):
    """agora check read such a home's database through apsw directly: a UnicodeEncodeError, a traceback."""
    good = tmp_path / "good.db"
    cli("backup", str(good))
    odd = os.fsencode(str(tmp_path)) + b"/h\xff"
    os.mkdir(odd, 0o700)
    shutil.copyfile(good, odd + b"/agora.db")
    result = cli("check", "--home", os.fsdecode(odd), "--notify-dir", "", code=1)
    assert "not valid UTF-8" in result.stderr and "Traceback" not in result.stderr


def test_check_on_a_file_it_cannot_read_says_so_and_no_more(home):
    """A file SQLite cannot read was also reported as "not an Agora database (its tables are missing)",
    which nothing showed: its tables were never looked at."""
    home.mkdir(mode=0o700)
    (home / "agora.db").write_bytes(b"not a database\n" * 500)
    report = json.loads(Cli(home)("check", "--json", "--notify-dir", "", code=1).stdout)
    assert report["integrity"] == ["cannot read the database: file is not a database"]
    assert report["ok"] is False and report["schema"] is None


@pytest.mark.parametrize("command", ["backup", "restore"])
def test_an_empty_file_name_is_a_usage_error(hub, cli, command):
    """click passes '' through as the current directory: backup said it exists (give --force), restore that
    there was no file named after it (a review)."""
    before = home_snapshot(hub.home)
    result = cli(command, "", code=2)
    assert "Invalid value for 'FILE': is empty: name the file" in result.stderr
    assert home_snapshot(hub.home) == before
