"""A rename or a removal stops between its COMMIT and the seat's files: the next start finishes the rename
(runtime/renames.py), so the seat is not locked out and its wakes go on in the file its listener reads; a
seat added later under a removed id starts without the files the removal left."""

from __future__ import annotations

import json
import signal

import pytest

from agorad.surface.errors import Unavailable
from tests.hubproc import Hub
from tests.listenproc import listen_once
from tests.seats import seats, send


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_files_a_cut_rename_left_under_the_former_id_take_the_seats_id_at_start(hub):
    with seats(hub, "memory", "runtime") as s:
        send(s["memory"], "@runtime", "one")
    key = (hub.home / "keys/runtime.key").read_text()
    (hub.home / "listen-runtime.offset").write_text("saved\n")
    hub.call("agents.rename", old="runtime", new="engine", reason="split")
    hub.stop()
    for kind in ("keys/{}.key", "{}-inbox.log", "listen-{}.offset"):  # as if the file steps never ran
        (hub.home / kind.format("engine")).rename(hub.home / kind.format("runtime"))
    (hub.home / "listen-engine.backoff").write_text("a listener's, as engine, while no hub answered\n")
    (hub.home / "listen-runtime.backoff").write_text("the seat's\n")
    hub.start()
    assert "rename-settled agent=engine former=runtime files=4" in hub.log()
    assert (hub.home / "keys/engine.key").read_text() == key and not (hub.home / "keys/runtime.key").exists()
    assert (hub.home / "listen-engine.offset").read_text() == "saved\n"
    assert (hub.home / "listen-engine.backoff").read_text() == "the seat's\n"  # the key marked the cut: all move
    assert not (hub.home / "listen-runtime.backoff").exists()
    with hub.client("memory") as memory:
        send(memory, "@engine", "two")
    with hub.client("engine") as engine:  # says hello with the key file's key
        assert engine.call("inbox.check")["unread"] == 2
    assert not (hub.home / "runtime-inbox.log").exists()
    assert [(line["id"], line["title"]) for line in lines(hub.home / "engine-inbox.log")] == [(1, "one"), (2, "two")]


def test_a_staged_key_of_a_seat_renamed_in_the_same_cut_is_installed_under_its_id(hub):
    hub.add_agent("runtime")
    old = (hub.home / "keys/runtime.key").read_text()
    new = hub.call("agents.rekey", agent="runtime")["key"]
    hub.call("agents.rename", old="runtime", new="engine", reason="split")
    hub.stop()
    (hub.home / "keys/engine.key").unlink()
    (hub.home / "keys/runtime.key").write_text(old)  # the rekey's and the rename's file steps both cut
    (hub.home / "keys/runtime.key.new").write_text(new + "\n")
    hub.start()
    assert (hub.home / "keys/engine.key").read_text() == new + "\n"
    assert not (hub.home / "keys/runtime.key").exists() and not (hub.home / "keys/runtime.key.new").exists()
    assert "rekey-settled agent=engine outcome=installed" in hub.log()
    hub.client("engine").close()


def test_a_state_file_alone_under_a_former_id_is_a_listeners_not_a_cuts_and_stays(hub):
    """A listener started as the former id while no hub answered saves its place under that id; it names
    no file of the seat's, and moved to the seat it made the seat's listener ring old mail again."""
    hub.add_agent("runtime")
    hub.call("agents.rename", old="runtime", new="engine", reason="split")
    hub.stop()
    (hub.home / "listen-runtime.offset").write_text('{"inode": null, "pos": 0, "id": 0}')
    hub.start()
    assert "rename-settled" not in hub.log()  # no key file under the former id: no cut
    assert (hub.home / "listen-runtime.offset").exists() and not (hub.home / "listen-engine.offset").exists()


