"""The remote port (`agora up --listen`): authentication first, never the operator, caps, and slow peers.

Every test runs a real hub on loopback and speaks to it over real WebSockets: the
`websockets` client for well-formed peers, a raw socket for one that never reads.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import struct
import subprocess
import time

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect as ws_connect

from agorad.surface.errors import AgoraError
from agorad.surface.protocol import MAX_FRAME, encode
from agorad.surface.wsclient import RemoteClient
from tests.hubproc import AGORA, AGORAD, Hub, wait_for
from tests.seats import send



def peer(url: str):
    return ws_connect(url, legacy=True, compression=None, max_size=None)


def request(ws, request_id, method: str, **params) -> dict:
    ws.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}))
    return json.loads(ws.recv(timeout=10))


def close_code(ws) -> int:
    """The code the hub closed with, once what it sent before has been read."""
    try:
        while True:
            ws.recv(timeout=10)
    except ConnectionClosed as closed:
        return closed.rcvd.code


def hello(remote, agent: str = "alice"):
    ws = peer(remote.url)
    assert request(ws, 1, "hub.hello", agent=agent, key=remote.keys[agent])["result"]["agent"] == agent
    return ws


# --- a seat over the remote port -------------------------------------------------------------


def test_a_seat_calls_and_receives_pushes_as_over_the_socket(remote):
    with RemoteClient(remote.url) as alice, remote.client("bob", remote.keys["bob"]) as bob:
        assert alice.hello("alice", remote.keys["alice"])["agent"] == "alice"
        assert alice.call("inbox.subscribe")["newest"] == 0
        send(bob, "@alice", "over the wire", "body")
        note = alice.next_notification(timeout=10)
        assert note["method"] == "inbox.delivery" and note["params"]["title"] == "over the wire"
        # The push carries the notify line's fields: the same bytes as the hub's own file holds.
        line = (remote.home / "alice-inbox.log").read_bytes()
        assert encode(note["params"]) == line
        sent = alice.call("messages.send", target="@bob", title="back", body="")
        assert sent["ref"] == "dm:alice--bob#2"
        assert alice.call("inbox.check")["unread"] == 1


def test_subscribe_after_replays_the_missed_in_order_then_pushes_live(remote):
    with remote.client("bob", remote.keys["bob"]) as bob, RemoteClient(remote.url) as alice:
        for title in ("one", "two", "three"):
            send(bob, "@alice", title)
        alice.hello("alice", remote.keys["alice"])
        answer = alice.call("inbox.subscribe", after=1)
        assert answer["newest"] == 3
        replayed = [alice.next_notification(timeout=10)["params"] for _ in range(2)]
        assert [(d["id"], d["title"]) for d in replayed] == [(2, "two"), (3, "three")]
        send(bob, "@alice", "four")
        assert alice.next_notification(timeout=10)["params"]["id"] == 4
        assert alice.next_notification(timeout=0.2) is None  # nothing twice
        for bad in (-1, "2", 1.5, True):
            with pytest.raises(AgoraError) as refused:
                alice.call("inbox.subscribe", after=bad)
            assert refused.value.reason == "invalid-params" and refused.value.data["field"] == "after"


def test_a_catch_up_past_the_send_queue_comes_whole_then_its_reply(remote):
    """A seat reconnecting over the port with a backlog past its 4 MiB send queue (agora listen --source ws
    after a while away) gets all of it, as it reads, then the reply: written at once, the replay cut the
    connection as a peer that does not read, and the listener, reconnecting with the same id, for ever."""
    wide = "\U0001F600" * 200  # about 4 KiB a push: 1,100 of them pass 4 MiB
    with remote.client("bob", remote.keys["bob"]) as bob:
        for n in range(1100):
            send(bob, "@alice", wide, body=wide)
    with RemoteClient(remote.url) as alice:
        alice.hello("alice", remote.keys["alice"])
        assert alice.call("inbox.subscribe", after=0)["newest"] == 1100
        ids = [alice.next_notification(timeout=10)["params"]["id"] for _ in range(1100)]
        assert ids == list(range(1, 1101))
        assert alice.next_notification(timeout=0.2) is None
        with remote.client("bob", remote.keys["bob"]) as bob:
            send(bob, "@alice", "live")
        assert alice.next_notification(timeout=10)["params"]["id"] == 1101


def test_a_seats_bare_hello_says_which_hub_and_a_hello_with_a_key_authenticates_again(remote):
    """`agora mcp`'s whoami asks `hub.hello` with no params on its seat's connection: over the port as over
    the socket, that answers which hub this is and changes nothing; one naming a seat must carry its key."""
    ws = hello(remote)
    bare = request(ws, 2, "hub.hello")["result"]
    assert bare["protocol"] and bare["hub_version"] and "agent" not in bare
    assert request(ws, 3, "inbox.check")["result"]["unread"] == 0  # still alice's connection
    assert request(ws, 4, "hub.hello", agent="bob", key=remote.keys["alice"])["error"]["data"]["reason"] == "unauthorized"
    assert close_code(ws) == 1008


def test_subscribe_since_replays_what_was_stored_since_then_and_says_where_that_began(remote):
    """A client armed while no hub answered has no id to resume after: `since` (the hub's clock) replays what
    was stored since then, and the answer's `after` is the id before the first of them."""
    with remote.client("bob", remote.keys["bob"]) as bob, RemoteClient(remote.url) as alice:
        send(bob, "@alice", "before")
        since = remote.advance(60)
        send(bob, "@alice", "since one")
        send(bob, "@alice", "since two")
        alice.hello("alice", remote.keys["alice"])
        answer = alice.call("inbox.subscribe", since=since)
        assert (answer["after"], answer["newest"]) == (1, 3)
        replayed = [alice.next_notification(timeout=10)["params"]["title"] for _ in range(2)]
        assert replayed == ["since one", "since two"]
        assert alice.call("inbox.subscribe", since=since + 3600)["after"] == 3  # nothing stored since then
        with pytest.raises(AgoraError) as huge:  # past SQLite's integers: refused, not failed after the COMMIT
            alice.call("inbox.subscribe", after=10**30)
        assert huge.value.reason == "invalid-params" and huge.value.data["field"] == "after"
        for bad in ({"since": -1}, {"since": "now"}, {"since": True}, {"since": 10**30}, {"since": since, "after": 1}):
            with pytest.raises(AgoraError) as refused:
                alice.call("inbox.subscribe", **bad)
            assert refused.value.reason == "invalid-params" and refused.value.data["field"] == "since", bad


# --- authentication -----------------------------------------------------------------------


def test_a_wrong_key_and_an_unknown_seat_get_the_same_answer_and_the_connection_closes(remote):
    answers = []
    for agent, key in (("alice", "agk_wrong"), ("nobody", "agk_wrong"), ("alice", "")):
        ws = peer(remote.url)
        answers.append(request(ws, 7, "hub.hello", agent=agent, key=key))
        assert close_code(ws) == 1008
    assert answers[0]["error"]["data"] == {"reason": "unauthorized"}
    assert answers[0] == answers[1] == answers[2]  # nothing says whether the seat exists
    assert "nobody" not in json.dumps(answers)


@pytest.mark.parametrize("first", [
    {"jsonrpc": "2.0", "id": 1, "method": "agents.list", "params": {}},
    {"jsonrpc": "2.0", "id": 1, "method": "hub.hello", "params": {}},  # the operator's hello: no seat
    {"jsonrpc": "2.0", "id": 1, "method": "hub.hello", "params": {"agent": "alice"}},
    {"jsonrpc": "2.0", "method": "inbox.check", "params": {}},  # a notification: no id, still answered
    "not json at all",
])
def test_a_first_request_that_is_not_a_hello_is_refused_and_closed(remote, first):
    ws = peer(remote.url)
    ws.send(first if isinstance(first, str) else json.dumps(first))
    answer = json.loads(ws.recv(timeout=10))
    assert answer["error"]["data"]["reason"] == "unauthorized"
    assert close_code(ws) == 1008
    assert remote.call("agents.list")  # the hub serves on


def test_failed_hellos_are_throttled_per_peer_address(remote):
    for attempt in range(5):
        ws = peer(remote.url)
        assert request(ws, 1, "hub.hello", agent=f"ghost{attempt}", key="agk_x")["error"]["data"]["reason"] == "unauthorized"
    ws = peer(remote.url)  # the right key, from an address that failed too often: unchecked, try later
    error = request(ws, 1, "hub.hello", agent="alice", key=remote.keys["alice"])["error"]
    assert error["data"]["reason"] == "unavailable" and 0 < error["data"]["retry_after"] <= 60
    assert "too many failed hub.hello from this address" in error["message"] and "try again in" in error["message"]
    assert close_code(ws) == 1013  # try again later
    for _ in range(3):  # refused as often as it tries, logged once a spell (log.Sparse): the log is not rotated
        again = peer(remote.url)
        assert request(again, 1, "hub.hello", agent="alice", key=remote.keys["alice"])["error"]["data"][
            "reason"] == "unavailable"
    assert remote.log().count("reason=throttled") == 1, remote.log()
    with remote.client("alice", remote.keys["alice"]) as local:  # the Unix socket is not throttled
        assert local.call("inbox.check")["unread"] == 0


def test_the_throttle_counts_per_address_in_a_window():
    from agorad.runtime.remote import AuthThrottle

    throttle = AuthThrottle(allowed=2, window=60)
    throttle.failed(0, "peer:10.0.0.1")
    throttle.failed(10, "peer:10.0.0.1")
    assert throttle.blocked(20, "peer:10.0.0.1") and throttle.retry_after(20, "peer:10.0.0.1") == 40
    assert not throttle.blocked(20, "peer:10.0.0.2")
    assert not throttle.blocked(61, "peer:10.0.0.1") and throttle.retry_after(61, "peer:10.0.0.1") == 0


def test_a_seats_failed_hellos_from_other_addresses_do_not_lock_out_its_right_key(remote):
    """Counted per seat, five wrong keys naming a seat from anywhere refused its own client too (a remote
    driver stopped for good, told its key was wrong)."""
    for attempt in range(8):
        with socket.create_connection(("127.0.0.1", int(remote.url.rsplit(":", 1)[1].rstrip("/"))),
                                      source_address=("127.0.0.2", 0)) as raw:
            ws = ws_connect(remote.url, sock=raw, legacy=True, compression=None, max_size=None)
            assert request(ws, 1, "hub.hello", agent="alice", key="agk_guess")["error"]["data"]["reason"] in (
                "unauthorized", "unavailable")
            ws.close()
    ws = peer(remote.url)  # from 127.0.0.1, with alice's key
    assert request(ws, 1, "hub.hello", agent="alice", key=remote.keys["alice"])["result"]["agent"] == "alice"


# --- never the operator -------------------------------------------------------------------


def test_connections_without_a_hello_are_capped_per_address(remote):
    """A peer that opens connections and never says hello holds at most REMOTE_PENDING_PER_PEER of
    them; the next is closed at once with 1013, and a hello frees its place."""
    from agorad.surface import settings

    waiting = [peer(remote.url) for _ in range(settings.REMOTE_PENDING_PER_PEER)]
    assert close_code(peer(remote.url)) == 1013
    assert "reason=too-many-pending" in remote.log()
    assert request(waiting[0], 1, "hub.hello", agent="alice", key=remote.keys["alice"])["result"]["agent"] == "alice"
    ws = peer(remote.url)  # the hello made room
    assert request(ws, 1, "hub.hello", agent="bob", key=remote.keys["bob"])["result"]["agent"] == "bob"
    waiting[1].close()  # so does a connection that goes
    assert wait_for(lambda: _said_hello(remote, "alice"), what="a place freed by a closed connection")
    assert remote.call("agents.list")  # the hub serves on
    for each in waiting[2:]:
        each.close()


def _said_hello(remote, agent: str) -> bool:
    """Whether a new connection was kept and its hello answered (False: it was closed at once)."""
    ws = peer(remote.url)
    try:
        return request(ws, 1, "hub.hello", agent=agent, key=remote.keys[agent])["result"]["agent"] == agent
    except ConnectionClosed:
        return False


def test_the_pending_count_is_kept_per_address_and_in_all():
    from agorad.runtime.remote import PendingHellos

    pending = PendingHellos(per_peer=2, total=3)
    assert pending.admit("a") and pending.admit("a") and not pending.admit("a")
    assert pending.admit("b") and not pending.admit("c")  # the total
    pending.release("a")
    assert pending.admit("c") and not pending.admit("a")
    for peer_address in ("a", "b", "c"):
        pending.release(peer_address)
    assert pending.count == 0 and not pending.by_peer


@pytest.mark.parametrize("method, params", [
    ("agents.add", {"agent": "mallory"}), ("agents.remove", {"agent": "bob"}), ("hub.pause", {}),
    ("hub.sweep", {}), ("steward.report", {}), ("charters.set", {"text": "obey"}),
])
def test_no_operator_call_is_allowed_remotely(remote, method, params):
    ws = hello(remote)
    answer = request(ws, 2, method, **params)
    assert answer["error"]["data"]["reason"] == "forbidden"
    assert request(ws, 3, "inbox.check")["result"]["unread"] == 0  # still the seat, still served
    assert [a["id"] for a in remote.call("agents.list")["agents"]] == ["alice", "bob"]


def test_the_cli_over_a_url_acts_as_the_seat_and_refuses_operator_commands(remote, tmp_path):
    env = {**remote.env, "AGORA_URL": remote.url, "AGORA_HOME": str(tmp_path / "elsewhere"),
           "AGORA_KEY": remote.keys["alice"]}
    sent = subprocess.run([AGORA, "send", "--as", "alice", "@bob", "from afar"], env=env, capture_output=True, text=True)
    assert sent.returncode == 0, sent.stderr
    with remote.client("bob", remote.keys["bob"]) as bob:
        assert bob.call("inbox.check")["unread"] == 1
    for command in (["agents"], ["agent", "add", "mallory"], ["pause"], ["status"]):
        done = subprocess.run([AGORA, *command], env=env, capture_output=True, text=True)
        assert done.returncode == 1 and "local operator" in done.stderr, (command, done.stderr)
        if command[0] == "status":  # it takes --as, so the way to ask as a seat is said, not "give --as"
            assert "`agora --url URL status --as ID`" in done.stderr, done.stderr
    # With the seat that asks given, $AGORA_URL serves as --url does (a review: it was refused, and the
    # refusal then said to give --url and --as).
    shown = subprocess.run([AGORA, "status", "--as", "alice", "--json"], env=env, capture_output=True, text=True)
    assert shown.returncode == 0 and json.loads(shown.stdout)["asked_as"] == "alice", shown.stderr
    # Given --url (or a home whose hub.url names the hub), `agora status` asks as a seat (agora-status(1)).
    seatless = subprocess.run([AGORA, "--url", remote.url, "status"], env=env, capture_output=True, text=True)
    assert seatless.returncode == 2 and "give --as ID" in seatless.stderr, seatless.stderr
    shown = subprocess.run([AGORA, "--url", remote.url, "status", "--as", "alice", "--json"], env=env,
                           capture_output=True, text=True)
    assert shown.returncode == 0 and json.loads(shown.stdout)["asked_as"] == "alice", shown.stderr
    wrong = subprocess.run([AGORA, "inbox", "--as", "alice"], env={**env, "AGORA_KEY": "agk_wrong"},
                           capture_output=True, text=True)
    assert wrong.returncode == 1 and "authentication failed" in wrong.stderr
    down = subprocess.run([AGORA, "--url", "ws://127.0.0.1:9/", "inbox", "--as", "alice"], env=env,
                          capture_output=True, text=True)
    assert down.returncode == 3 and "no hub is answering at ws://127.0.0.1:9/" in down.stderr


def test_a_seat_records_url_is_never_sent_a_key_and_the_homes_hub_url_is(remote, tmp_path):
    """A record found above the working directory may be anyone's (a cloned repository's, one planted in
    /tmp): its `url` once received the key of the seat it named. Only the home's hub.url (written by
    `agora setup --url`), --url and $AGORA_URL name a remote hub."""
    workspace = tmp_path / "ws"
    (workspace / ".agora").mkdir(parents=True)
    local = tmp_path / "seathome"
    (local / "keys").mkdir(parents=True)
    (local / "keys" / "alice.key").write_text(remote.keys["alice"] + "\n")
    (workspace / ".agora" / "seat.toml").write_text(
        f'format = 1\nid = "alice"\nhub = "{local}/agorad.sock"\nkey_file = "{local}/keys/alice.key"\n'
        f'url = "{remote.url}"\n')
    env = {key: value for key, value in remote.env.items() if key not in ("AGORA_HOME", "AGORA_URL", "AGORA_KEY")}
    done = subprocess.run([AGORA, "inbox", "--json"], cwd=workspace, env=env, capture_output=True, text=True)
    assert done.returncode == 3 and f"no hub is answering on {local}/agorad.sock" in done.stderr, done.stderr
    (local / "hub.url").write_text(remote.url + "\n")
    done = subprocess.run([AGORA, "inbox", "--json"], cwd=workspace, env=env, capture_output=True, text=True)
    assert done.returncode == 0 and json.loads(done.stdout)["unread"] == 0, done.stderr
    # On the hub's host, `agora status --home` run in that workspace is still the operator on the socket:
    # the record's seat does not make it a seat (a review finding).
    status = subprocess.run([AGORA, "status", "--home", str(remote.home), "--json"], cwd=workspace, env=env,
                            capture_output=True, text=True)
    assert status.returncode == 0 and "asked_as" not in json.loads(status.stdout), status.stderr


# --- frames -------------------------------------------------------------------------------


def test_a_frame_over_the_cap_closes_the_connection_and_one_at_the_cap_is_answered(remote):
    ws = hello(remote)
    envelope = '{"jsonrpc":"2.0","id":2,"method":"inbox.check","params":{"pad":""}}'
    at_cap = envelope.replace('"pad":""', '"pad":"' + "x" * (MAX_FRAME - len(envelope)) + '"')
    assert len(at_cap) == MAX_FRAME
    ws.send(at_cap)
    assert json.loads(ws.recv(timeout=10))["error"]["data"]["field"] == "pad"  # read and answered
    ws.send(at_cap[:-1] + ' }')  # one byte over
    assert close_code(ws) == 1009
    assert remote.call("agents.list")


def test_a_binary_message_is_refused_and_closes(remote):
    ws = hello(remote)
    ws.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "inbox.check", "params": {}}).encode())
    assert json.loads(ws.recv(timeout=10))["error"]["data"]["reason"] == "invalid-request"
    assert close_code(ws) == 1008
    before = peer(remote.url)  # before the hello: the one refusal
    before.send(b"\x00\x01")
    assert json.loads(before.recv(timeout=10))["error"]["data"]["reason"] == "unauthorized"


