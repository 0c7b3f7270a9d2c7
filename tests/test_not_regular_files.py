"""Something other than a regular file under one of the home's names: a FIFO (`mkfifo`, by a slip or
on purpose), a socket. A plain open of a FIFO waits for its other end, so each reader and writer of the
home's files opens without waiting and takes such a thing for a missing or unreadable file: nothing
hangs (before, the hub's start, `agora check`, every command reading `hub.url`, a listener, the hub's
appends and the driver's logs all could), and every other seat is served as before."""

import json
import os
import re
import socket
import subprocess

import pytest

from agora_drive import journal
from tests.hubproc import AGORA, AGORAD, Hub, wait_for
from tests.listenproc import fields, listen_once
from tests.seats import seats, send

pytestmark = pytest.mark.timeout(120)


def agora(hub: Hub, *args: str, timeout: float = 20) -> subprocess.CompletedProcess:
    return subprocess.run([AGORA, "--home", str(hub.home), *args], capture_output=True, text=True,
                          env=hub.env, timeout=timeout)


def test_fifos_under_a_seats_small_files_hang_no_reader(hub):
    home = hub.home
    with seats(hub, "a", "b") as s:
        send(s["a"], "@b", "one")
    hub.stop()
    for name in ("listen-b.offset", "listen-b.pid", "listen-b.backoff", "hook-b.stop.stamp", "drive-b.pid",
                 "drive-b.state", "hub.url"):
        os.mkfifo(home / name, 0o600)
    hub.start()  # its start-up reads the place each listener saved (notify_reconcile.rung_id)
    report = json.loads(agora(hub, "check", "--json").stdout)  # every command reads hub.url first
    b = next(seat for seat in report["seats"] if seat["agent"] == "b")
    assert b["problems"] == [f"{home / 'listen-b.offset'} is not an offset (the next listener reads the file "
                             "from its start)"]
    status = agora(hub, "status", "--json")
    assert status.returncode == 0, status.stderr
    b = next(agent for agent in json.loads(status.stdout)["agents"] if agent["id"] == "b")
    assert (b["listener"], b["driver"], b["hook"]) == ("stale", "stale", None), b  # a pid file no one can read
    # No place to read: it reads the file from its start (agora-listen(1)), so "one" rings.
    code, lines, stderr = listen_once(hub, "--as", "b", "--max-wait", "5", "--debounce", "0")
    assert code == 2 and fields(lines[1])["n"] == "1", (lines, stderr)
    with hub.client("a") as a:
        send(a, "@b", "two")


def test_a_fifo_key_file_is_no_key(hub):
    with seats(hub, "a", "b") as s:
        send(s["a"], "@b", "one")
    key = hub.home / "keys" / "b.key"
    key.unlink()
    os.mkfifo(key, 0o600)
    done = agora(hub, "inbox", "--as", "b")
    assert done.returncode != 0 and f"no key for b: {key} is not a regular file" in done.stderr, done.stderr
    stop = subprocess.run([AGORA, "--home", str(hub.home), "hook", "stop", "--harness", "claude", "--as", "b"],
                          input="{}", capture_output=True, text=True, env=hub.env, timeout=20)
    assert stop.returncode == 0 and f"{key} is not a regular file" in stop.stderr, stop.stderr  # the turn ends


@pytest.mark.parametrize("content, words", [(b"", "is empty"), (b" \n", "holds no key (only blank space)"),
                                            (b"\xff\xfe", "does not hold a key (it is not UTF-8 text)"),
                                            (b"k" * ((1 << 20) + 1), "does not hold a key (it is larger than")])
def test_a_key_file_that_holds_no_key_is_named_with_what_is_wrong(hub, content, words, monkeypatch):
    """Before, each said "no key for b: ... create keys/b.key", though the file was there."""
    from agora_sdk import Client, Unauthorized

    hub.add_agent("b")
    key = hub.home / "keys" / "b.key"
    key.write_bytes(content)
    done = agora(hub, "inbox", "--as", "b")
    assert done.returncode != 0 and f"no key for b: {key} {words}" in done.stderr, done.stderr
    monkeypatch.delenv("AGORA_KEY", raising=False)
    with pytest.raises(Unauthorized, match=re.escape(f"no key for b: {key} {words}")):
        Client("b", home=hub.home)
    key.unlink()  # nothing there: the remedy alone, as before
    done = agora(hub, "inbox", "--as", "b")
    assert f"no key for b: set AGORA_KEY or put the seat's key in {key}" in done.stderr, done.stderr


