"""Holding a change to "never a wake": no notify line, no ring from a real listener, no new wake signature."""

from __future__ import annotations

from agora_drive.obligations import sweep
from agora_listen.inbox_view import ask
from tests.listenproc import listen_once


def notify_bytes(hub, agent_id: str) -> bytes:
    path = hub.home / f"{agent_id}-inbox.log"
    return path.read_bytes() if path.exists() else b""


def assert_rings_nobody(hub, agent_id: str, change):
    """Run `change()` and hold that it reaches `agent_id` by no doorbell: its notify file is unchanged, a
    `agora listen --once` armed after it ends at its max-wait, and the driver's obligation sweep and the
    stop hook's view of the seat are what they were before. Returns the sweep after the change."""
    listen_once(hub, "--as", agent_id, "--debounce", "0", "--max-wait", "1")  # arm: offset and owed signature saved
    before = (notify_bytes(hub, agent_id), sweep(hub.home, agent_id), ask(hub.home, agent_id))
    change()
    code, lines, _ = listen_once(hub, "--as", agent_id, "--debounce", "0", "--max-wait", "1")
    assert (code, lines[-1]) == (0, "AGORA_LISTEN ended reason=max-wait"), lines
    assert not any(line.startswith("AGORA_WAKE") for line in lines), lines
    after = (notify_bytes(hub, agent_id), sweep(hub.home, agent_id), ask(hub.home, agent_id))
    assert after[0] == before[0], "the change wrote a notify line"
    assert (after[1].marks, after[1].signature) == (before[1].marks, before[1].signature)
    assert [m["mark"] for m in after[2].important] == [m["mark"] for m in before[2].important]
    return after[1]