# --- slow and silent peers ------------------------------------------------------------------


def test_one_reply_larger_than_the_send_queue_reaches_a_peer_that_reads(remote):
    """A page of kb.list of control characters is one frame of about 12 MiB once escaped (PAGE_BYTES), past
    REMOTE_SEND_QUEUE (4 MiB): queued while the peer kept up, it is sent, not taken for a peer too far
    behind (which cut the seat with 1008)."""
    value = "\x01" * (60 << 10)
    for n in range(40):
        remote.call("kb.put", key=f"notes/{n:03d}", value=value)
    with RemoteClient(remote.url) as alice:
        alice.hello("alice", remote.keys["alice"])
        listed = alice.call("kb.list", prefix="notes/", limit=100)
        assert len(encode(listed)) > 4 << 20 and listed["more"] is True
        assert all(e["value"] == value for e in listed["entries"])
        assert alice.call("inbox.check")["unread"] == 0  # the seat is still served



def test_many_requests_sent_at_once_whose_replies_pass_the_send_queue_are_all_answered(remote):
    """A review: the SDK's async drain sends every messages.read at once. The hub read them all before
    any reply was queued (replies wait for the batch's COMMIT), then queued seven replies of ~600 KB
    (control characters escaped) in one go, and cut the seat as a peer that does not read."""
    with remote.client("alice", remote.keys["alice"]) as alice:
        for n in range(7):
            alice.call("messages.send", target="@bob", title=f"b{n}", body="\x01" * (64 << 10))
    ws = hello(remote, "bob")
    for n in range(1, 8):
        ws.send(json.dumps({"jsonrpc": "2.0", "id": 10 + n, "method": "messages.read", "params": {"ref": f"dm:alice--bob#{n}"}}))
    replies = [json.loads(ws.recv(timeout=30)) for _ in range(7)]
    assert [r["id"] for r in replies] == list(range(11, 18)) and all(r["result"]["body"] == "\x01" * (64 << 10) for r in replies)
    assert sum(len(encode(r)) for r in replies) > 4 << 20 and "remote-cut" not in remote.log()
    ws.close()