def test_a_fifo_under_a_notify_name_blocks_neither_the_hub_nor_a_listener(hub):
    """The hub opened the FIFO and appended to it until its buffer was full (64 KiB), then blocked on
    every request; a listener's open waited for a writer."""
    with seats(hub, "a", "b", "c"):
        pass
    hub.stop()
    notify = hub.home / "b-inbox.log"
    notify.unlink()
    os.mkfifo(notify, 0o600)
    hub.start()
    with hub.client("a") as a:
        for n in range(300):  # about 75 KiB of lines: past a pipe's buffer
            send(a, "@b", f"title {n} " + "x" * 150)
        send(a, "@c", "for c")
    failed = [line for line in hub.log().splitlines() if " notify-write-failed " in line]
    assert len(failed) == 1 and "error='not a regular file; remove it'" in failed[0], failed  # not 301
    assert "for c" in (hub.home / "c-inbox.log").read_text()
    code, lines, stderr = listen_once(hub, "--as", "b", "--max-wait", "1")
    assert code == 0 and lines[-1] == "AGORA_LISTEN ended reason=max-wait", (lines, stderr)
    notify.unlink()  # removed, as the log says: the hub's next line makes the file again
    with hub.client("a") as a:
        send(a, "@b", "after")
    titles = [json.loads(line)["title"] for line in notify.read_text().splitlines()]  # none lost meanwhile
    assert titles == [f"title {n} " + "x" * 150 for n in range(300)] + ["after"]
    assert hub.log().count(" notify-write-resumed agent=b ") == 1


def test_a_fifo_under_a_drive_log_is_refused_not_waited_on(tmp_path):
    log = tmp_path / "drive-b.turns.jsonl"
    os.mkfifo(log, 0o600)
    with pytest.raises(OSError, match="not a regular file"):
        journal.append(log, {"turn": 1}, limit_bytes=1 << 20)
    assert journal.tail(log, 5) == []


def test_a_small_file_grown_past_its_bound_is_not_read_into_memory(hub):
    """A place padded to 2 MiB (still JSON) is read as no place, as a corrupt one is: the next listener
    reads the file from its start. A file of gigabytes under the name is refused the same, unread."""
    with seats(hub, "a", "b") as s:
        send(s["a"], "@b", "one")
    listen_once(hub, "--as", "b", "--max-wait", "5", "--debounce", "0")  # rings "one", saves its place
    offset = hub.home / "listen-b.offset"
    assert json.loads(agora(hub, "check", "--json").stdout)["ok"]
    offset.write_text(offset.read_text() + " " * (2 << 20))
    b = next(seat for seat in json.loads(agora(hub, "check", "--json").stdout)["seats"] if seat["agent"] == "b")
    assert b["problems"] == [f"{offset} is not an offset (the next listener reads the file from its start)"], b
    code, lines, stderr = listen_once(hub, "--as", "b", "--max-wait", "5", "--debounce", "0")
    assert code == 2 and fields(lines[1])["n"] == "1", (lines, stderr)  # "one" again, from the file's start


@pytest.mark.parametrize("suffix", ["-wal", "-shm"])
def test_a_fifo_beside_the_database_stops_the_start_with_a_clear_error(home, suffix):
    """The hub's start waited on it holding the home's lock (so `agora down` found nothing to stop, and
    `agora up` another hub running); SQLite's own open would not fail, its first read would wait."""
    hub = Hub(home).start()
    hub.stop()
    (home / f"agora.db{suffix}").unlink(missing_ok=True)
    os.mkfifo(home / f"agora.db{suffix}", 0o600)
    done = subprocess.run([AGORAD, "--home", str(home)], capture_output=True, text=True, env=hub.env, timeout=20)
    assert done.returncode == 1 and f"agora.db{suffix} is not a regular file; move it away" in done.stderr, done.stderr


