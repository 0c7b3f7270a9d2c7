"""A listener confirms its seat and notify file with the hub, and never stays armed on a file nobody writes.

Armed while the hub was down on what it could know (the id as given, the home
as notify directory), it asks the hub as soon as it answers: a renamed id
re-arms on the new seat's file, ringing what landed meanwhile; an unknown id
ends with a reason. Armed with the hub up, it asks again when its file's name
vanishes: a rename moves it to the new seat, a removal ends it.
"""

from __future__ import annotations

import json

import pytest

from tests.hubproc import Hub
from tests.listenproc import Listener, fields
from tests.seats import seats, send

pytestmark = pytest.mark.usefixtures("watcher")  # the listen contract, under each watcher


@pytest.fixture
def ears():
    """Start listeners that never outlive the test, even a failed one (each holds an inotify instance)."""
    started = []

    def start(hub, *args: str) -> Listener:
        started.append(Listener(hub, *args))
        return started[-1]
    yield start
    for ear in started:
        if ear.proc.poll() is None:
            ear.proc.kill()
            ear.proc.wait()


def _renamed_then_down(home, *hub_args: str, listened: bool = False) -> Hub:
    """A hub where b1 was renamed b2 (after a --once run as b1 if `listened`), then stopped."""
    hub = Hub(home, *hub_args).start()
    try:
        with seats(hub, "memory", "b1") as s:
            send(s["memory"], "@b1", "before the rename")
            if listened:
                assert Listener(hub, "--as", "b1", "--once", "--max-wait", "1").finish()[:2] == (0, [
                    f"AGORA_LISTEN armed source=file agent=b1 hub={home / 'agorad.sock'}", "AGORA_LISTEN ended reason=max-wait"])
            hub.call("agents.rename", old="b1", new="b2", reason="split")
    finally:
        hub.stop()
    return hub


def _up_and_send(home, *hub_args: str) -> Hub:
    hub = Hub(home, *hub_args).start()
    try:
        with hub.client("memory") as memory:
            memory.call("messages.send", target="@b1", title="for the old name", body="")
    except BaseException:
        hub.stop()
        raise
    return hub


def test_a_listener_armed_on_a_renamed_id_while_the_hub_was_down_follows_the_new_seat(home, ears):
    # The issue: it armed on b1's notify file and never woke, though sends to @b1 land for b2.
    down = _renamed_then_down(home)
    ear = ears(down, "--as", "b1", "--debounce", "0")
    assert fields(ear.next_line())["agent"] == "b1"  # all it could know with no hub answering
    hub = _up_and_send(home)
    try:
        rearmed = ear.wait_for("AGORA_LISTEN armed", timeout=20)
        assert fields(rearmed)["agent"] == "b2"
        wake = fields(ear.wait_for("AGORA_WAKE", timeout=20))
        # b2 had no saved place: what landed since the listener started rings, not the older mail.
        assert (wake["agent"], wake["n"], wake["channels"]) == ("b2", "1", "dm:b2--memory#2")  # the DM followed the rename
        code, lines, stderr = ear.stop()
        assert lines[-1] == "AGORA_LISTEN ended reason=signal" and "b1 -> b2 (split)" in stderr
        assert not (home / "listen-b1.offset").exists()  # the alias keeps no seat files
        assert json.loads((home / "listen-b2.offset").read_text())["id"] == 2
    finally:
        hub.stop()


def test_a_once_run_on_a_renamed_id_resumes_from_the_seats_saved_place(home, ears):
    down = _renamed_then_down(home, listened=True)  # b1's offset moved to b2 with the rename
    ear = ears(down, "--as", "b1", "--once", "--debounce", "0", "--max-wait", "30")
    assert fields(ear.next_line())["agent"] == "b1"
    hub = _up_and_send(home)
    try:
        code, lines, _ = ear.finish(timeout=30)
        assert code == 2 and lines[-1] == "AGORA_LISTEN ended reason=wake"
        assert [fields(line)["agent"] for line in lines if line.startswith("AGORA_LISTEN armed")] == ["b1", "b2"]
        assert fields([line for line in lines if line.startswith("AGORA_WAKE")][0])["channels"] == "dm:b2--memory#2"
    finally:
        hub.stop()


def test_an_id_the_hub_does_not_know_ends_once_it_answers(home, ears):
    Hub(home).start().stop()
    ear = ears(Hub(home), "--as", "ghost")
    ear.next_line()
    hub = Hub(home).start()
    try:
        code, lines, stderr = ear.finish(timeout=20)
        assert code == 1 and lines[-1].startswith("AGORA_LISTEN ended reason=error cause=") and "ghost" in stderr
        assert not (home / "listen-ghost.offset").exists()
    finally:
        hub.stop()


def test_a_notify_directory_learnt_late_is_followed(home, ears):
    elsewhere = str(home.parent / "notify")
    first = Hub(home, "--notify-dir", elsewhere).start()
    try:
        first.add_agent("memory")
        first.add_agent("b1")
    finally:
        first.stop()
    ear = ears(first, "--as", "b1", "--debounce", "0")
    ear.next_line()  # armed on <home>/b1-inbox.log: no hub was there to say otherwise
    hub = Hub(home, "--notify-dir", elsewhere).start()
    try:
        rearmed = ear.wait_for("AGORA_LISTEN armed", timeout=20)
        assert fields(rearmed)["agent"] == "b1"
        with hub.client("memory") as memory:
            memory.call("messages.send", target="@b1", title="to the directory the hub uses", body="")
        assert fields(ear.wait_for("AGORA_WAKE", timeout=20))["channels"] == "dm:b1--memory#1"
        ear.stop()
    finally:
        hub.stop()


def test_a_rename_while_listening_moves_the_listener_to_the_new_seat(home, ears):
    hub = Hub(home, "--notify-rotate-mb", "0.001").start()  # about 1 KiB: a few DMs rotate the file
    try:
        with seats(hub, "memory", "b1") as s:
            send(s["memory"], "@b1", "make the file")
            ear = ears(hub, "--as", "b1", "--debounce", "0")
            assert fields(ear.next_line())["agent"] == "b1"
            hub.call("agents.rename", old="b1", new="b2", reason="split")
            assert fields(ear.wait_for("AGORA_LISTEN armed"))["agent"] == "b2"
            rung = 0
            for i in range(12):  # rotates the new seat's file more than once
                send(s["memory"], "@b2", f"m{i}", "y" * 100)
                wake = fields(ear.wait_for("AGORA_WAKE"))
                assert wake["agent"] == "b2"
                rung += int(wake["n"])
            assert rung == 12 and (home / "b2-inbox.log.1").exists()
            ear.stop()
    finally:
        hub.stop()


def test_removing_the_seat_ends_its_listener_with_a_reason(hub, ears):
    with seats(hub, "memory", "b1") as s:
        send(s["memory"], "@b1", "make the file")
    ear = ears(hub, "--as", "b1")
    ear.next_line()
    hub.call("agents.remove", agent="b1")
    code, lines, stderr = ear.finish()
    assert code == 1 and lines[-1].startswith("AGORA_LISTEN ended reason=error cause=") and "b1" in stderr
    assert not (hub.home / "listen-b1.offset").exists()