def test_the_hub_stops_while_a_peer_streams_requests_and_reads_its_replies(remote):
    """A review: `agora down` during such a stream timed out and the hub served on until kill -9. Its reader
    waited at the high-water mark for a drain the sender task, ended by the closed connection, never gave."""
    import threading

    ws = hello(remote, "alice")
    sent = [0]

    def read() -> None:
        with contextlib.suppress(ConnectionClosed):
            while True:
                ws.recv()

    def send() -> None:
        frame = {"jsonrpc": "2.0", "method": "messages.send", "params": {"target": "@bob", "title": "t", "body": "b" * 200}}
        with contextlib.suppress(ConnectionClosed):
            while True:
                sent[0] += 1
                ws.send(json.dumps({**frame, "id": sent[0]}))

    threads = [threading.Thread(target=work, daemon=True) for work in (read, send)]
    for thread in threads:
        thread.start()
    wait_for(lambda: sent[0] > 20000, timeout=60, what="a stream of requests")
    assert remote.stop() == 0  # it waits at most 10 s, then raises: before the fix it waited for good
    for thread in threads:
        thread.join(10)
        assert not thread.is_alive()


class NonReader:
    """A WebSocket client that says hello, subscribes, and then never reads a byte."""

    def __init__(self, url: str, agent: str, key: str):
        host, port = url.split("//")[1].strip("/").rsplit(":", 1)
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.connect((host, int(port)))
        nonce = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Key: {nonce}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)  # one byte at a time: nothing past the handshake is consumed
        assert head.startswith(b"HTTP/1.1 101")
        self.text(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "hub.hello", "params": {"agent": agent, "key": key}}))
        self.text(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "inbox.subscribe", "params": {}}))

    def text(self, payload: str) -> None:
        data, mask = payload.encode(), os.urandom(4)
        header = bytes([0x81]) + (bytes([0x80 | len(data)]) if len(data) < 126 else bytes([0x80 | 126]) + struct.pack("!H", len(data)))
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))


