"""The wire: framing, the 1 MiB cap, JSON-RPC errors with reasons, and bad input of every kind."""

from __future__ import annotations

import json

import pytest

from agorad.surface.errors import InvalidParams, MethodNotFound, NotFound, Unauthorized
from agorad.surface.protocol import MAX_FRAME
from tests.hubproc import short_home
from tests.wire import Raw


def error_of(reply: dict) -> tuple[int, str]:
    return reply["error"]["code"], reply["error"]["data"]["reason"]


def still_answers(hub) -> None:
    assert hub.call("hub.hello")["protocol"] == 1


def test_hello_returns_protocol_and_hub_version(hub):
    with Raw(hub.home) as raw:
        reply = raw.request("hub.hello")
    assert reply["jsonrpc"] == "2.0" and reply["id"] == 1
    assert reply["result"]["protocol"] == 1
    assert reply["result"]["hub_version"]


@pytest.mark.parametrize("frame, code, reason", [
    (b"this is not json\n", -32700, "parse-error"),
    (b'{"jsonrpc":"2.0","id":1,"method":\n', -32700, "parse-error"),
    (b"[1,2,3]\n", -32600, "invalid-request"),
    (b'"a string"\n', -32600, "invalid-request"),
    (b'{"id":1,"method":"hub.hello"}\n', -32600, "invalid-request"),
    (b'{"jsonrpc":"2.0","id":1}\n', -32600, "invalid-request"),
    (b'{"jsonrpc":"2.0","id":[1],"method":"hub.hello"}\n', -32600, "invalid-request"),
    (b'{"jsonrpc":"2.0","id":1,"method":"hub.hello","params":[1]}\n', -32602, "invalid-params"),
    (b'\xff\xfe{"bad utf-8"}\n', -32700, "parse-error"),
    # Frames are UTF-8 (RFC 8259 8.1): UTF-16, and surrogates encoded as bytes, are not JSON text here.
    ('{"jsonrpc":"2.0","id":1,"method":"hub.hello"}'.encode("utf-16-le") + b"\n", -32700, "parse-error"),
    (b'{"jsonrpc":"2.0","id":1,"method":"kb.get","params":{"key":"\xed\xa0\x80"}}\n', -32700, "parse-error"),
    (b"[" * 100_000 + b"\n", -32700, "parse-error"),
])
def test_malformed_frames_get_precise_errors(hub, frame, code, reason):
    with Raw(hub.home) as raw:
        raw.send(frame)
        reply = raw.reply()
        assert error_of(reply) == (code, reason)
        assert reply["error"]["message"]
        # The same connection keeps serving after a bad frame.
        assert raw.request("hub.hello", request_id=2)["result"]["protocol"] == 1


def test_unknown_method(hub):
    with Raw(hub.home) as raw:
        reply = raw.request("agents.explode")
    assert error_of(reply) == (-32601, "method-not-found")
    assert "agents.explode" in reply["error"]["message"]


def test_frame_of_exactly_one_mebibyte_is_read(hub):
    request = b'{"jsonrpc":"2.0","id":7,"method":"hub.hello"}'
    frame = request + b" " * (MAX_FRAME - len(request))
    assert len(frame) == MAX_FRAME
    with Raw(hub.home) as raw:
        raw.send(frame + b"\n")
        assert raw.reply()["result"]["protocol"] == 1


def test_frame_over_one_mebibyte_is_refused_and_closed(hub):
    with Raw(hub.home) as raw:
        raw.send(b" " * (MAX_FRAME + 1) + b"\n")
        reply = raw.reply()
        assert error_of(reply) == (-32005, "too-large")
        assert raw.at_eof()
    still_answers(hub)


def test_endless_frame_without_newline_is_refused(hub):
    with Raw(hub.home) as raw:
        raw.send(b"x" * (MAX_FRAME + 10))
        assert error_of(raw.reply()) == (-32005, "too-large")
    still_answers(hub)


def test_notification_gets_no_reply_but_later_requests_do(hub):
    with Raw(hub.home) as raw:
        raw.send(b'{"jsonrpc":"2.0","method":"hub.hello"}\n')
        assert raw.request("hub.hello", request_id="after")["id"] == "after"


def test_replies_come_in_request_order(hub):
    with Raw(hub.home) as raw:
        raw.send(b"".join(json.dumps({"jsonrpc": "2.0", "id": i, "method": "hub.hello"}).encode() + b"\n" for i in range(50)))
        assert [raw.reply()["id"] for _ in range(50)] == list(range(50))


