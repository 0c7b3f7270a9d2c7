"""`agora mcp` for a seat whose hub runs on another host: wired by `agora setup --url --key-stdin`, served
over the hub's remote port (`agora up --listen`) with the same tools, waits and fixes as over its socket."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import pytest

from tests.hubproc import Hub
from tests.mcpclient import doorbell_up, mcp_session, waiting
from tests.remote_seat import free_port, wire_remote_seat

pytestmark = pytest.mark.timeout(90)


def run(coro):
    return asyncio.run(coro)


def wired(url: str, key: str, tmp_path):
    """Alice's Claude Code workspace on "her host", wired to the hub at `url`; what its .mcp.json runs."""
    workspace, seat_home = tmp_path / "ws", tmp_path / "seathome"
    (workspace / ".claude").mkdir(parents=True)
    report = wire_remote_seat(url, key, workspace, seat_home)
    entry = json.loads((workspace / ".mcp.json").read_text())["mcpServers"]["agora"]
    return SimpleNamespace(home=seat_home, command=[entry["command"], *entry["args"]], report=report)


def unread(hub, agent: str, key: str) -> list[str]:
    with hub.client(agent, key) as seat:
        return [m["ref"] for c in seat.call("inbox.check")["channels"] for m in c["messages"]]


def test_the_wired_mcp_entry_of_a_remote_seat_reads_waits_acks_and_sends_over_the_port(remote, tmp_path):
    seat = wired(remote.url, remote.keys["alice"], tmp_path)
    assert not any("no MCP entries" in note for note in seat.report["notes"])

    async def body():
        # As a harness starts it: the SDK's bare environment, no AGORA_HOME, AGORA_KEY or AGORA_URL.
        async with mcp_session(seat.home, command=seat.command) as alice:
            await doorbell_up(alice)
            assert f"; hub {remote.url} " in await alice.ok("whoami")
            async with waiting(alice, 30) as answers:
                with remote.client("bob", remote.keys["bob"]) as bob:
                    ref = bob.call("messages.send", target="@alice", title="over the port", body="the body",
                                   ask=True)["ref"]
            assert answers[0].startswith("1 arrived") and "over the port" in answers[0], answers[0]
            assert ref in await alice.ok("check_inbox")
            assert "the body" in await alice.ok("read_message", ref=ref)
            assert f"acked {ref}" in await alice.ok("ack_inbox", refs=[ref])
            sent = await alice.ok("send_message", target="@bob", title="done", reply_to=ref)
            assert "discharged 1 debt(s)" in sent
        assert unread(remote, "alice", remote.keys["alice"]) == []
        assert len(unread(remote, "bob", remote.keys["bob"])) == 1
    run(body())


def test_a_wait_in_flight_over_the_port_survives_the_hub_restarting(home, tmp_path):
    """The hub stops while a wait is in flight: tools answer `unavailable` with the remote fix; once the hub is
    back on its port, the doorbell subscribes after the newest id it saw and the wait gets what came meanwhile."""
    hub = Hub(home, "--listen", f"127.0.0.1:{free_port()}").start()
    try:
        url = hub.call("hub.status")["remote"]
        keys = {agent: hub.add_agent(agent, liveness_mode="always-on") for agent in ("alice", "bob")}
        seat = wired(url, keys["alice"], tmp_path)

        async def body():
            async with mcp_session(seat.home, command=seat.command) as alice:
                await doorbell_up(alice)
                async with waiting(alice, 45) as answers:
                    hub.stop()
                    down = await alice.fails("check_inbox")
                    assert "unavailable: no hub is answering at " + url in down and "agora up --listen" in down, down
                    hub.start()
                    # Sent at once: most likely before the doorbell is back, so only its catch-up can see it.
                    with hub.client("bob", keys["bob"]) as bob:
                        bob.call("messages.send", target="@alice", title="after the restart")
                assert "after the restart" in answers[0], answers[0]
                assert "unread 1" in await alice.ok("check_inbox")  # the call connection came back by itself
        run(body())
    finally:
        hub.stop()


def test_a_refused_or_missing_key_over_the_port_says_how_to_set_the_remote_seat_up(remote, tmp_path):
    seat = wired(remote.url, remote.keys["alice"], tmp_path)
    key_file = seat.home / "keys" / "alice.key"
    fix = f"agora setup alice --url {remote.url} --key-stdin"

    async def body():
        key_file.write_text(remote.keys["bob"] + "\n")
        async with mcp_session(seat.home, command=seat.command) as alice:
            refused = await alice.fails("check_inbox")
            assert "unauthorized:" in refused and fix in refused, refused
        key_file.unlink()
        async with mcp_session(seat.home, command=seat.command) as alice:
            missing = await alice.fails("check_inbox")
            assert "no-key:" in missing and fix in missing, missing
    run(body())
