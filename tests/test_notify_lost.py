"""A notify file deleted or moved away under a running hub (runtime/notify_lost.py): the hub stops
writing to the file that left its name at once, and no listener loses a wake or rings one twice.

Where the order of the hub's work matters (a deletion noticed in the same batch as a send, or after
it), the hub is stopped (SIGSTOP) while the requests and the deletion are queued in that order: it
takes them in the order they came when it goes on."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat

import pytest

from agorad.surface.client import Client
from tests.hubproc import Hub, stopped, wait_for, with_sitecustomize
from tests.listenproc import Listener, fields, listen_once
from tests.seats import seats, send
from tests.wire import Raw

pytestmark = pytest.mark.usefixtures("watcher")  # the listener's side, under each watcher


def ids(path) -> list[int]:
    return [json.loads(line)["id"] for line in path.read_text().splitlines()]


def logged(hub, event: str, count: int = 1) -> None:
    wait_for(lambda: hub.log().count(f" {event} ") >= count, what=f"{event} in the hub's log")


def connection(hub, agent: str) -> Raw:
    raw = Raw(hub.home)
    key = (hub.home / "keys" / f"{agent}.key").read_text().strip()
    assert "result" in raw.request("hub.hello", {"agent": agent, "key": key})
    return raw


def dm_frame(to: str, title: str, body: str = "") -> bytes:
    params = {"target": f"@{to}", "title": title, "body": body}
    return json.dumps({"jsonrpc": "2.0", "id": 7, "method": "messages.send", "params": params}).encode() + b"\n"


@pytest.fixture
def pair(hub):
    with seats(hub, "memory", "runtime") as s:
        yield s


@pytest.mark.parametrize("held", [True, False], ids=["held-open", "closed-by-sigusr2"])
def test_a_deleted_file_is_noticed_and_a_listener_resuming_rings_what_it_had_not_read(hub, pair, held):
    path = hub.home / "runtime-inbox.log"
    send(pair["memory"], "commons", "first")
    assert listen_once(hub, "--as", "runtime", "--max-wait", "1")[0] == 0  # arms at the end, saves its offset
    send(pair["memory"], "@runtime", "unread")
    if not held:
        hub.proc.send_signal(signal.SIGUSR2)
        logged(hub, "sigusr2")
    path.unlink()
    logged(hub, "notify-file-renewed")  # logged once the name is made; `notify-file-lost` comes before that
    assert ids(path.with_name(path.name + ".1")) == [2]  # what the listener had not read, from the database
    assert path.read_bytes() == b""  # made at once: a fresh listener arms on it, and takes `.1` as old news
    code, lines, _ = listen_once(hub, "--as", "runtime", "--debounce", "0", "--max-wait", "5")
    assert code == 2 and fields(lines[1])["channels"] == "dm:memory--runtime#1"
    assert "missed" not in fields(lines[1])
    assert listen_once(hub, "--as", "runtime", "--debounce", "0", "--max-wait", "1")[0] == 0  # rung once
    send(pair["memory"], "@runtime", "after")
    code, lines, _ = listen_once(hub, "--as", "runtime", "--debounce", "0", "--max-wait", "5")
    assert code == 2 and fields(lines[1])["n"] == "1" and fields(lines[1])["channels"] == "dm:memory--runtime#2"
    assert ids(path) == [3]  # under the name, not into the deleted file


def test_a_deleted_file_whose_listener_armed_before_the_first_delivery_keeps_every_line_it_had_not_read(hub, pair):
    # Its place is at 0 as the hub's word ("zero": the seat had no delivery yet), so all three are unread and
    # kept; before, a place at 0 counted as none saved: only the newest was kept, and 1-2 rang as missed.
    path = hub.home / "runtime-inbox.log"
    assert listen_once(hub, "--as", "runtime", "--max-wait", "1")[0] == 0
    for n in range(3):
        send(pair["memory"], "@runtime", f"unread {n}")
    path.unlink()
    logged(hub, "notify-file-renewed")
    assert ids(path.with_name(path.name + ".1")) == [1, 2, 3]
    code, lines, _ = listen_once(hub, "--as", "runtime", "--debounce", "0", "--max-wait", "5")
    assert code == 2 and fields(lines[1])["n"] == "3" and "missed" not in fields(lines[1])


def test_a_listener_reading_the_deleted_file_goes_on_with_the_new_one_and_rings_nothing_twice(hub, pair):
    ear = Listener(hub, "--as", "runtime", "--debounce", "0")
    ear.next_line()
    send(pair["memory"], "@runtime", "one")
    assert fields(ear.wait_for("AGORA_WAKE"))["channels"] == "dm:memory--runtime#1"
    (hub.home / "runtime-inbox.log").unlink()
    logged(hub, "notify-file-renewed")
    for seq in (2, 3):
        send(pair["memory"], "@runtime", f"after {seq}")
        wake = fields(ear.wait_for("AGORA_WAKE"))
        assert (wake["channels"], wake["n"]) == (f"dm:memory--runtime#{seq}", "1")
    ear.stop()


def test_a_send_in_the_batch_that_notices_the_deletion_reaches_a_listener_still_reading_the_deleted_file(hub):
    with seats(hub, "memory", "runtime", "witness") as s:
        path = hub.home / "runtime-inbox.log"
        ear = Listener(hub, "--as", "runtime", "--debounce", "0")
        ear.next_line()
        send(s["memory"], "@runtime", "one")
        ear.wait_for("AGORA_WAKE")
        opener, sender = connection(hub, "witness"), connection(hub, "memory")
        with stopped(hub):
            opener.send(dm_frame("memory", "opens the batch"))
            path.unlink()  # noticed within that batch: the hub settles it after the batch's COMMIT ...
            sender.send(dm_frame("runtime", "two"))  # ... with this send's line to write after it
        assert "result" in opener.reply() and "result" in sender.reply()
        wake = fields(ear.wait_for("AGORA_WAKE"))
        assert (wake["channels"], wake["n"]) == ("dm:memory--runtime#2", "1") and "missed" not in wake
        assert ids(path) == [2]
        ear.stop()


def test_a_deleted_file_the_hub_did_not_hold_keeps_its_lines_when_the_next_line_comes_first(hub, pair):
    path = hub.home / "runtime-inbox.log"
    send(pair["memory"], "commons", "first")
    listen_once(hub, "--as", "runtime", "--max-wait", "1")
    send(pair["memory"], "@runtime", "unread")
    hub.proc.send_signal(signal.SIGUSR2)  # the hub holds no file open now
    logged(hub, "sigusr2")
    sender = connection(hub, "memory")
    with stopped(hub):
        sender.send(dm_frame("runtime", "after"))  # opens the name anew before the deletion is noticed
        path.unlink()
    assert "result" in sender.reply()
    logged(hub, "notify-file-lost")
    assert ids(path.with_name(path.name + ".1")) == [2] and ids(path) == [3]
    code, lines, _ = listen_once(hub, "--as", "runtime", "--debounce", "0", "--max-wait", "5")
    assert code == 2 and fields(lines[1])["n"] == "2" and "missed" not in fields(lines[1])


def test_a_file_deleted_just_before_its_seat_is_renamed_keeps_its_lines_under_the_new_id(hub, pair):
    path = hub.home / "runtime-inbox.log"
    send(pair["memory"], "commons", "first")
    listen_once(hub, "--as", "runtime", "--max-wait", "1")
    send(pair["memory"], "@runtime", "unread")
    operator = Raw(hub.home)
    assert "result" in operator.request("hub.hello")
    with stopped(hub):
        operator.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "agents.rename",
                                  "params": {"old": "runtime", "new": "builder", "reason": "split"}}).encode() + b"\n")
        path.unlink()  # noticed after the rename: under an id the seat no longer has
    assert "result" in operator.reply()
    send(pair["memory"], "@builder", "after")  # the seat's next line opens its new name: what was unread is kept
    logged(hub, "notify-file-lost")
    assert ids(hub.home / "builder-inbox.log.1") == [2] and ids(hub.home / "builder-inbox.log") == [3]
    code, lines, _ = listen_once(hub, "--as", "builder", "--debounce", "0", "--max-wait", "5")
    assert code == 2 and fields(lines[1])["n"] == "2" and "missed" not in fields(lines[1])


def test_a_rotation_due_as_the_file_is_deleted_writes_the_line_into_the_new_file(home):
    hub = Hub(home, "--notify-rotate-mb", "0.002").start()  # 2,097 bytes
    try:
        with seats(hub, "memory", "runtime") as s:
            path = home / "runtime-inbox.log"
            send(s["memory"], "@runtime", "0", "y" * 60)
            line = len(path.read_bytes())
            while path.stat().st_size + line <= 2097:  # the next line rotates the file
                send(s["memory"], "@runtime", "filler", "y" * 60)
            listen_once(hub, "--as", "runtime", "--max-wait", "1")
            sender = connection(hub, "memory")
            with stopped(hub):
                sender.send(dm_frame("runtime", "filler", "y" * 60))  # rotates a file that is gone
                path.unlink()
            assert "result" in sender.reply()
            newest = json.loads(path.with_name(path.name + ".1").read_text().splitlines()[-1])["id"]
            assert ids(path) == [newest + 1] and "notify-write-failed" not in hub.log()
            code, lines, _ = listen_once(hub, "--as", "runtime", "--debounce", "0", "--max-wait", "5")
            assert code == 2 and fields(lines[1])["n"] == "1" and "missed" not in fields(lines[1])
    finally:
        hub.stop()


def test_a_name_no_seat_can_have_among_the_changes_does_not_stop_the_others(hub, pair):
    send(pair["memory"], "@runtime", "one")
    odd = os.fsencode(hub.home) + b"/\xff-inbox.log"
    os.close(os.open(odd, os.O_CREAT | os.O_WRONLY, 0o600))
    with stopped(hub):
        os.unlink(odd)
        (hub.home / "runtime-inbox.log").unlink()
    logged(hub, "notify-file-renewed")
    assert (hub.home / "runtime-inbox.log").exists() and "Traceback" not in hub.log()


def test_a_fresh_listener_armed_after_a_deletion_rings_only_what_comes_next(hub, pair):
    for i in range(5):
        send(pair["memory"], "@runtime", f"old {i}")
    (hub.home / "runtime-inbox.log").unlink()
    logged(hub, "notify-file-lost")
    ear = Listener(hub, "--as", "runtime", "--debounce", "0")  # no saved place: arms at the end
    ear.next_line()
    send(pair["memory"], "@runtime", "new")
    wake = fields(ear.wait_for("AGORA_WAKE"))
    assert (wake["n"], wake["channels"]) == ("1", "dm:memory--runtime#6")
    ear.stop()


def test_a_file_moved_to_dot_one_by_hand_is_let_go_and_kept_as_it_is(hub, pair):
    path = hub.home / "runtime-inbox.log"
    rotated = path.with_name(path.name + ".1")
    send(pair["memory"], "@runtime", "one")
    send(pair["memory"], "@runtime", "two")
    os.replace(path, rotated)  # what logrotate does, without telling the hub
    logged(hub, "notify-file-renewed")
    inode = rotated.stat().st_ino
    send(pair["memory"], "@runtime", "three")
    assert ids(path) == [3] and ids(rotated) == [1, 2] and rotated.stat().st_ino == inode
    rotated.unlink()  # logrotate's compress: `.1` goes, and does not come back
    send(pair["memory"], "@runtime", "four")
    send(pair["runtime"], "@memory", "one")
    (hub.home / "memory-inbox.log").unlink()  # an event after the `.1`'s, whose handling is logged: a barrier
    logged(hub, "notify-file-renewed", 2)
    lost = [line for line in hub.log().splitlines() if " notify-file-lost " in line]
    assert not rotated.exists() and ids(path) == [3, 4] and len(lost) == 1 and "agent=memory" in lost[0]


def test_a_file_moved_elsewhere_keeps_its_lines_in_dot_one_for_a_listener(hub, pair):
    path = hub.home / "runtime-inbox.log"
    send(pair["memory"], "commons", "first")
    listen_once(hub, "--as", "runtime", "--max-wait", "1")
    send(pair["memory"], "@runtime", "unread")
    os.replace(path, hub.home / "archived.log")
    logged(hub, "notify-file-lost")
    send(pair["memory"], "@runtime", "after")
    code, lines, _ = listen_once(hub, "--as", "runtime", "--debounce", "0", "--max-wait", "5")
    assert code == 2 and fields(lines[1])["n"] == "2" and "missed" not in fields(lines[1])
    assert ids(hub.home / "archived.log") == [1, 2] and ids(path) == [3]


def test_the_hubs_own_rotation_rename_and_removal_are_not_taken_for_lost_files(home):
    hub = Hub(home, "--notify-rotate-mb", "0.002").start()  # about 2 KiB
    try:
        with seats(hub, "memory", "runtime", "engine", "witness") as s:
            for i in range(12):  # ~2.8 KiB of lines: runtime's file rotates
                send(s["memory"], "@runtime", f"m{i}", "y" * 60)
            send(s["memory"], "@engine", "before its removal")
            hub.call("agents.rename", old="runtime", new="builder", reason="split")
            hub.call("agents.remove", agent="engine")
            send(s["memory"], "@witness", "one")
            (home / "witness-inbox.log").unlink()  # one event after all of the hub's own: a barrier
            logged(hub, "notify-file-renewed")  # after `notify-file-lost`, once the name is made again
            assert hub.log().count(" notify-file-lost ") == hub.log().count(" notify-file-renewed ") == 1
            assert "agent=witness" in hub.log()
            assert ids(home / "builder-inbox.log.1")[0] == 1  # the hub's own rotation, as it wrote it
    finally:
        hub.stop()


def test_a_moved_directory_is_made_again_and_a_listener_loses_nothing(home, tmp_path):
    notify_dir = tmp_path / "n"
    hub = Hub(home, "--notify-dir", str(notify_dir)).start()
    try:
        with seats(hub, "memory", "runtime") as s:
            send(s["memory"], "commons", "first")
            listen_once(hub, "--as", "runtime", "--max-wait", "1")
            send(s["memory"], "@runtime", "unread")
            moved = tmp_path / "old"
            notify_dir.rename(moved)  # the watch would follow it away: the hub lets it go, makes the directory
            logged(hub, "notify-watch-lost")  # again under its path, watches that, and renews every file
            logged(hub, "notify-watch-rearmed")
            logged(hub, "notify-file-renewed")
            send(s["memory"], "@runtime", "after")
            assert ids(moved / "runtime-inbox.log") == [1, 2] and ids(notify_dir / "runtime-inbox.log") == [3]
            assert ids(notify_dir / "runtime-inbox.log.1") == [2]
            code, lines, _ = listen_once(hub, "--as", "runtime", "--debounce", "0", "--max-wait", "5")
            assert code == 2 and fields(lines[1])["n"] == "2" and "missed" not in fields(lines[1])
            (notify_dir / "runtime-inbox.log").unlink()  # the new directory is watched
            logged(hub, "notify-file-renewed", 2)
    finally:
        hub.stop()


def test_a_deleted_notify_directory_is_made_again_at_once_and_a_listener_loses_nothing(home, tmp_path):
    """`rm -rf` of the notify directory (a tmp cleaner, a slip): the hub makes it again as soon as its watch
    sees it go, keeps what the seats' listeners had not read in each `.1`, and every wake comes. Before, it
    waited for someone to make the directory: every line failed to be written, every wake was lost."""
    notify_dir = tmp_path / "n"
    hub = Hub(home, "--notify-dir", str(notify_dir)).start()
    try:
        with seats(hub, "memory", "runtime", "witness") as s:
            send(s["memory"], "commons", "first")
            ear = Listener(hub, "--as", "runtime", "--debounce", "0")
            ear.wait_for("AGORA_LISTEN armed")
            listen_once(hub, "--as", "witness", "--max-wait", "1")  # a place in the file about to go
            send(s["memory"], "@witness", "unread when the directory went")
            with stopped(hub):  # else it makes a deleted file again in the directory rm is emptying
                shutil.rmtree(notify_dir)
            logged(hub, "notify-dir-made")
            assert stat.S_IMODE(notify_dir.stat().st_mode) == 0o700
            send(s["memory"], "@runtime", "after")
            assert fields(ear.wait_for("AGORA_WAKE"))["channels"] == "dm:memory--runtime#1"
            code, lines, _ = listen_once(hub, "--as", "witness", "--debounce", "0", "--max-wait", "5")
            assert code == 2 and fields(lines[1])["channels"] == "dm:memory--witness#1", lines
            assert "notify-write-failed" not in hub.log()
    finally:
        hub.stop()


def test_a_notify_directory_deleted_twice_while_a_file_in_it_is_held_open_is_made_again_twice(home, tmp_path):
    """A directory deleted while a process holds a file in it (an idle seat's listener) sends the hub's watch
    no IN_IGNORED until that file is closed: made again by a write, the directory was left unwatched, and a
    second deletion went unseen (no directory, every wake lost, the writes into deleted files). The review
    of the first version found it."""
    notify_dir = tmp_path / "n"
    hub = Hub(home, "--notify-dir", str(notify_dir)).start()
    try:
        with seats(hub, "memory", "runtime", "idle") as s:
            held = os.open(notify_dir / "idle-inbox.log", os.O_RDONLY)
            try:
                for round in (1, 2):
                    send(s["memory"], "@runtime", f"before deletion {round}")
                    with stopped(hub):
                        shutil.rmtree(notify_dir)
                    logged(hub, "notify-dir-made", round)
                    logged(hub, "notify-watch-rearmed", round)
                send(s["memory"], "@runtime", "after")
                assert ids(notify_dir / "runtime-inbox.log") == [3]
            finally:
                os.close(held)
    finally:
        hub.stop()


def test_a_deleted_notify_directory_is_made_again_by_the_next_file_without_inotify(home, tmp_path):
    """Where no watch sees the directory go (macOS, the BSDs), the next file the hub opens by name makes it:
    a seat's add, or SIGUSR2 (which a deleted notify file there needs anyway) and the lines after it."""
    notify_dir = tmp_path / "n"
    hub = without_inotify(home, tmp_path, "--notify-dir", str(notify_dir))
    try:
        with seats(hub, "memory", "runtime") as s:
            send(s["memory"], "commons", "first")
            listen_once(hub, "--as", "runtime", "--max-wait", "1")
            send(s["memory"], "@runtime", "unread when the directory went")
            shutil.rmtree(notify_dir)
            hub.call("agents.add", agent="late", liveness_mode="always-on")
            assert (notify_dir / "late-inbox.log").exists() and "file-step-failed" not in hub.log()
            shutil.rmtree(notify_dir)
            hub.proc.send_signal(signal.SIGUSR2)
            logged(hub, "sigusr2")
            send(s["memory"], "@runtime", "after")
            assert ids(notify_dir / "runtime-inbox.log") == [3] and ids(notify_dir / "runtime-inbox.log.1") == [2]
            code, lines, _ = listen_once(hub, "--as", "runtime", "--debounce", "0", "--max-wait", "5")
            assert code == 2 and fields(lines[1])["n"] == "2", lines
            assert hub.log().count(" notify-dir-made ") == 2 and "notify-write-failed" not in hub.log()
    finally:
        hub.stop()


def test_a_notify_directory_whose_parent_went_too_costs_one_failure_line_not_one_a_delivery(home, tmp_path):
    notify_dir = tmp_path / "parent" / "n"
    hub = Hub(home, "--notify-dir", str(notify_dir)).start()
    try:
        with seats(hub, "memory", "runtime") as s:
            with stopped(hub):
                shutil.rmtree(notify_dir.parent)
            logged(hub, "notify-dir-failed")
            for i in range(3):
                send(s["memory"], "@runtime", f"into nothing {i}")
            hub.call("hub.sweep")
            assert hub.log().count(" notify-dir-failed ") == 1 and not notify_dir.parent.exists()
            notify_dir.parent.mkdir()
            hub.call("hub.sweep")  # made again with its parent back, and what failed meanwhile written
            assert ids(notify_dir / "runtime-inbox.log") == [1, 2, 3]
    finally:
        hub.stop()


def test_a_moved_home_is_not_made_again_as_a_notify_directory(home):
    """The notify directory is the home by default: moved or deleted, it took the database's name and the
    socket with it, and a home made again holding only notify files would pass for a hub's. Left gone."""
    hub = Hub(home).start()
    try:
        with seats(hub, "memory", "runtime") as s:
            send(s["memory"], "commons", "first")
            moved = home.with_name(home.name + "-moved")
            home.rename(moved)
            try:
                logged(hub, "notify-watch-lost")
                send(s["memory"], "@runtime", "after")  # its line has no directory to go to
                with Client(moved) as operator:
                    operator.call("hub.sweep")
                assert not home.exists()
            finally:
                moved.rename(home)
    finally:
        hub.stop()


def without_inotify(home, tmp_path, *args: str) -> Hub:
    """A hub told inotify is missing (a sitecustomize on its path), standing for macOS and the BSDs."""
    hub = Hub(home, *args)
    plain = hub.env
    hub.env = with_sitecustomize(plain, tmp_path, "from agorad.surface import inotify\ninotify.available = lambda: False\n")
    hub.start()
    hub.env = plain  # for the listeners: theirs is the real inotify
    return hub


def test_a_listener_armed_before_the_hub_kept_the_lines_reads_them_when_the_name_comes_back(home, tmp_path):
    hub = without_inotify(home, tmp_path)  # the deletion goes unseen until SIGUSR2: a window as long as wanted
    try:
        with seats(hub, "memory", "runtime") as s:
            send(s["memory"], "commons", "first")
            listen_once(hub, "--as", "runtime", "--max-wait", "1")
            send(s["memory"], "@runtime", "unread")
            (home / "runtime-inbox.log").unlink()
            ear = Listener(hub, "--as", "runtime", "--once", "--debounce", "0", "--max-wait", "20")
            assert ear.next_line().startswith("AGORA_LISTEN armed")  # its place gone, no file under the name
            hub.proc.send_signal(signal.SIGUSR2)  # `.1` with the unread line, then the name
            code, lines, _ = ear.finish()
            assert code == 2 and fields(lines[1])["channels"] == "dm:memory--runtime#1"
            assert "missed" not in fields(lines[1])
    finally:
        hub.stop()


@pytest.mark.parametrize("meanwhile", ["line", "listener"], ids=["a-line-into-the-deleted-file", "a-listener-waited"])
def test_where_there_is_no_inotify_sigusr2_keeps_what_was_not_read(home, tmp_path, meanwhile):
    hub = without_inotify(home, tmp_path)
    try:
        assert "notify-watch-unavailable reason='no inotify on this system" in hub.log()
        with seats(hub, "memory", "runtime") as s:
            send(s["memory"], "commons", "first")
            listen_once(hub, "--as", "runtime", "--max-wait", "1")
            send(s["memory"], "@runtime", "unread")
            if meanwhile == "line":  # nothing saw the file go: the hub writes on into it
                (home / "runtime-inbox.log").unlink()
                send(s["memory"], "@runtime", "into the deleted file")
            else:  # a listener found no file and saved its place with none
                send(s["memory"], "@runtime", "unread too")
                (home / "runtime-inbox.log").unlink()
                assert listen_once(hub, "--as", "runtime", "--max-wait", "1")[0] == 0
            hub.proc.send_signal(signal.SIGUSR2)
            logged(hub, "notify-file-lost")
            assert ids(home / "runtime-inbox.log.1") == [2, 3]
            code, lines, _ = listen_once(hub, "--as", "runtime", "--debounce", "0", "--max-wait", "5")
            assert code == 2 and fields(lines[1])["n"] == "2" and "missed" not in fields(lines[1])
    finally:
        hub.stop()


def test_a_first_listener_while_only_dot_one_is_there_does_not_ring_it(home, tmp_path):
    """No listener had run for the seat; its file is deleted and nothing noticed yet (no inotify here). A
    first `--once` takes `.1` as old news (it rang it whole at once); the lines of the deleted file, which no
    listener read, ring once the hub keeps them (SIGUSR2 here, the seat's next line without it)."""
    hub = without_inotify(home, tmp_path, "--notify-rotate-mb", "0.002")  # 2,097 bytes
    path = home / "runtime-inbox.log"
    try:
        with seats(hub, "memory", "runtime") as s:
            while not path.with_name(path.name + ".1").exists():
                send(s["memory"], "@runtime", "filler", "y" * 60)
            send(s["memory"], "@runtime", "in the file to be deleted")
            deleted = ids(path)  # the line that rotated the first file, and this one
            path.unlink()
            assert listen_once(hub, "--as", "runtime", "--debounce", "0", "--max-wait", "1")[0] == 0
            hub.proc.send_signal(signal.SIGUSR2)
            logged(hub, "notify-file-lost")
            assert ids(path.with_name(path.name + ".1")) == deleted
            code, lines, _ = listen_once(hub, "--as", "runtime", "--debounce", "0", "--max-wait", "5")
            wake = fields(lines[1])
            assert code == 2 and wake["n"] == str(len(deleted)) and "missed" not in wake, lines
    finally:
        hub.stop()


def test_sigusr2_still_reopens_when_a_name_cannot_be_looked_at(home, tmp_path):
    notify_dir = tmp_path / "n"
    hub = without_inotify(home, tmp_path, "--notify-dir", str(notify_dir))
    try:
        with seats(hub, "memory", "runtime") as s:
            send(s["memory"], "@runtime", "one")
            notify_dir.rename(tmp_path / "old")
            notify_dir.write_text("not a directory")  # every name under it: ENOTDIR
            hub.proc.send_signal(signal.SIGUSR2)
            logged(hub, "sigusr2")
            assert "notify-recover-failed" in hub.log() and "Traceback" not in hub.log()
            send(s["memory"], "@runtime", "two")
            assert ids(tmp_path / "old" / "runtime-inbox.log") == [1]  # nothing more into the moved file
            assert "notify-write-failed" in hub.log()
    finally:
        hub.stop()


def test_a_missing_notify_directory_costs_one_failure_line_not_one_a_delivery(home, tmp_path):
    notify_dir = tmp_path / "n"
    hub = Hub(home, "--notify-dir", str(notify_dir)).start()
    try:
        with seats(hub, "memory", "runtime") as s:
            send(s["memory"], "@runtime", "one")
            with stopped(hub):  # else it makes the directory again at once
                notify_dir.rename(tmp_path / "old")
                notify_dir.write_text("not a directory: the hub cannot make it again")
            logged(hub, "notify-recover-failed")
            for i in range(3):
                send(s["memory"], "@runtime", f"into nothing {i}")
            hub.call("hub.sweep")
            assert hub.log().count(" notify-recover-failed ") == 1 and " notify-write-failed " in hub.log()
    finally:
        hub.stop()


def test_seats_still_queued_when_the_hub_stops_are_left_to_their_next_lines(home):
    hub = Hub(home).start()
    try:
        names = [f"s{i:03d}" for i in range(400)]
        for name in names:
            hub.add_agent(name)
        with seats(hub, "memory") as s:
            send(s["memory"], "commons", "to all")
        with stopped(hub):
            for name in names:
                (home / f"{name}-inbox.log").unlink()
            hub.proc.send_signal(signal.SIGTERM)
        assert hub.proc.wait(timeout=30) == 0
    finally:
        hub.stop()
    assert "Traceback" not in hub.log() and " stopped" in hub.log()


def _restarted(hub: Hub, how: str) -> Hub:
    if how == "kill":
        hub.kill9()
    else:
        assert hub.stop() == 0
    return hub


def whole_line_ids(path) -> list[int]:
    """The ids of the file's whole lines (a torn line or zeros left before them are not one)."""
    found = []
    for raw in path.read_bytes().split(b"\n")[:-1]:
        try:
            found.append(json.loads(raw)["id"])
        except ValueError:
            continue
    return found


def _leave(path, left: str) -> None:
    """The notify file as a hand or a cut may leave it while no hub runs."""
    if left == "deleted":
        path.unlink()
        return
    data = path.read_bytes()
    with open(path, "r+b") as file:  # in place: the same inode
        file.truncate(0)
        file.write({"emptied": b"", "torn": data[:25], "zeros": b"\0" * len(data)}[left])


@pytest.mark.parametrize("left", ["deleted", "emptied", "torn", "zeros"])
@pytest.mark.parametrize("how", ["stop", "kill"])
@pytest.mark.parametrize("dot_one", [True, False], ids=["beside-dot-one", "alone"])
def test_a_file_lost_while_no_hub_ran_rings_what_was_unread_once_at_the_next_start(home, how, dot_one, left):
    """The listener had read past what `.1` holds (or there is no `.1`), and the file it read holds no whole
    line now: start-up replays after its saved place, not after `.1`'s last line (which it had rung) nor
    after the mark the hub stored (which the lost file held, unread)."""
    path = home / "runtime-inbox.log"
    hub = Hub(home, "--notify-rotate-mb", "0.002").start()  # 2,097 bytes
    try:
        with seats(hub, "memory", "runtime") as s:
            send(s["memory"], "@runtime", "0", "y" * 60)
            while dot_one and not path.with_name(path.name + ".1").exists():
                send(s["memory"], "@runtime", "filler", "y" * 60)
            send(s["memory"], "@runtime", "read")  # under the name, past `.1`
            listen_once(hub, "--as", "runtime", "--max-wait", "1")  # arms at the end: rang it all
            read = ids(path)[-1]
            send(s["memory"], "@runtime", "unread one")
            send(s["memory"], "@runtime", "unread two")
        _restarted(hub, how)
        _leave(path, left)
        hub = Hub(home, "--notify-rotate-mb", "0.002").start()
        code, lines, _ = listen_once(hub, "--as", "runtime", "--debounce", "0", "--max-wait", "5")
        assert code == 2, lines
        wake = fields(lines[1])
        assert wake["n"] == "2" and "missed" not in wake, lines
        assert ids(path.with_name(path.name + ".1")) == [read]  # `.1` ends where the listener had got to
        assert whole_line_ids(path) == [read + 1, read + 2]
        assert listen_once(hub, "--as", "runtime", "--debounce", "0", "--max-wait", "1")[0] == 0  # rung once
    finally:
        hub.stop()


def test_a_listener_holding_the_deleted_file_across_a_restart_rings_what_the_crash_left_unwritten(home):
    """The hub killed between a COMMIT and its line, the file deleted while no hub ran: the next start writes
    that line under the name, where a listener still holding the deleted file goes on (it does not read `.1`)."""
    from tests.test_notify import crash_during_send

    hub = Hub(home).start()
    with seats(hub, "memory", "runtime") as s:
        send(s["memory"], "@runtime", "read")
    ear = Listener(hub, "--as", "runtime", "--debounce", "0")
    try:
        ear.next_line()
        assert hub.stop() == 0
        crash_during_send(home, "after-commit")  # delivery 2 stored, its line never written
        (home / "runtime-inbox.log").unlink()
        hub = Hub(home).start()
        wake = fields(ear.wait_for("AGORA_WAKE"))
        assert (wake["channels"], wake["n"]) == ("dm:memory--runtime#2", "1") and "missed" not in wake
    finally:
        ear.stop()
        hub.stop()


def test_a_place_saved_with_no_file_does_not_ring_again_what_start_up_keeps_in_dot_one(home):
    """Both files deleted while no hub ran, and a `--once` ran meanwhile: it saved its place with no file. The
    next start ends a new `.1` at that place; the next `--once` reads it skipping what the place says it
    rang (it read such a `.1` whole, ringing the newest delivery again)."""
    path = home / "runtime-inbox.log"
    hub = Hub(home).start()
    try:
        with seats(hub, "memory", "runtime") as s:
            send(s["memory"], "@runtime", "read")
            assert listen_once(hub, "--as", "runtime", "--max-wait", "1")[0] == 0  # arms at the end: rang it
        assert hub.stop() == 0
        path.unlink()
        assert listen_once(hub, "--as", "runtime", "--debounce", "0", "--max-wait", "1")[0] == 0
        assert json.loads((home / "listen-runtime.offset").read_text()) == {"inode": None, "pos": 0, "id": 1}
        hub = Hub(home).start()
        assert ids(path.with_name(path.name + ".1")) == [1]
        assert listen_once(hub, "--as", "runtime", "--debounce", "0", "--max-wait", "1")[0] == 0
        with hub.client("memory") as memory:
            send(memory, "@runtime", "next")
        code, lines, _ = listen_once(hub, "--as", "runtime", "--debounce", "0", "--max-wait", "5")
        assert code == 2 and fields(lines[1])["n"] == "1" and "missed" not in fields(lines[1]), lines
    finally:
        hub.stop()


def test_a_dot_one_start_up_cannot_write_leaves_no_delivery_out_of_the_files(home, tmp_path):
    """The disk full when start-up would end `.1` at the listener's place (a sitecustomize makes writing a
    `.1` fail): the replay after `.1` stands, so the files miss no line (some wake again) rather than the
    lines between `.1` and the listener's place going missing for good."""
    path = home / "runtime-inbox.log"
    held = None
    hub = Hub(home, "--notify-rotate-mb", "0.002").start()  # 2,097 bytes
    try:
        with seats(hub, "memory", "runtime") as s:
            while not path.with_name(path.name + ".1").exists():
                send(s["memory"], "@runtime", "filler", "y" * 60)
            send(s["memory"], "@runtime", "read")
            listen_once(hub, "--as", "runtime", "--max-wait", "1")  # rang the file under the name too
            send(s["memory"], "@runtime", "unread")
        assert hub.stop() == 0
        kept = ids(path.with_name(path.name + ".1"))
        lost = ids(path)
        # Held open, the deleted file keeps its inode number, so the replay makes a file of another: freed,
        # the number can come back for the replay (the CI of e56a736), and the listener's place, checked
        # against the same lines, rightly resumes in it (n=1), which is not what this test is about.
        held = os.open(path, os.O_RDONLY)
        path.unlink()
        hub = Hub(home, "--notify-rotate-mb", "0.002")
        hub.env = with_sitecustomize(hub.env, tmp_path, (
            "import errno\nfrom agorad.surface import filenames\n_write = filenames.write_private\n"
            "def _full(path, *args, **kwargs):\n"
            "    if str(path).endswith('.1'):\n"
            "        raise OSError(errno.ENOSPC, 'No space left on device')\n"
            "    return _write(path, *args, **kwargs)\n"
            "filenames.write_private = _full\n"))
        hub.start()
        assert "notify-recover-failed" in hub.log()
        assert ids(path.with_name(path.name + ".1")) == kept and ids(path) == lost  # replayed whole, after `.1`
        code, lines, _ = listen_once(hub, "--as", "runtime", "--debounce", "0", "--max-wait", "5")
        assert code == 2 and fields(lines[1])["n"] == str(len(lost)), lines  # the unread, and what rang again
    finally:
        if held is not None:
            os.close(held)
        hub.stop()