@pytest.mark.parametrize("method, params, field", [
    ("agents.add", {}, "agent"),
    ("agents.add", {"agent": 5}, "agent"),
    ("agents.add", {"agent": "ok", "liveness_mode": "sometimes"}, "liveness_mode"),
    ("agents.add", {"agent": "ok", "interval": "soon"}, "interval"),
    ("agents.add", {"agent": "ok", "interval": 0.5}, "interval"),
    ("agents.add", {"agent": "ok", "meta": [1]}, "meta"),
    ("agents.add", {"agent": "ok", "permanent": True, "liveness_mode": "async"}, "permanent"),
    ("agents.add", {"agent": "ok", "colour": "blue"}, "colour"),
    ("agents.list", {"include_expired": "yes"}, "include_expired"),
    ("kb.put", {"key": "k"}, "value"),
    ("kb.list", {"limit": 0}, "limit"),
    ("clock.advance", {"seconds": -5}, "seconds"),
])
def test_wrong_or_missing_params(hub, method, params, field):
    with pytest.raises(InvalidParams) as caught:
        hub.call(method, **params)
    assert caught.value.data["field"] == field
    assert hub.call("agents.list")["agents"] == []  # nothing was written


@pytest.mark.parametrize("bad_id", ["Runtime", "two words", "a/b", "x" * 65, "", "-lead", ".hidden", "é"])
def test_bad_agent_ids_are_refused_everywhere(hub, bad_id):
    hub.add_agent("fine")
    for method, params in (
        ("agents.add", {"agent": bad_id}),
        ("agents.get", {"agent": bad_id}),
        ("hub.hello", {"agent": bad_id, "key": "k"}),
        ("agents.rename", {"old": "fine", "new": bad_id, "reason": "r"}),
    ):
        with pytest.raises(InvalidParams) as caught:
            hub.call(method, **params)
        assert "not a valid agent id" in caught.value.message
    assert [a["id"] for a in hub.call("agents.list")["agents"]] == ["fine"]


def test_longest_valid_id_is_accepted(hub):
    hub.add_agent("a" * 64)
    assert hub.call("agents.get", agent="a" * 64)["agent"]["id"] == "a" * 64


def test_wrong_key_is_unauthorized_and_changes_nothing(hub):
    hub.add_agent("runtime")
    with hub.client() as conn:
        with pytest.raises(Unauthorized) as caught:
            conn.hello("runtime", "agk_wrong")
        assert "wrong key" in caught.value.message
        # The connection is still the operator's, not the agent's.
        with pytest.raises(Unauthorized):
            conn.call("agents.heartbeat")
    assert hub.call("agents.get", agent="runtime")["agent"]["last_seen"] is None


def test_a_hello_without_a_key_says_the_key_is_missing_whether_or_not_the_seat_exists(hub):
    """It said "wrong key" for a key never given, and only for a seat that exists."""
    hub.add_agent("runtime")
    with Raw(hub.home) as raw:
        for agent in ("runtime", "nobody"):
            error = raw.request("hub.hello", {"agent": agent})["error"]
            assert error["data"] == {"reason": "unauthorized", "field": "key"}
            assert error["message"].startswith(f"hub.hello as {agent!r} needs its key")
        assert raw.request("agents.heartbeat")["error"]["data"]["reason"] == "unauthorized"  # still the operator


def test_another_agents_key_does_not_open_a_seat(hub):
    hub.add_agent("alice")
    bob_key = hub.add_agent("bob")
    with hub.client() as conn, pytest.raises(Unauthorized):
        conn.hello("alice", bob_key)


def test_call_as_an_agent_that_does_not_exist(hub):
    with hub.client() as conn, pytest.raises(NotFound) as caught:
        conn.hello("ghost", "agk_anything")
    assert "ghost" in caught.value.message


def test_client_disconnecting_mid_request_leaves_hub_serving(hub):
    with Raw(hub.home) as raw:
        raw.send(b'{"jsonrpc":"2.0","id":1,"method":"agents.ad')
    with Raw(hub.home) as raw:
        raw.send(b'{"jsonrpc":"2.0","id":1,"method":"agents.add","params":{"agent":"x"}}\n')
    still_answers(hub)
    # The complete request was served even though its client left before the reply.
    assert [a["id"] for a in hub.call("agents.list")["agents"]] == ["x"]


def test_unknown_method_error_class(hub):
    with pytest.raises(MethodNotFound):
        hub.call("nope.nothing")


def test_clock_advance_exists_only_on_test_hubs(home):
    from tests.hubproc import Hub

    plain = Hub(home, test_clock=False).start()
    try:
        with pytest.raises(MethodNotFound):
            plain.call("clock.advance", seconds=10)
    finally:
        plain.stop()


