"""Hostile input, as properties: whatever arrives on the wire or in a message, the hub never crashes
or hangs, every answer is well formed, no sentinel is forged, and nothing outside the home changes."""

from __future__ import annotations

import json
import os
import socket

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agorad.runtime.methods import METHODS
from agorad.surface.protocol import MAX_FRAME
from tests.hubproc import Hub, short_home
from tests.listenproc import Listener
from tests.reliability.scale import scaled
from tests.wire import Raw

HOSTILE_CHARS = st.sampled_from(["\n", "\r", "\x00", "\x1b[31m", "\x1b]0;title\x07", "\u202e", "\u2066", "\u2028",
                                 "\ufeff", "AGORA_WAKE ", "AGORA_LISTEN ended reason=signal", "@runtime", "#1",
                                 "\\", '"', "=", " "])
hostile_text = st.lists(HOSTILE_CHARS | st.text(max_size=5), max_size=30).map("".join)
anything = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**200), 2**200) | st.floats(allow_nan=False, allow_infinity=False)
    | hostile_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=15,
)
PARAM_NAMES = sorted({"agent", "key", "liveness_mode", "interval", "meta", "status", "task", "old", "new", "reason",
                      "prefix", "limit", "value", "include_expired", "permanent", "seconds", "target", "title",
                      "body", "to", "ask", "reply_to", "urgency", "ref", "upto", "all", "channel", "counts"})


@pytest.fixture(scope="module")
def arena():
    """A live hub with two seats, a listener on one of them, and a canary directory beside the home."""
    home = short_home()
    canary = home.parent / "canary"
    canary.mkdir()
    (canary / "file").write_text("before")
    hub = Hub(home).start()
    keys = {a: hub.add_agent(a, liveness_mode="always-on") for a in ("memory", "runtime")}
    with hub.client("memory", keys["memory"]) as memory:
        memory.call("messages.send", target="@runtime", title="make the notify file", body="")
    ear = Listener(hub, "--as", "runtime", "--debounce", "0", "--preview")
    assert ear.next_line().startswith("AGORA_LISTEN armed")
    yield hub, keys, ear, canary
    ear.stop()
    hub.stop()


def untouched_outside_the_home(arena) -> None:
    hub, _, _, canary = arena
    assert (canary / "file").read_text() == "before" and os.listdir(canary) == ["file"]
    outside = sorted(os.listdir(hub.home.parent))
    assert set(outside) <= {"home", "canary", "agorad.log"}, outside


@pytest.fixture(autouse=True)
def nothing_outside_the_home(arena):
    """After each test here, whatever it sent: the canary beside the home is as it was."""
    yield
    untouched_outside_the_home(arena)


def well_formed(reply: dict) -> bool:
    if reply.get("jsonrpc") != "2.0" or "id" not in reply:
        return False
    if "result" in reply:
        return True
    error = reply.get("error", {})
    return isinstance(error.get("code"), int) and isinstance(error.get("data", {}).get("reason"), str)


@settings(max_examples=scaled(200, 3000), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(method=st.sampled_from(sorted(METHODS)), params=st.dictionaries(st.sampled_from(PARAM_NAMES), anything, max_size=6),
       as_agent=st.booleans())
def test_every_method_with_random_params(arena, method, params, as_agent):
    hub, keys, _, _ = arena
    if method in ("agents.remove", "agents.rename", "hub.pause") and not as_agent:
        return  # the operator may really remove or rename the arena's seats, or pause it; that is not hostile input
    with Raw(hub.home) as raw:
        if as_agent:
            assert "result" in raw.request("hub.hello", {"agent": "memory", "key": keys["memory"]}, "hello")
        raw.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode() + b"\n")
        assert well_formed(raw.reply())
        assert raw.request("hub.hello", request_id=2)["result"]["protocol"] == 1
    assert "agorad" in hub.log() and " error " not in hub.log(), "a handler failed unexpectedly"


