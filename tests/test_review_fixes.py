"""Regressions for defects a review found: each test failed before its fix."""

from __future__ import annotations

import json
import os
import stat

import pytest

from agorad.surface.errors import InternalError, InvalidParams, Unavailable, Unauthorized
from tests.hubproc import Hub
from tests.seats import seats, send
from tests.wire import Raw


def test_a_connection_of_a_removed_agent_is_hung_up(hub):
    with seats(hub, "memory", "runtime") as s:
        hub.call("agents.remove", agent="runtime")
        with pytest.raises((Unauthorized, Unavailable)):
            s["runtime"].call("kb.put", key="profile/runtime", value="impostor")
        hub.add_agent("runtime")
        with pytest.raises(Unavailable):  # hung up: the old key's connection never acts as the new agent
            s["runtime"].call("agents.heartbeat")
    assert hub.call("kb.list", prefix="profile/")["entries"] == []


def test_a_live_connection_follows_a_rename(hub):
    with seats(hub, "memory", "runtime") as s:
        hub.call("agents.rename", old="runtime", new="engine", reason="split")
        receipt = send(s["runtime"], "@memory", "hello")
        assert receipt["ref"] == "dm:engine--memory#1"
        assert s["memory"].call("messages.read", ref=receipt["ref"])["sender"] == "engine"
        assert s["runtime"].call("kb.put", key="profile/engine", value="me")["entry"]["author"] == "engine"


def test_a_reused_id_starts_with_a_clean_notify_file(home):
    first = Hub(home).start()
    with seats(first, "memory", "runtime") as s:
        for i in range(3):
            send(s["memory"], "@runtime", f"old {i}")
    first.call("agents.remove", agent="runtime")
    assert not (home / "runtime-inbox.log").exists()
    first.add_agent("runtime")
    first.stop()
    crashing = Hub(home)
    crashing.env["AGORA_FAULT"] = "after-commit"
    crashing.start()
    with crashing.client("memory") as memory, pytest.raises(Unavailable):
        memory.call("messages.send", target="@runtime", title="new 1", body="")
    crashing.proc.wait(timeout=10)
    again = Hub(home).start()
    try:
        lines = [json.loads(line) for line in (home / "runtime-inbox.log").read_text().splitlines()]
        assert [(line["id"], line["title"]) for line in lines] == [(1, "new 1")]
    finally:
        again.stop()


def test_a_failing_file_step_after_commit_costs_no_reply(hub):
    with seats(hub, "memory", "runtime") as s:
        send(s["memory"], "@runtime", "one")
        (hub.home / "engine-inbox.log").mkdir()
        assert hub.call("agents.rename", old="runtime", new="engine", reason="r")["renamed"]["to"] == "engine"
        assert "notify-rename-failed" in hub.log()
        assert send(s["memory"], "@engine", "still served")["to"] == ["engine"]


@pytest.mark.parametrize("method, params", [
    ("messages.send", {"target": "\ud800", "title": "t", "body": ""}),
    ("messages.read", {"ref": "\ud800#1"}),
    ("inbox.ack", {"ref": ["\ud800#1"]}),
    ("channels.join", {"channel": "\ud800"}),
    ("kb.list", {"prefix": "\ud800"}),
])
def test_lone_surrogates_are_invalid_params(hub, method, params):
    with seats(hub, "memory") as s:
        with pytest.raises(InvalidParams, match="Unicode"):
            s["memory"].call(method, **params)


def test_lone_surrogate_key_in_hello(hub):
    hub.add_agent("memory")
    with pytest.raises(InvalidParams):
        hub.client().hello("memory", "\ud800")


@pytest.mark.parametrize("frame", [
    b'{"jsonrpc":"2.0","id":1,"method":"agents.add","params":{"agent":"x","interval":NaN}}',
    b'{"jsonrpc":"2.0","id":1,"method":"agents.add","params":{"agent":"x","interval":1e999}}',
    b'{"jsonrpc":"2.0","id":1,"method":"agents.add","params":{"agent":"x","meta":{"n":Infinity}}}',
])
def test_non_finite_numbers_are_refused(hub, frame):
    with Raw(hub.home) as raw:
        raw.send(frame + b"\n")
        assert raw.reply()["error"]["data"]["reason"] == "parse-error"
    with pytest.raises(InvalidParams):
        hub.call("agents.add", agent="x", interval="1" + "0" * 400)
    assert hub.call("agents.list")["agents"] == []


def test_a_failing_notification_gets_no_reply(hub):
    with Raw(hub.home) as raw:
        raw.send(b'{"jsonrpc":"2.0","method":"no.such"}\n')
        raw.send(b'{"jsonrpc":"2.0","method":"agents.add","params":{"agent":"Bad Id"}}\n')
        assert raw.request("hub.hello", request_id="next")["id"] == "next"


def test_a_mention_of_a_renamed_id_says_redirected(hub):
    with seats(hub, "memory", "runtime") as s:
        hub.call("agents.rename", old="runtime", new="engine", reason="split")
        receipt = send(s["memory"], "commons", "hey @runtime")
        assert receipt["to"] == ["engine"] and receipt["redirected"][0]["from"] == "runtime"


def test_a_subscription_does_not_follow_a_new_hello(hub):
    keys = {}
    with seats(hub, "memory", "a", "b") as s:
        keys["b"] = (hub.home / "keys" / "b.key").read_text().strip()
        s["a"].call("inbox.subscribe")
        s["a"].hello("b", keys["b"])
        send(s["memory"], "@a", "for a")
        send(s["memory"], "@b", "for b")
        s["a"].call("hub.hello")  # any pushes would arrive before this reply
        assert s["a"].next_notification(timeout=0) is None


def test_an_existing_notify_dir_of_ours_is_tightened(home, tmp_path):
    loose = tmp_path / "notify"
    loose.mkdir()
    os.chmod(loose, 0o755)
    running = Hub(home, "--notify-dir", str(loose)).start()
    try:
        assert stat.S_IMODE(os.stat(loose).st_mode) == 0o700
    finally:
        running.stop()


def test_a_key_file_that_cannot_be_written_names_the_path(hub):
    os.rename(hub.home / "keys", hub.home / "keys.moved")
    (hub.home / "keys").write_text("not a directory")
    with pytest.raises(InternalError, match="keys/runtime.key"):
        hub.add_agent("runtime")
    assert hub.call("agents.list")["agents"] == []