def test_a_reply_cut_off_by_a_dying_hub_is_unavailable_not_a_crash(tmp_path):
    import socket as socket_module
    import threading

    from agorad.surface.client import Client
    from agorad.surface.errors import Unavailable

    home = short_home()
    home.mkdir(parents=True)
    server = socket_module.socket(socket_module.AF_UNIX)
    server.bind(str(home / "agorad.sock"))
    server.listen(1)

    def half_reply():
        peer, _ = server.accept()
        peer.recv(65536)
        peer.sendall(b'{"jsonrpc":"2.0","id":1,"result":{"trunc')  # and then the "hub" dies
        peer.close()

    thread = threading.Thread(target=half_reply)
    thread.start()
    with pytest.raises(Unavailable):
        Client(home).call("hub.hello")
    thread.join()
    server.close()


@pytest.mark.parametrize("text", [
    '{"jsonrpc":"2.0","id":1,"method":"hub.hello"}',
    '  {"jsonrpc":"2.0","id":1,"method":"hub.hello"}  ',
    '{"jsonrpc":"2.0","id":1,"method":"hub.hello"}}',
    '{"jsonrpc":"2.0","id":1,"method":"hub.hello"} {"jsonrpc":"2.0","id":2,"method":"hub.hello"}',
    '{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":1e999}}',
    '{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":NaN}}',
    '{"jsonrpc":"2.0","id":1,"method":"x","params":{"t":"caf\\u00e9 \\ud83d\\ude00"}}',
    '{"jsonrpc":"2.0","id":1,"method":"x","params":{"t":"lone \\ud800"}}',
    '{"jsonrpc":"2.0","id":1,"method":"x",}',
    '{}',
])
def test_the_fast_decoder_agrees_with_json_loads(text):
    """decode_request's scanner fast path accepts and refuses exactly what the full decoder does."""
    from agorad.surface.errors import ParseError
    from agorad.surface.protocol import _decode_in_full, decode_request

    try:
        expected = _decode_in_full(text)
    except ValueError:
        expected = ParseError
    try:
        decoded, plain = decode_request(text.encode())
    except ParseError:
        decoded, plain = ParseError, None
    except Exception:  # valid JSON that is not a request
        decoded, plain = expected, None
    assert decoded == expected
    if plain is not None:
        assert plain == ("\\ud" not in text)  # only a frame that may hold a lone surrogate pays for the check


def test_pipelined_sends_in_one_batch_keep_delivery_ids_gapless(hub):
    """Sends that fail inside a shared transaction leave no trace: seqs and delivery ids stay gapless."""
    from tests.seats import seats

    with seats(hub, "memory", "runtime"):
        pass
    key = (hub.home / "keys" / "memory.key").read_text().strip()
    frames = [{"jsonrpc": "2.0", "id": 1, "method": "hub.hello", "params": {"agent": "memory", "key": key}}]
    for i, params in enumerate([
        {"target": "@runtime", "title": "one"},
        {"target": "@runtime", "title": "bad", "to": ["nobody-here"]},  # fails after the DM exists
        {"target": "@runtime", "title": "two"},
        {"target": "@runtime", "title": "bad", "reply_to": "dm:memory--runtime#99"},
        {"target": "@runtime", "title": "three"},
    ], start=2):
        frames.append({"jsonrpc": "2.0", "id": i, "method": "messages.send", "params": params})
    with Raw(hub.home) as raw:
        raw.send(b"".join(json.dumps(f).encode() + b"\n" for f in frames))  # one write: one loop turn, one batch
        replies = [raw.reply() for _ in frames]
    assert ["error" in r for r in replies] == [False, False, True, False, True, False]
    assert [r["result"]["seq"] for r in replies if "result" in r and "seq" in r["result"]] == [1, 2, 3]
    lines = (hub.home / "runtime-inbox.log").read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == [1, 2, 3]
    assert [json.loads(line)["title"] for line in lines] == ["one", "two", "three"]


@pytest.mark.parametrize("request_id", [0, 7, -3, 2**70, None, "", "abc", 'q"uo\\te', "caf\u00e9 \U0001F600", "\n\x00"])
def test_a_spliced_reply_is_the_encoded_envelope(request_id):
    """encode_result builds the reply frame without a dict; it must be byte for byte encode()'s."""
    from agorad.surface.protocol import encode, encode_result

    result = {"ref": "dm:a--b#1", "to": ["b"], "n": 1.5, "none": None, "text": "\u00e9\n\"", "nested": {"x": []}}
    assert encode_result(request_id, result) == encode({"jsonrpc": "2.0", "id": request_id, "result": result})