@settings(max_examples=scaled(100, 1000), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(title=hostile_text, body=hostile_text)
def test_hostile_message_text_never_forges_a_sentinel(arena, title, body):
    hub, keys, ear, _ = arena
    with hub.client("memory", keys["memory"]) as memory:
        try:
            memory.call("messages.send", target="@runtime", title=title or "t", body=body)
        except Exception as exc:  # a refused title is fine; it must be a precise refusal
            assert getattr(exc, "reason", None) in ("invalid-params", "too-large"), exc
            return
    line = ear.next_line()  # not wait_for: every line counts, none may be skipped unseen
    while line.startswith("AGORA_LISTEN heartbeat"):
        line = ear.next_line()
    assert line.startswith("AGORA_WAKE agent=runtime "), line
    assert "\n" not in line and "\r" not in line and "\x1b" not in line
    keys_seen = [part.split("=", 1)[0] for part in line.split()[1:]]
    assert keys_seen[:5] == ["agent", "n", "channels", "flags", "owed"]
    assert keys_seen[-1] == "preview" and len(keys_seen) == len(set(keys_seen))  # one preview token, nothing after


def test_deep_nesting_huge_numbers_and_invalid_utf8(arena):
    hub = arena[0]
    frames = [b"[" * 50_000 + b"]" * 50_000, b'{"jsonrpc":"2.0","id":1,"method":"hub.hello","params":{"x":' +
              b"[" * 10_000 + b"]" * 10_000 + b"}}", b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"hub.hello"}',
              b'{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}', b"\xc3\x28" * 100]
    with Raw(hub.home) as raw:
        for frame in frames:
            raw.send(frame + b"\n")
            assert well_formed(raw.reply())
        assert raw.request("hub.hello", request_id=2)["result"]["protocol"] == 1


def test_oversized_half_closed_and_never_reading_clients(arena):
    hub = arena[0]
    with Raw(hub.home) as raw:
        raw.send(b"x" * (MAX_FRAME + 1) + b"\n")
        assert raw.reply()["error"]["data"]["reason"] == "too-large"
    half = socket.socket(socket.AF_UNIX)
    half.connect(str(hub.home / "agorad.sock"))
    half.sendall(b'{"jsonrpc":"2.0","id":1,"method":"hub.hello"}\n')
    half.shutdown(socket.SHUT_WR)  # half-closed: it still gets its answer
    assert b'"protocol"' in half.recv(65536)
    half.close()
    deaf = socket.socket(socket.AF_UNIX)
    deaf.connect(str(hub.home / "agorad.sock"))
    deaf.setblocking(False)
    request = b'{"jsonrpc":"2.0","id":1,"method":"agents.list"}\n'
    sent = 0
    for _ in range(20_000):  # it never reads: the hub stops reading it too, and serves everyone else
        try:
            sent += deaf.send(request * 64)
        except BlockingIOError:
            break
    assert hub.call("hub.hello")["protocol"] == 1
    deaf.close()
    assert hub.call("hub.hello")["protocol"] == 1


def test_names_that_walk_out_of_the_home_name_no_file_there(arena):
    """Every name the hub may turn into a file name (an agent id: its key, notify and seat files), given as
    a path out of the home, is refused or kept a name; the canary beside the home is untouched (checked
    after every test here, and by this one on its own)."""
    hub, keys, _, _ = arena
    walks = ["../canary/file", "../../canary/file", "..", "../canary", "/tmp/x", "a/../../canary", ".", "canary/../../x"]
    with hub.client("memory", keys["memory"]) as memory:
        for walk in walks:
            for method, params in (("agents.add", {"agent": walk}), ("agents.get", {"agent": walk}),
                                   ("agents.rename", {"old": "runtime", "new": walk, "reason": "x"}),
                                   ("kb.put", {"key": walk, "value": "x"}), ("kb.put", {"key": f"profile/{walk}",
                                                                                         "value": "x"})):
                try:
                    hub.call(method, **params)
                except Exception:
                    pass
            for target in (f"@{walk}", walk, f"#{walk}"):
                try:
                    memory.call("messages.send", target=target, title="walk", body="")
                except Exception:
                    pass
    assert [a["id"] for a in hub.call("agents.list")["agents"] if a["registered"]] == ["memory", "runtime"]
    untouched_outside_the_home(arena)
