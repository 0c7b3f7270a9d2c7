"""Regressions for defects a review found: each test failed before its fix."""

from __future__ import annotations

import json
import os
import stat
import subprocess

import pytest

from agorad.surface.errors import Conflict, InternalError, InvalidParams, Paused, Unavailable, Unauthorized
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


def test_a_shared_notify_dir_is_refused_before_the_hub_touches_anything(home, tmp_path):
    """A sticky directory (/tmp, /dev/shm) is shared: another user could plant `<id>-inbox.log` there, read
    the titles the hub writes into it and append forged wakes. The hub said so in its log and went on."""
    from tests.hubproc import AGORAD

    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    done = subprocess.run([AGORAD, "--home", str(home), "--notify-dir", str(shared)], capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 1 and "is sticky (shared, as /tmp is)" in done.stderr, done.stderr
    assert f"{shared}/agora-notify" in done.stderr and not home.exists()
    running = Hub(home, "--notify-dir", str(shared / "agora-notify")).start()  # the way it names
    try:
        assert stat.S_IMODE(os.stat(shared / "agora-notify").st_mode) == 0o700
    finally:
        running.stop()
    (tmp_path / "link").symlink_to(shared / "agora-notify")  # a link of yours to a directory of yours: fine
    Hub(home, "--notify-dir", str(tmp_path / "link")).start().stop()


def test_a_loose_notify_file_of_ours_is_made_private_when_the_hub_opens_it(hub):
    """A file the hub finds (left 0644 by a copy, say) holds the seat's titles: tightened, not kept as found."""
    with seats(hub, "memory", "runtime") as s:
        send(s["memory"], "@runtime", "one")
    hub.stop()
    os.chmod(hub.home / "runtime-inbox.log", 0o644)
    hub.start()
    with hub.client("memory") as memory:
        send(memory, "@runtime", "two")
    assert stat.S_IMODE(os.stat(hub.home / "runtime-inbox.log").st_mode) == 0o600
    assert (hub.home / "runtime-inbox.log").read_text().count("\n") == 2


def test_a_key_file_that_cannot_be_written_names_the_path(hub):
    os.rename(hub.home / "keys", hub.home / "keys.moved")
    (hub.home / "keys").write_text("not a directory")
    with pytest.raises(InternalError, match="keys/runtime.key"):
        hub.add_agent("runtime")
    assert hub.call("agents.list")["agents"] == []


def test_an_integer_too_big_for_a_float_is_invalid_params_wherever_an_interval_goes(hub):
    """2**1100 overflowed float() into an internal error (and, on the remote port, before the key was
    checked, an attempt the throttle did not count)."""
    big = 2 ** 1100
    key = hub.add_agent("memory", liveness_mode="async")
    for method, params in (("agents.add", {"agent": "x"}), ("agents.update", {"agent": "memory"})):
        with pytest.raises(InvalidParams, match="not a finite duration"):
            hub.call(method, interval=big, **params)
    with pytest.raises(InvalidParams, match="not a finite duration"):
        hub.client().hello("memory", key, interval=big)
    with hub.client("memory", key) as memory:
        with pytest.raises(InvalidParams, match="not a finite duration"):
            memory.call("agents.heartbeat", interval=big)
    assert "error method=" not in hub.log() and [a["id"] for a in hub.call("agents.list")["agents"]] == ["memory"]


def test_a_lone_surrogate_sent_while_paused_is_refused_as_paused_not_an_internal_error(hub):
    hub.add_agent("carol", liveness_mode="always-on")
    hub.call("hub.pause", reason="maintenance", operator_seats=["carol"])
    with seats(hub, "memory") as s:
        for params in ({"target": "\ud800"}, {"target": "dm:\ud800"}, {"target": "@carol", "reply_to": "\ud800#1"}):
            with pytest.raises(Paused):
                s["memory"].call("messages.send", title="x", **params)
    assert "error method=" not in hub.log()


def test_clock_advance_refuses_a_jump_no_float_can_follow_and_the_clock_stays_usable(hub):
    """1e308 twice made the clock infinite: every reply carrying `now` then failed to encode, the
    connection was dropped with a traceback, until the hub restarted."""
    for seconds in (1e308, 2 ** 1100, -1):
        with pytest.raises(InvalidParams, match="seconds"):
            hub.call("clock.advance", seconds=seconds)
    assert hub.call("hub.status")["pid"] == hub.proc.pid and "Traceback" not in hub.log()


def test_clock_advance_is_no_method_on_a_hub_without_the_test_clock_whatever_its_params(tmp_path):
    plain = Hub(tmp_path / "home", test_clock=False).start()
    try:
        with Raw(plain.home) as raw:
            for params in ({}, {"seconds": "x"}, {"seconds": 5}):
                raw.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "clock.advance", "params": params}).encode()
                         + b"\n")
                error = raw.reply()["error"]
                assert (error["code"], error["data"]["method"]) == (-32601, "clock.advance"), params
    finally:
        plain.stop()


def test_agents_add_refuses_meta_holding_a_lone_surrogate_as_update_does(hub):
    for meta in ({"k": "\ud800"}, {"\udfff": "v"}, {"deep": ["\ud800"]}):
        with pytest.raises(InvalidParams, match="valid Unicode"):
            hub.call("agents.add", agent="dave", meta=meta)
    hub.call("agents.add", agent="dave", meta={"emoji": "\U0001F600", "path": "C:\\ud800"})  # a pair, a backslash
    assert hub.call("agents.get", agent="dave")["agent"]["meta"] == {"emoji": "\U0001F600", "path": "C:\\ud800"}


def test_no_agent_may_take_the_name_the_operators_writes_carry(hub):
    """An agent called `operator` wrote KB entries, channels and phases whose author read exactly as the
    operator's own."""
    with pytest.raises(Conflict, match="names the local operator"):
        hub.call("agents.add", agent="operator")
    hub.add_agent("memory")
    with pytest.raises(Conflict, match="names the local operator"):
        hub.call("agents.rename", old="memory", new="operator", reason="r")
    assert hub.call("kb.put", key="notes/x", value="v")["entry"]["author"] == "operator"


def test_a_kb_key_of_only_spaces_is_refused(hub):
    with pytest.raises(InvalidParams, match="only spaces"):
        hub.call("kb.put", key="   ", value="v")
    assert hub.call("kb.list")["entries"] == []