def test_a_subscriber_that_does_not_read_is_cut_and_the_hub_never_waits_for_it(remote):
    slow = NonReader(remote.url, "alice", remote.keys["alice"])
    wait_for(lambda: "remote-hello peer=127.0.0.1 agent=alice" in remote.log(), what="the hello")
    title = "t" * 200
    with remote.client("bob", remote.keys["bob"]) as bob:
        slowest = 0.0
        for count in range(40000):
            started = time.monotonic()
            bob.call("messages.send", target="@alice", title=title, body="b" * 2000)
            slowest = max(slowest, time.monotonic() - started)
            if count % 200 == 0 and "remote-cut" in remote.log():
                break
        assert "reason=not-reading" in remote.log()
        assert slowest < 2.0  # every send was answered while the peer did not read
        assert bob.call("inbox.check")["unread"] == 0
    slow.sock.close()


def test_silent_connections_close_before_and_after_the_hello(home):
    hub = Hub(home, "--listen", "127.0.0.1:0", "--listen-idle", "1s").start()
    try:
        url = hub.call("hub.status")["remote"]
        key = hub.add_agent("alice")
        assert close_code(peer(url)) == 1008  # no hello within the idle time
        ws = peer(url)
        request(ws, 1, "hub.hello", agent="alice", key=key)
        assert close_code(ws) == 1001  # idle
        for params in ({}, {"after": 0}):  # with after, the subscription starts once the call is committed
            subscriber = peer(url)
            request(subscriber, 1, "hub.hello", agent="alice", key=key)
            request(subscriber, 2, "inbox.subscribe", **params)
            with pytest.raises(TimeoutError):
                subscriber.recv(timeout=2.5)  # a subscriber waits as long as it answers pings
        assert "reason=no hello" in hub.log().replace("'", "")
    finally:
        hub.stop()


