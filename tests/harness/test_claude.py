"""Claude Code in a workspace wired for a seat: its Bash tool reads and acks, its hooks wake it and hold it to its mail.

Every test uses the files the wiring wrote, untouched, a real hub, the real
`agora` CLI, and the real Claude Code CLI against the scripted model.
"""

from __future__ import annotations

import statistics
import time

import pytest

from agorad.surface import settings, wiring
from tests.harness import claude, latency, rewake
from tests.harness.conftest import PEER

pytestmark = [pytest.mark.harness("claude")]

FIRST_REQUEST_TIMEOUT = 20.0  # Claude's start to its first model request is about 1 s here


@pytest.fixture
def sessions():
    """Claude sessions a test opens, killed with their process group at its end (hook listeners: hook_processes)."""
    opened: list[claude.Session] = []
    yield lambda seat: opened.append(claude.Session(seat.workspace, seat.env)) or opened[-1]
    for session in opened:
        session.kill_group()


def unread(hub, agent):
    with hub.client(agent) as seat:
        return rewake._unread(seat)


@pytest.mark.timeout(180)
def test_idle_session_is_woken_for_each_dm_and_reads_and_acks_it(claude_seat, model, sessions):
    """(b) Three DMs, one at a time, to an idle stream-json session: each wakes it, and its turn reads and acks."""
    hub = claude_seat.hub
    session = sessions(claude_seat)
    seen = []
    listener = None
    with hub.client(PEER) as peer, hub.client(claude_seat.agent) as seat:
        for n in range(3):
            seconds, listener = rewake.wake_once(model, peer, seat, claude_seat.agent, hub.home,
                                                 f"wake {n}", previous_listener=listener)
            seen.append(seconds)
    assert session.proc.poll() is None, f"the session ended: {session.stderr()[-800:]}"
    latency.record("send -> Claude's next model request (hook-armed listener)", seen,
                   f"wired --debounce {settings.HOOK_DEBOUNCE:g}s included")
    assert max(seen) < settings.HOOK_DEBOUNCE + 10, seen  # a wake, not a time-out or a later turn


@pytest.mark.timeout(60)
def test_listener_own_wake_latency(hub, hook_processes):
    """The listener alone, same hub kind and machine: `agora listen --once --debounce 0`, send -> AGORA_WAKE."""
    from tests.listenproc import Listener

    hub.add_agent("ear", liveness_mode="always-on")
    hub.add_agent(PEER, liveness_mode="always-on")
    seen = []
    with hub.client(PEER) as peer:
        for n in range(5):
            ear = Listener(hub, "--as", "ear", "--once", "--debounce", "0", "--max-wait", "30")
            ear.wait_for("AGORA_LISTEN armed")
            peer.call("messages.send", target="@ear", title=f"ring {n}")
            sent_at = time.monotonic()
            ear.wait_for("AGORA_WAKE")
            seen.append(time.monotonic() - sent_at)
            status, _, stderr = ear.finish()
            assert status == 2, stderr
    latency.record("send -> AGORA_WAKE (agora listen --once --debounce 0)", seen)
    assert statistics.median(seen) < 1.0, seen