@pytest.mark.parametrize("fault, settled", [
    ("rename-before-files", "files=4"),  # the listener's offset and backoff, the notify file, the key
    ("rename-after-state", "files=2"),   # the notify file and the key
    ("rename-after-notify", "files=1"),  # the key: still under the former id, it marks the cut
])
def test_a_hub_killed_between_a_renames_commit_and_its_files_finishes_it_at_start(home, fault, settled):
    first = Hub(home).start()
    with seats(first, "memory", "runtime") as s:
        send(s["memory"], "@runtime", "one")
    assert listen_once(first, "--as", "runtime", "--debounce", "0", "--max-wait", "1")[0] == 0  # a first arm: its place
    assert (home / "listen-runtime.offset").exists()
    first.stop()
    crashing = Hub(home)
    crashing.env["AGORA_FAULT"] = fault
    crashing.start()
    with pytest.raises(Unavailable):
        crashing.call("agents.rename", old="runtime", new="engine", reason="split")
    crashing.proc.wait(timeout=10)
    assert crashing.proc.returncode == -signal.SIGKILL
    again = Hub(home).start()
    try:
        assert f"rename-settled agent=engine former=runtime {settled}" in again.log()
        assert not (home / "keys/runtime.key").exists() and not (home / "runtime-inbox.log").exists()
        with again.client("memory") as memory:
            send(memory, "@engine", "two")
        with again.client("engine") as engine:  # says hello with the key file's key
            assert engine.call("inbox.check")["unread"] == 2
        assert [line["id"] for line in lines(home / "engine-inbox.log")] == [1, 2]
        code, out, _ = listen_once(again, "--as", "engine", "--debounce", "0", "--max-wait", "1")
        assert code == 2 and json.loads((home / "listen-engine.offset").read_text())["id"] == 2
    finally:
        again.stop()


def test_a_seat_added_under_the_id_of_one_whose_removal_was_cut_starts_without_its_files(home):
    first = Hub(home).start()
    with seats(first, "memory", "runtime") as s:
        for n in range(3):
            send(s["memory"], "@runtime", f"old {n}")
    listen_once(first, "--as", "runtime", "--debounce", "0", "--max-wait", "1")
    first.stop()
    cut_removal(home)
    assert (home / "runtime-inbox.log").exists() and (home / "listen-runtime.offset").exists()
    again = Hub(home).start()
    try:
        again.add_agent("runtime")
        assert "stale-files-removed agent=runtime files=" in again.log()
        assert not (home / "listen-runtime.offset").exists()
        with again.client("memory") as memory:
            send(memory, "@runtime", "new")
        assert [(line["id"], line["title"]) for line in lines(home / "runtime-inbox.log")] == [(1, "new")]
    finally:
        again.stop()


def cut_removal(home, agent_id: str = "runtime") -> None:
    """A hub SIGKILLed after storing the removal of `agent_id`, before any of its file steps."""
    crashing = Hub(home)
    crashing.env["AGORA_FAULT"] = "remove-before-files"
    crashing.start()
    with pytest.raises(Unavailable):
        crashing.call("agents.remove", agent=agent_id)
    crashing.proc.wait(timeout=10)


def test_a_seat_renamed_onto_the_id_of_one_whose_removal_was_cut_starts_without_its_files(home):
    first = Hub(home).start()
    with seats(first, "memory", "runtime", "other") as s:
        for n in range(3):
            send(s["memory"], "@runtime", f"old {n}")
    listen_once(first, "--as", "runtime", "--debounce", "0", "--max-wait", "1")
    first.stop()
    cut_removal(home)
    again = Hub(home).start()
    try:
        again.call("agents.rename", old="other", new="runtime", reason="takes the role")
        assert "stale-files-removed agent=runtime" in again.log()
        assert not (home / "listen-runtime.offset").exists()
        with again.client("memory") as memory:
            send(memory, "@runtime", "new")
        assert [(line["id"], line["title"]) for line in lines(home / "runtime-inbox.log")] == [(1, "new")]
        with again.client("runtime") as runtime:  # the renamed seat's key file, not the removed one's
            assert runtime.call("inbox.check")["unread"] == 1
    finally:
        again.stop()


def test_hook_stamps_setup_wrote_for_an_id_before_it_was_added_stay(hub):
    """`agora setup` with no hub answering wires the workspace and stamps the id's hooks as wired; the
    add that follows finds no key or notify file there (no removal was cut), and leaves them."""
    (hub.home / "hook-newseat.stop.stamp").write_text('{"wired": 1764500000.0}')
    hub.add_agent("newseat")
    assert "stale-files-removed" not in hub.log()
    assert (hub.home / "hook-newseat.stop.stamp").read_text() == '{"wired": 1764500000.0}'
