"""A hub out of descriptors, and peers that hold connections open: counted, logged sparingly, served again.

Found by a review: 1,100 TCP connections from one address that never finished the WebSocket handshake
were all accepted (the per-address cap began at the handshake's end) and took every descriptor; asyncio
then logged each failed accept with a traceback, hundreds per loop turn, into a log that is not rotated.
"""

from __future__ import annotations

import os
import resource
import socket
from urllib.parse import urlparse

import pytest

from agorad.runtime.log import Sparse
from agorad.surface import settings
from tests.hubproc import wait_for

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors through /proc")


def _closed_at_once(sock: socket.socket) -> bool:
    sock.settimeout(10)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:  # aborted: the hub reset it
        return True


def _said_hello(remote, agent: str) -> bool:
    from websockets.sync.client import connect

    try:
        with connect(remote.url, open_timeout=5) as ws:
            ws.send('{"jsonrpc":"2.0","id":1,"method":"hub.hello","params":{"agent":"%s","key":"%s"}}'
                    % (agent, remote.keys[agent]))
            return '"result"' in ws.recv(timeout=5)
    except Exception:
        return False


def test_connections_that_never_finish_the_handshake_are_capped_per_address_from_their_accept(remote):
    where = urlparse(remote.url)
    held = [socket.create_connection((where.hostname, where.port)) for _ in range(settings.REMOTE_PENDING_PER_PEER)]
    try:
        for _ in range(3):
            assert _closed_at_once(socket.create_connection((where.hostname, where.port)))
        log = remote.log()
        assert log.count("reason=too-many-handshaking") == 1, log  # the next ones are held back
        assert not _said_hello(remote, "alice")  # the address's places are taken
    finally:
        for sock in held:
            sock.close()
    assert wait_for(lambda: _said_hello(remote, "alice"), what="the places freed by the closed connections")


def test_a_hub_out_of_descriptors_says_so_once_and_serves_again_once_they_free(hub):
    pid = hub.proc.pid
    spare = len(os.listdir(f"/proc/{pid}/fd")) + 6
    soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (spare, hard))
    held = []
    try:
        for _ in range(40):  # more than it can accept: the rest wait in the socket's backlog
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(str(hub.home / "agorad.sock"))
            held.append(sock)
        wait_for(lambda: "accept-failed" in hub.log() or "out of system resource" in hub.log(),
                 what="the hub to run out of descriptors")
    finally:
        for sock in held:
            sock.close()
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))
    wait_for(lambda: _answers(hub), what="the hub to accept again")
    log = hub.log()
    assert log.count(" accept-failed error=EMFILE ") == 1, log
    assert "Traceback" not in log and "out of system resource" not in log, log


def _answers(hub) -> bool:
    try:
        return "hub_version" in hub.call("hub.hello")
    except Exception:
        return False


def test_a_sparse_event_is_logged_once_a_spell_with_the_count_held_back(capsys):
    now = [100.0]
    refused = Sparse("remote-refused", every=10.0, clock=lambda: now[0])
    for _ in range(5):
        refused(peer="10.0.0.1")
    now[0] += 9.9
    refused(peer="10.0.0.1")
    now[0] += 0.2
    refused(peer="10.0.0.2")
    refused(peer="10.0.0.2")
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(" ", 2)[2] for line in lines] == [
        "remote-refused peer=10.0.0.1", "remote-refused peer=10.0.0.2 held_back_since_last=5"]
