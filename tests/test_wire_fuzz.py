"""Property test: random frames at a live hub never break it, and every answer is well formed."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agorad.runtime.methods import METHODS
from tests.hubproc import Hub, short_home
from tests.wire import Raw

json_scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=40)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=12)
param_names = st.sampled_from(["agent", "key", "liveness_mode", "interval", "meta", "status", "task", "old", "new",
                               "reason", "prefix", "limit", "value", "include_expired", "permanent", "seconds",
                               "channel", "title", "ref", "version", "cadence_minutes", "link", "text", "state",
                               "cadences"])
requests = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0"), "id": st.integers(0, 10**6), "method": st.sampled_from(sorted(METHODS)) | st.text(max_size=20)},
    optional={"params": st.dictionaries(param_names | st.text(max_size=8), json_values, max_size=5)},
)
frames = st.one_of(
    requests.map(lambda r: json.dumps(r).encode()),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=200).map(lambda b: b.replace(b"\n", b" ")),
)


@pytest.fixture(scope="module")
def fuzz_hub():
    running = Hub(short_home()).start()
    running.add_agent("fuzz-seat")
    yield running
    running.stop()


def well_formed(reply: dict) -> bool:
    if reply.get("jsonrpc") != "2.0" or "id" not in reply:
        return False
    if "result" in reply:
        return isinstance(reply["result"], dict)
    error = reply.get("error", {})
    return isinstance(error.get("code"), int) and isinstance(error.get("message"), str) and isinstance(error.get("data", {}).get("reason"), str)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(frames, min_size=1, max_size=5), as_agent=st.booleans())
def test_random_frames_never_break_the_hub(fuzz_hub, batch, as_agent):
    with Raw(fuzz_hub.home) as raw:
        if as_agent:
            key = (fuzz_hub.home / "keys" / "fuzz-seat.key").read_text().strip()
            assert "result" in raw.request("hub.hello", {"agent": "fuzz-seat", "key": key}, request_id="hello")
        for frame in batch:
            raw.send(frame + b"\n")
        # A sentinel request after the batch: every reply before it must be well formed.
        raw.send(b'{"jsonrpc":"2.0","id":"sentinel","method":"hub.hello"}\n')
        while True:
            reply = raw.reply()
            assert reply is not None, "the hub closed the connection"
            assert well_formed(reply), reply
            if reply["id"] == "sentinel":
                break
        assert reply["result"]["protocol"] == 1
    assert fuzz_hub.call("hub.hello")["protocol"] == 1
    assert fuzz_hub.proc.poll() is None
    assert "error " not in fuzz_hub.log(), "a handler raised an unexpected exception"