# --- binding --------------------------------------------------------------------------------


def test_a_bind_beyond_loopback_without_tls_refuses_to_start(home):
    done = subprocess.run([AGORAD, "--home", str(home), "--listen", "0.0.0.0:0"], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 1
    assert "beyond loopback without TLS" in done.stderr and "--tls-cert" in done.stderr and "--insecure" in done.stderr
    assert not home.exists()  # refused before anything was touched
    half = subprocess.run([AGORAD, "--home", str(home), "--listen", "127.0.0.1:0", "--tls-cert", "/nonexistent"],
                          capture_output=True, text=True, timeout=30)
    assert half.returncode == 2 and "go together" in half.stderr  # a usage error, as agora-up(1) says
    assert not home.exists()
    for detach in ([], ["--detach"]):  # files that do not load: refused before the home is made, too
        missing = subprocess.run([AGORAD, "--home", str(home), "--listen", "127.0.0.1:0", "--tls-cert", "/nonexistent",
                                  "--tls-key", "/nonexistent", *detach], capture_output=True, text=True, timeout=30)
        assert missing.returncode == 1 and "loading --tls-cert /nonexistent" in missing.stderr, missing.stderr
        assert "No such file" in missing.stderr and "Traceback" not in missing.stderr
        assert not home.exists()


def test_insecure_allows_it_and_warns_loudly(home):
    hub = Hub(home, "--listen", "0.0.0.0:0", "--insecure").start()
    try:
        assert "WARNING" in hub.log() and "unencrypted" in hub.log()
        assert hub.call("hub.status")["remote"].startswith("ws://0.0.0.0:")
    finally:
        hub.stop()


def test_tls_serves_wss_to_a_client_that_trusts_the_certificate(home, certificate, tmp_path):
    cert, key = certificate
    hub = Hub(home, "--listen", "127.0.0.1:0", "--tls-cert", str(cert), "--tls-key", str(key)).start()
    try:
        url = hub.call("hub.status")["remote"]
        assert url.startswith("wss://127.0.0.1:")
        env = {**hub.env, "AGORA_URL": url, "AGORA_HOME": str(tmp_path / "elsewhere"),
               "AGORA_KEY": hub.add_agent("alice")}
        trusted = subprocess.run([AGORA, "inbox", "--as", "alice", "--json"], env={**env, "SSL_CERT_FILE": str(cert)},
                                 capture_output=True, text=True)
        assert trusted.returncode == 0, trusted.stderr
        untrusted = subprocess.run([AGORA, "inbox", "--as", "alice"], env=env, capture_output=True, text=True)
        assert untrusted.returncode == 3 and "certificate verify failed" in untrusted.stderr
        plain = subprocess.run([AGORA, "inbox", "--as", "alice"], env={**env, "AGORA_URL": url.replace("wss", "ws")},
                               capture_output=True, text=True)
        assert plain.returncode == 3  # a plain client gets no answer from a TLS port
    finally:
        hub.stop()


@pytest.mark.parametrize("listen", ["127.0.0.1:notaport", "99999"])
def test_a_bad_listen_address_is_a_usage_error(home, listen):
    """An invalid value is exit 2 (agora-up(1)), as click's own usage errors; it was 1, a failed start."""
    done = subprocess.run([AGORAD, "--home", str(home), "--listen", listen], capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 2 and "--listen" in done.stderr and "HOST:PORT" in done.stderr, done.stderr
    assert not home.exists()


def test_a_hub_without_listen_serves_no_port(hub):
    assert hub.call("hub.status")["remote"] is None
    assert "remote port" not in subprocess.run([AGORA, "status", "--home", str(hub.home)], capture_output=True,
                                               text=True, timeout=30).stdout


def test_status_names_the_port_listen_0_picked(remote):
    shown = subprocess.run([AGORA, "status", "--home", str(remote.home)], capture_output=True, text=True, timeout=30)
    assert f"remote port: {remote.url} (seats on other hosts: agora setup --url)\n" in shown.stdout


def test_a_stop_does_not_wait_for_a_peer_that_does_not_read_its_catch_up(remote):
    """A catch-up replay fills a peer's send queue to the high-water mark and waits there, as it reads: one that
    does not read holds a send stuck in the full socket, and websockets' close handshake waited behind it, so the
    hub's stop waited for the keepalive to give up on the peer (18 s here, up to 40 s; agora down waits 30 s)."""
    wide = "\U0001F600" * 200
    with remote.client("bob", remote.keys["bob"]) as bob:
        for n in range(2000):
            send(bob, "@alice", wide)
    with ws_connect(remote.url, max_size=None) as alice:  # its reader stops once a few messages wait unread
        alice.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "hub.hello",
                               "params": {"agent": "alice", "key": remote.keys["alice"]}}))
        assert "result" in json.loads(alice.recv(timeout=10))
        alice.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "inbox.subscribe", "params": {"after": 0}}))
        time.sleep(2)
        started = time.monotonic()
        assert remote.stop() == 0
        assert time.monotonic() - started < 10