def test_a_socket_under_a_notify_name_with_a_dot_one_ahead_does_not_stop_the_start(hub):
    """read_regular gave a socket's ENXIO as a bare OSError, which start-up's reconciliation did not take."""
    with seats(hub, "a", "b") as s:
        send(s["a"], "@b", "one")
    hub.stop()
    notify = hub.home / "b-inbox.log"
    with open(f"{notify}.1", "a") as dot_one:
        dot_one.write(json.dumps({"v": 1, "id": 999, "agent": "b"}) + "\n")  # a line the database lacks
    notify.unlink()
    with socket.socket(socket.AF_UNIX) as planted:
        planted.bind(str(notify))
        hub.start()
    with hub.client("a") as a:
        send(a, "@b", "two")
    assert [json.loads(line)["title"] for line in notify.read_text().splitlines()][-1] == "two"


def test_lines_a_fifo_refused_are_written_as_soon_as_it_is_removed(hub):
    """The hub's watch made the file again at once, but wrote what it had missed only at the seat's next
    delivery (or the sweep): a listener armed meanwhile heard nothing."""
    with seats(hub, "a", "b") as s:
        send(s["a"], "@b", "one")
        fifo = hub.home / ".fifo"
        os.mkfifo(fifo, 0o600)
        os.replace(fifo, hub.home / "b-inbox.log")  # in one step: the hub's watch sees no deletion first
        send(s["a"], "@b", "two")
        send(s["a"], "@b", "three")
        (hub.home / "b-inbox.log").unlink()
        titles = lambda: [json.loads(line)["title"] for line in (hub.home / "b-inbox.log").read_text().splitlines()]
        wait_for(lambda: (hub.home / "b-inbox.log").exists() and titles()[-1:] == ["three"],
                 what="the lines the FIFO refused, written once it went")
    log = hub.log()
    assert log.count(" notify-write-failed ") == 1 and log.count(" notify-write-resumed ") == 1, log


def test_a_renamed_seats_key_file_is_the_one_named(hub):
    """The key is read from the new id's file (it moved with the rename); the message named the old
    id's file, missing, and said nothing of the empty one."""
    hub.add_agent("d")
    assert agora(hub, "agent", "rename", "d", "d2", "--reason", "test").returncode == 0
    key = hub.home / "keys" / "d2.key"
    key.write_bytes(b"")
    done = agora(hub, "inbox", "--as", "d")
    assert done.returncode != 0 and f"no key for d: {key} is empty; set AGORA_KEY or put the seat's key in {key}" \
        in done.stderr, done.stderr
    stop = subprocess.run([AGORA, "--home", str(hub.home), "hook", "stop", "--harness", "claude", "--as", "d"],
                          input="{}", capture_output=True, text=True, env=hub.env, timeout=20)
    assert stop.returncode == 0 and f"no key for d: {key} is empty" in stop.stderr, stop.stderr


DEEP = "[" * 200_000 + "]" * 200_000  # past the JSON parser's depth: RecursionError, not ValueError


def test_files_nested_past_the_parsers_depth_stop_no_start_check_or_hook(hub):
    """A listener's place nested that deep stopped the hub's start and `agora check` with RecursionError;
    a stop hook fed such an event, or a stamp file like it, must still end the turn."""
    with seats(hub, "a", "b") as s:
        send(s["a"], "@b", "one")
    hub.stop()
    (hub.home / "listen-b.offset").write_text(DEEP)
    (hub.home / "hook-b.stop.stamp").write_text(DEEP)
    hub.start()
    report = json.loads(agora(hub, "check", "--json").stdout)
    b = next(seat for seat in report["seats"] if seat["agent"] == "b")
    assert b["problems"] == [f"{hub.home / 'listen-b.offset'} is not an offset (the next listener reads the file "
                             "from its start)"]
    stop = subprocess.run([AGORA, "--home", str(hub.home), "hook", "stop", "--harness", "claude", "--as", "b"],
                          input=DEEP, capture_output=True, text=True, env=hub.env, timeout=20)
    assert stop.returncode == 2 and "Traceback" not in stop.stderr, stop.stderr
    assert "dm:a--b#1" in stop.stderr  # the unread DM re-prompts the turn, as with any event it cannot read
    status = agora(hub, "status", "--json")
    assert status.returncode == 0 and "RecursionError" not in status.stderr, status.stderr
