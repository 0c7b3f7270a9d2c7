"""Notify files: the line contract, modes, rotation, relocation, and crash safety (kill -9)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agora_listen.follow import Follower
from agorad.surface.paths import Home
from tests.hubproc import Hub, stopped
from tests.listenproc import fields, listen_once
from tests.seats import seats, send


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_one_line_per_delivery_for_every_member_but_the_sender(hub):
    with seats(hub, "memory", "runtime", "lead") as s:
        send(s["memory"], "commons", "schema v2 ready", "see migration 0004", to=["runtime"])
        assert (hub.home / "memory-inbox.log").read_bytes() == b""  # made empty at the add (Notifier.create)
        line = lines(hub.home / "runtime-inbox.log")[0]
        assert set(line) == {"v", "id", "ts", "agent", "channel", "seq", "sender", "title", "flags", "preview", "owed"}
        assert (line["v"], line["id"], line["agent"], line["channel"], line["seq"], line["sender"]) == (
            1, 1, "runtime", "commons", 1, "memory")
        assert (line["title"], line["flags"], line["preview"], line["owed"]) == ("schema v2 ready", ["to-me"], "see migration 0004", 0)
        assert lines(hub.home / "lead-inbox.log")[0]["flags"] == []
        assert stat.S_IMODE(os.stat(hub.home / "runtime-inbox.log").st_mode) == 0o600


def test_ids_increase_per_agent_and_preview_is_neutralised(hub):
    with seats(hub, "memory", "runtime") as s:
        send(s["memory"], "commons", "a", "line\nbreak\x1b[31m" + "x" * 300)
        send(s["memory"], "@runtime", "b")
        found = lines(hub.home / "runtime-inbox.log")
        assert [line["id"] for line in found] == [1, 2]
        preview = found[0]["preview"]
        assert len(preview) <= 120 and "\n" not in preview and "\x1b" not in preview


def test_rotation_moves_the_file_to_dot_one(home):
    small = Hub(home, "--notify-rotate-mb", "0.001").start()  # about 1 KiB
    try:
        with seats(small, "memory", "runtime") as s:
            for i in range(12):
                send(s["memory"], "commons", f"message {i}", "y" * 100)
        current, rotated = home / "runtime-inbox.log", home / "runtime-inbox.log.1"
        assert rotated.exists() and current.stat().st_size <= 1100
        ids = [line["id"] for line in lines(rotated) + lines(current)]
        assert ids == sorted(ids) and ids[-1] == 12 and len(ids) == len(set(ids))
    finally:
        small.stop()


def test_a_new_seat_has_an_empty_file_so_a_listener_armed_before_its_first_delivery_counts_every_line(home):
    """Armed on a seat with no delivery yet, the follower holds the file the first lines go to: whatever
    rotates before its first read is read, or counted as missed. (Armed with no file it had no id to count
    from: the first file's lines, rotated out of `.1` before that read, were neither rung nor counted.)"""
    small = Hub(home, "--notify-rotate-mb", "0.001").start()  # about 1 KiB: a rotation every few lines
    try:
        with seats(small, "memory", "runtime") as s:
            path = home / "runtime-inbox.log"
            assert path.stat().st_size == 0 and stat.S_IMODE(path.stat().st_mode) == 0o600
            follower = Follower(path)
            follower.arm(None)  # a first arm, as `agora listen`'s
            for i in range(30):
                send(s["memory"], "commons", f"message {i}", "y" * 100)
            assert lines(path)[0]["id"] > lines(home / "runtime-inbox.log.1")[0]["id"] > 2  # the first file went
            read = [line["id"] for line in follower.read_new()]
            assert read == sorted(set(read)) and read[-1] == 30 and len(read) + follower.missed == 30
            follower.close()
    finally:
        small.stop()


def test_notify_dir_moves_the_files_and_empty_turns_them_off(home, tmp_path):
    elsewhere = tmp_path / "notify"
    moved = Hub(home, "--notify-dir", str(elsewhere)).start()
    try:
        with seats(moved, "memory", "runtime") as s:
            send(s["memory"], "@runtime", "hi")
        assert lines(elsewhere / "runtime-inbox.log")[0]["seq"] == 1
        assert not (home / "runtime-inbox.log").exists()
        assert stat.S_IMODE(os.stat(elsewhere).st_mode) == 0o700
    finally:
        moved.stop()
    silent = Hub(home, "--notify-dir", "").start()
    try:
        with silent.client("memory") as memory:
            memory.call("messages.send", target="@runtime", title="quiet", body="")
        assert len(lines(elsewhere / "runtime-inbox.log")) == 1 and not (home / "runtime-inbox.log").exists()
        assert silent.call("hub.status")["notify_dir"] is None
    finally:
        silent.stop()


def crash_during_send(home, fault: str) -> None:
    """Send one DM on a hub that SIGKILLs itself at `fault`; the sender never gets a reply."""
    from agorad.surface.errors import Unavailable

    crashing = Hub(home)
    crashing.env["AGORA_FAULT"] = fault
    crashing.start()
    with crashing.client("memory") as memory, pytest.raises(Unavailable):
        memory.call("messages.send", target="@runtime", title="in flight", body="")
    crashing.proc.wait(timeout=10)
    assert crashing.proc.returncode == -signal.SIGKILL


@pytest.mark.parametrize("fault, lines_before_restart", [("after-commit", 1), ("after-notify", 2)])
def test_committed_delivery_reaches_the_file_exactly_once_across_kill9(home, fault, lines_before_restart):
    first = Hub(home).start()
    with seats(first, "memory", "runtime") as s:
        send(s["memory"], "@runtime", "before")
    first.stop()
    crash_during_send(home, fault)
    assert len(lines(home / "runtime-inbox.log")) == lines_before_restart
    again = Hub(home).start()
    try:
        found = lines(home / "runtime-inbox.log")
        assert [(line["id"], line["title"]) for line in found] == [(1, "before"), (2, "in flight")]
        assert ("notify-replayed" in again.log()) == (fault == "after-commit")
        with again.client("memory") as memory:  # the hub goes on numbering after the replayed line
            memory.call("messages.send", target="@runtime", title="after", body="")
        assert [line["id"] for line in lines(home / "runtime-inbox.log")] == [1, 2, 3]
        with again.client("runtime") as runtime:
            assert [m["seq"] for m in runtime.call("inbox.check")["channels"][0]["messages"]] == [1, 2, 3]
    finally:
        again.stop()


@pytest.mark.skipif(os.getuid() == 0, reason="root writes through file modes; the directory test covers root")
def test_a_failed_write_is_filled_in_from_the_database(hub):
    with seats(hub, "memory", "runtime") as s:
        send(s["memory"], "@runtime", "one")
        os.chmod(hub.home / "runtime-inbox.log", 0o400)
        hub.proc.send_signal(signal.SIGUSR2)  # drop the open descriptor so the next write reopens
        hub.call("hub.hello")
        send(s["memory"], "@runtime", "two")
        assert "notify-write-failed" in hub.log()
        os.chmod(hub.home / "runtime-inbox.log", 0o600)
        send(s["memory"], "@runtime", "three")
        assert [line["title"] for line in lines(hub.home / "runtime-inbox.log")] == ["one", "two", "three"]


def test_a_missing_directory_is_filled_in_once_it_is_back(home, tmp_path):
    notify_dir = tmp_path / "n"
    running = Hub(home, "--notify-dir", str(notify_dir)).start()
    try:
        with seats(running, "memory", "runtime") as s:
            send(s["memory"], "@runtime", "one")
            with stopped(running):  # else it makes the directory again at once
                notify_dir.rename(tmp_path / "gone")
                notify_dir.write_text("not a directory")  # writes now fail
            running.proc.send_signal(signal.SIGUSR2)
            running.call("hub.hello")
            send(s["memory"], "@runtime", "two")
            assert "notify-write-failed" in running.log()
            notify_dir.unlink()
            notify_dir.mkdir(mode=0o700)
            running.call("hub.sweep")  # the sweep retries what is behind
            assert [line["title"] for line in lines(notify_dir / "runtime-inbox.log")] == ["two"]
    finally:
        running.stop()


def test_rename_takes_the_notify_file_along(hub):
    with seats(hub, "memory", "runtime") as s:
        send(s["memory"], "@runtime", "one")
        hub.call("agents.rename", old="runtime", new="engine", reason="split")
        send(s["memory"], "@runtime", "two")
        assert not (hub.home / "runtime-inbox.log").exists()
        found = lines(hub.home / "engine-inbox.log")
        assert [(line["id"], line["title"]) for line in found] == [(1, "one"), (2, "two")]
        assert found[1]["agent"] == "engine"


def test_sigusr2_reopens_a_file_moved_away(hub):
    with seats(hub, "memory", "runtime") as s:
        send(s["memory"], "@runtime", "one")
        os.replace(hub.home / "runtime-inbox.log", hub.home / "archived.log")
        hub.proc.send_signal(signal.SIGUSR2)
        hub.call("hub.hello")
        send(s["memory"], "@runtime", "two")
        assert [line["title"] for line in lines(hub.home / "runtime-inbox.log")] == ["two"]
        assert "sigusr2" in hub.log()


def test_notify_file_symlink_is_not_followed(hub, tmp_path):
    target = tmp_path / "outside"
    target.write_text("")
    with seats(hub, "memory", "runtime") as s:
        (hub.home / "runtime-inbox.log").unlink()  # the empty file the add made, swapped for a link
        os.symlink(target, hub.home / "runtime-inbox.log")
        send(s["memory"], "@runtime", "one")
        assert target.read_text() == ""
        assert "notify-write-failed" in hub.log()


def test_one_batch_of_lines_is_written_whole_and_rotates_between_lines(tmp_path):
    """Several deliveries for one agent go out in as few writes as the rotation size allows."""
    from agorad.runtime.notify import Notifier, notify_line

    rows = [{"id": i, "ts": 1.5, "agent": "runtime", "channel": "commons", "seq": i, "sender": "memory",
             "title": f"t{i}", "body": "b" * 150, "flags": "", "owed": 0} for i in range(11, 31)]
    size = len(notify_line(rows[0]))  # every line is this long: two-digit ids
    notifier = Notifier(tmp_path, rotate_bytes=size * 6 + 1)  # six lines fit, the seventh rotates
    notifier.written[7] = 10  # as if the file already held ids 1-10
    notifier.write(None, 7, rows[:3])
    notifier.write(None, 7, rows[3:])
    notifier.close()
    current, rotated = tmp_path / "runtime-inbox.log", tmp_path / "runtime-inbox.log.1"
    assert [line["id"] for line in lines(rotated)] == [23, 24, 25, 26, 27, 28]
    assert [line["id"] for line in lines(current)] == [29, 30]
    assert notifier.written[7] == 30


@given(st.fixed_dictionaries({
    "id": st.integers(1, 2**63 - 1), "ts": st.floats(0, 4e9, allow_nan=False) | st.integers(0, 2**40),
    "agent": st.text(max_size=20), "channel": st.text(max_size=30), "seq": st.integers(1, 2**63 - 1),
    "sender": st.text(max_size=20), "title": st.text(max_size=250), "body": st.text(max_size=300),
    "flags": st.sampled_from(["", "to-me", "to-me,dm", "to-me,dm,open,escalated"]) | st.lists(st.sampled_from(["to-me", "dm", ""])),
    "owed": st.integers(0, 10**6),
}, optional={"preview": st.text(max_size=130)}))
def test_the_formatted_notify_line_is_the_encoded_contract_fields(row):
    """notify_line formats the line directly for speed; it must be encode(line_fields(row)) byte for byte."""
    from agorad.runtime.notify import line_fields, notify_line
    from agorad.surface.protocol import encode

    assert notify_line(row) == encode(line_fields(row))


_EVENT = st.fixed_dictionaries({
    "ts": st.floats(0, 4e9, allow_nan=False) | st.integers(0, 2**40), "channel": st.text(max_size=30),
    "seq": st.integers(1, 2**63 - 1), "sender": st.text(max_size=20), "title": st.text(max_size=250),
    "body": st.text(max_size=300)}, optional={"preview": st.text(max_size=130)})
_RECIPIENT = st.tuples(
    st.integers(1, 2**62), st.integers(0, 10**6),
    st.sampled_from(["", "to-me", "to-me,dm", "to-me,dm,open,escalated", "next-turn", "to-me,open,next-turn"]))


@settings(max_examples=60, deadline=None)
@given(_EVENT, st.lists(_RECIPIENT, min_size=2, max_size=5), st.booleans(), st.booleans())
def test_a_fan_outs_lines_are_each_the_encoded_contract_fields(tmp_path_factory, event, recipients, ahead, one_closed):
    """A fan-out formats each line from its event's template (the parts every delivery shares formatted
    once, `%` escaped in them), here or ahead (`Notifier.prepare`, on the helper thread during COMMIT,
    for a file that may not be open yet); every line written must still be encode(line_fields(row))."""
    from agorad.domain.delivery import Deliveries
    from agorad.runtime.notify import Notifier, line_fields
    from agorad.surface.protocol import encode

    directory = tmp_path_factory.mktemp("fan")
    agents = [f"agent-{n}" for n in range(len(recipients))]
    notifier = Notifier(directory)
    for pk, agent in enumerate(agents):  # each file open and one id behind: the inlined path
        notifier.written[pk] = 0
        notifier._fd(pk, agent, 0)
    deliveries = Deliveries(event, [(pk, agent, 1, flags, owed)
                                    for pk, (agent, (_, owed, flags)) in enumerate(zip(agents, recipients))])
    if one_closed:  # its line made without its open file's JSON id; written by the general path
        notifier._close(agents[0])
    if ahead:
        notifier.prepare(deliveries)
    notifier.write_all(None, deliveries)
    notifier.close()
    for row in deliveries:
        assert (directory / f"{row['agent']}-inbox.log").read_bytes() == encode(line_fields(row))
    assert notifier.written == {pk: 1 for pk in range(len(agents))}


def test_a_fan_out_writes_one_line_per_agent_and_falls_back_per_agent(tmp_path):
    """write_all's inlined path (open file, next id, far from rotating) and the general path (a file not
    open yet, an agent behind, an id gap) give the same files."""
    from agorad.domain.delivery import Deliveries
    from agorad.runtime.notify import Notifier

    def post(*recipients):
        event = {"ts": 2.5, "channel": "commons", "seq": 9, "sender": "memory", "title": "t", "body": "b", "preview": "b"}
        return Deliveries(event, [(pk, agent, delivery_id, "", 0) for pk, agent, delivery_id in recipients])

    notifier = Notifier(tmp_path)
    notifier.write_all(None, post((1, "ann", 1), (2, "bob", 1), (3, "cy", 1)))  # none open yet
    notifier.write_all(None, post((1, "ann", 2), (2, "bob", 2), (3, "cy", 2)))  # all open: inlined
    notifier.close()
    for agent in ("ann", "bob", "cy"):
        assert [line["id"] for line in lines(tmp_path / f"{agent}-inbox.log")] == [1, 2]
    assert notifier.written == {1: 2, 2: 2, 3: 2}


def test_a_big_fan_out_writes_from_two_threads_and_a_failed_file_only_costs_its_own_agent(tmp_path):
    """Above helper.HELPER_FROM lines a second thread writes half of them. Every line lands whole
    in its own file; a file whose write fails (here a read-only descriptor) is left
    behind for the catch-up, and no other agent's line is lost or doubled."""
    from agorad.domain.delivery import Deliveries
    from agorad.runtime.helper import Helper
    from agorad.runtime.notify import Notifier
    from agorad.surface.protocol import encode
    from agorad.runtime.notify import line_fields

    agents = [f"agent-{n:03d}" for n in range(40)]
    notifier = Notifier(tmp_path)
    notifier.helper = Helper(two_threads_from=4)
    for pk, agent in enumerate(agents):
        notifier.written[pk] = 0
        notifier._fd(pk, agent, 0)
    event = {"ts": 2.5, "channel": "commons", "seq": 9, "sender": "memory", "title": "t", "body": "b", "preview": "b"}
    deliveries = Deliveries(event, [(pk, agent, 1, "", 0) for pk, agent in enumerate(agents)])
    failing = notifier._files["agent-030"]  # in the helper thread's half: a descriptor that cannot write
    os.close(failing.fd)
    failing.fd = os.open(tmp_path / "agent-030-inbox.log", os.O_RDONLY)
    notifier.write_all(None, deliveries)
    notifier.close()
    assert notifier.behind == {30}
    assert notifier.written == {pk: (0 if pk == 30 else 1) for pk in range(len(agents))}
    for row in deliveries:
        path = tmp_path / f"{row['agent']}-inbox.log"
        assert path.read_bytes() == (b"" if row["agent"] == "agent-030" else encode(line_fields(row)))


def test_a_post_to_a_big_channel_gives_each_member_its_own_line_once(hub):
    """Through a real hub, a fan-out past helper.HELPER_FROM: its lines are formatted on the helper
    thread during the COMMIT and half of them written from it. Each member's file gets exactly its
    own lines, in id order; a second post follows the first."""
    from agorad.runtime.helper import HELPER_FROM

    members = [f"m-{n:03d}" for n in range(HELPER_FROM + 20)]
    with hub.client() as operator:
        for agent in members:
            operator.call("agents.add", agent=agent, liveness_mode="always-on")
    with seats(hub, "poster") as s:
        send(s["poster"], "commons", "first", "one")
        send(s["poster"], "commons", "second", "two")
    for agent in members:
        found = lines(hub.home / f"{agent}-inbox.log")
        assert [(line["id"], line["agent"], line["title"], line["seq"]) for line in found] == [
            (1, agent, "first", 1), (2, agent, "second", 2)]
    assert "helper-failed" not in hub.log() and "notify-write-failed" not in hub.log()


def test_the_helper_writes_every_pair_in_order_and_returns_each_result(tmp_path):
    from agorad.runtime.helper import Helper

    fds = [os.open(tmp_path / f"f{n}", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600) for n in range(10)]
    closed = fds[7]
    os.close(closed)
    appender = Helper(two_threads_from=2)
    try:
        results = appender.write_each([(fd, b"line %d\n" % n) for n, fd in enumerate(fds)])
    finally:
        appender.close()
        for fd in fds:
            if fd != closed:
                os.close(fd)
    assert [type(r) for r in results] == [int] * 7 + [OSError] + [int] * 2
    assert [(tmp_path / f"f{n}").read_bytes() for n in range(10) if n != 7] == [b"line %d\n" % n for n in range(10) if n != 7]


SHORT_WRITE = '''
import json, resource, signal, sys
from pathlib import Path
from agorad.runtime.notify import Notifier, notify_line
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a short write instead of death at the size limit
rows = [{"id": i, "ts": 1.5, "agent": "runtime", "channel": "commons", "seq": i, "sender": "memory",
         "title": f"t{i}", "body": "b" * 100, "flags": "", "owed": 0} for i in range(1, 6)]
size = len(notify_line(rows[0]))
resource.setrlimit(resource.RLIMIT_FSIZE, (size * 2 + size // 2, resource.RLIM_INFINITY))
notifier = Notifier(Path(sys.argv[1]), rotate_bytes=0)
notifier.write(None, 7, rows)
print(json.dumps({"written": notifier.written.get(7, 0), "behind": 7 in notifier.behind}))
'''


def test_a_short_write_counts_the_whole_lines_it_did_write(tmp_path):
    """Review finding: lines 1..k of a cut-short write were appended again by the catch-up."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", SHORT_WRITE, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    state = json.loads(out.stdout)
    assert state == {"written": 2, "behind": True}  # two whole lines landed, the third was torn
    assert (tmp_path / "runtime-inbox.log").read_bytes().count(b"\n") == 2


def _saved_offset(home, agent: str, path) -> dict:
    """A listener's saved place at the end of `path`, as `agora listen --once` leaves it."""
    offset = {"inode": os.stat(path).st_ino, "pos": path.stat().st_size, "id": lines(path)[-1]["id"]}
    (home / f"listen-{agent}.offset").write_text(json.dumps(offset))
    return offset


def _three_dms_then_stopped(home):
    """memory DMs runtime "one", "two", "three" on a hub that then stops; runtime's notify file."""
    first = Hub(home).start()
    with seats(first, "memory", "runtime") as s:
        for title in ("one", "two", "three"):
            send(s["memory"], "@runtime", title)
    first.stop()
    return home / "runtime-inbox.log"


def test_lines_for_deliveries_the_database_lost_are_dropped_and_ids_never_reused(home):
    """As after a power cut at --synchronous normal: the file (and a listener) saw ids 4 and 5,
    the database kept 1..3. The file is rewritten as a new inode without them, the next delivery is
    numbered 6, and the listener re-reads the file rather than resume inside different lines."""
    from agora_listen.follow import Follower

    path = _three_dms_then_stopped(home)
    held = path.read_bytes()
    lost = [json.dumps({**lines(path)[-1], "id": n, "title": f"lost {n}"}, separators=(",", ":")) for n in (4, 5)]
    path.write_bytes(held + "".join(line + "\n" for line in lost).encode())
    offset = _saved_offset(home, "runtime", path)
    again = Hub(home).start()
    try:
        assert path.read_bytes() == held and os.stat(path).st_ino != offset["inode"]
        assert "notify-reconciled" in again.log()
        with again.client("memory") as memory:
            memory.call("messages.send", target="@runtime", title="after", body="")
        assert [(line["id"], line["title"]) for line in lines(path)][-2:] == [(3, "three"), (6, "after")]
        follower = Follower(path)
        follower.arm(offset)
        assert [line["title"] for line in follower.read_new()] == ["one", "two", "three", "after"]
        follower.close()
    finally:
        again.stop()


@pytest.mark.parametrize("where", ["line", "place"])
def test_an_id_no_hub_could_reach_in_a_file_does_not_raise_the_seats_ids(home, where):
    """A notify line or a saved place edited by hand to name id 2**63-1: start-up raised the seat's ids above
    it, past what SQLite holds, and every later send to the seat failed (OverflowError). Such an id is not
    believed (MAX_FILE_ID); a line naming it is still dropped, as any line the database does not hold."""
    path = _three_dms_then_stopped(home)
    huge = 2**63 - 1
    if where == "line":
        path.write_bytes(path.read_bytes() + json.dumps({**lines(path)[-1], "id": huge}).encode() + b"\n")
    else:
        (home / "listen-runtime.offset").write_text(json.dumps({"inode": None, "pos": 0, "id": huge}))
    again = Hub(home).start()
    try:
        with again.client("memory") as memory:
            memory.call("messages.send", target="@runtime", title="after", body="")
        assert [line["id"] for line in lines(path)] == [1, 2, 3, 4]
    finally:
        again.stop()


def test_a_seat_whose_every_delivery_the_database_lost_has_its_lines_dropped_and_ids_never_reused(home, tmp_path):
    """As above, where the database kept none of the seat's deliveries: start-up passes over a seat with no
    delivery only when its file is the empty one its add made, not one holding lines the database lost. A
    listener first armed after that start, on the empty file, counts nothing as missed at id 3 (ids 1 and 2
    were before its arm: a follower counting ids from 0 in an empty file did, found by a review)."""
    first = Hub(home).start()
    first.add_agent("memory")
    first.add_agent("runtime")
    first.stop()
    before = tmp_path / "before"
    before.mkdir()
    for part in Home(home).db_files:
        if part.exists():
            shutil.copy2(part, before / part.name)
    second = Hub(home).start()
    with second.client("memory") as memory:
        send(memory, "@runtime", "one")
        send(memory, "@runtime", "two")
    second.stop()
    for part in Home(home).db_files:  # the database as it was before the two: as a cut at NORMAL can leave it
        part.unlink(missing_ok=True)
    for part in before.iterdir():
        shutil.copy2(part, home / part.name)
    path = home / "runtime-inbox.log"
    assert [line["id"] for line in lines(path)] == [1, 2]
    again = Hub(home).start()
    try:
        assert lines(path) == [] and "notify-reconciled" in again.log()
        assert listen_once(again, "--as", "runtime", "--max-wait", "1")[0] == 0  # a first arm: its place saved
        with again.client("memory") as memory:
            send(memory, "@runtime", "after")
        assert [(line["id"], line["title"]) for line in lines(path)] == [(3, "after")]
        code, woke, _ = listen_once(again, "--as", "runtime", "--debounce", "0", "--max-wait", "5")
        assert code == 2 and (fields(woke[1])["n"], fields(woke[1]).get("missed")) == ("1", None)
    finally:
        again.stop()


def test_a_lost_tail_is_replayed_so_a_listener_resumes_from_its_saved_offset(home):
    """As after a power cut at --synchronous full: the database holds every delivery, the file lost
    its tail mid-line after a listener had read it all. Replay ends the torn line and writes the same
    lines again, so the listener, resuming at its saved byte offset, rings the next delivery and
    nothing is hidden from it."""
    from agora_listen.follow import Follower

    path = _three_dms_then_stopped(home)
    held = path.read_bytes()
    offset = _saved_offset(home, "runtime", path)
    torn = held.index(b"\n") + 10
    os.truncate(path, torn)  # the second line torn
    again = Hub(home).start()
    try:
        assert path.read_bytes() == held[:torn] + b"\n" + held[held.index(b"\n") + 1:]
        assert os.stat(path).st_ino == offset["inode"]
        with again.client("memory") as memory:
            memory.call("messages.send", target="@runtime", title="after", body="")
        follower = Follower(path)
        follower.arm(offset)
        assert [(line["id"], line["title"]) for line in follower.read_new()] == [(4, "after")]
        follower.close()
    finally:
        again.stop()


def test_start_up_reads_a_seat_from_its_rotated_file_alone_and_from_an_offset_alone(home):
    """Start-up lists each directory once and surveys only the seats with files (at 10,000 seats, opening
    every absent file was most of a second). A seat whose file rotated to `.1` with no new file yet is
    not replayed; a seat with only a listener's saved offset still raises its floor above that id."""
    path = _three_dms_then_stopped(home)
    os.replace(path, f"{path}.1")
    again = Hub(home).start()
    try:
        with seats(again, "cy") as s:
            send(s["cy"], "@runtime", "four")
        assert [line["id"] for line in lines(path)] == [4]  # 1-3 stayed in .1, not replayed
    finally:
        again.stop()
    os.remove(path)
    os.remove(f"{path}.1")
    (home / "listen-runtime.offset").write_text(json.dumps({"inode": 1, "pos": 0, "id": 9}))
    third = Hub(home).start()
    try:
        with third.client("cy") as cy:
            cy.call("messages.send", target="@runtime", title="after", body="")
        assert [line["id"] for line in lines(path)] == [10]  # above the id the listener saw
    finally:
        third.stop()
