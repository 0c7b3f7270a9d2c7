"""The SDK over the remote wire (agora-rpc(7), `agora up --listen`): Client, AsyncClient and
AgentRunner given a ws:// URL, against a real hub on loopback.

Skipped only where this checkout's hub has no `--listen` (the remote port lands separately).
"""

from __future__ import annotations

import asyncio
import subprocess
import threading

import pytest

from agora_sdk import AgentRunner, AsyncClient, Client
from agorad.surface.errors import Forbidden, InvalidParams, Unauthorized, Unavailable
from tests.hubproc import AGORAD, Hub, wait_for

HAS_LISTEN = "--listen" in subprocess.run([AGORAD, "--help"], capture_output=True, text=True).stdout
pytestmark = pytest.mark.skipif(not HAS_LISTEN, reason="this hub has no remote port (agorad --help lists no --listen)")


@pytest.fixture
def remote(home):
    running = Hub(home, "--listen", "127.0.0.1:0").start()
    running.url = running.call("hub.status")["remote"]
    yield running
    running.stop()


def add(hub, *agents: str) -> dict[str, str]:
    return {agent: hub.add_agent(agent, liveness_mode="always-on") for agent in agents}


def test_a_client_calls_by_name_and_reads_pushes_over_the_url(remote, monkeypatch):
    keys = add(remote, "alice", "bot")
    monkeypatch.setenv("AGORA_URL", remote.url)  # the URL from the environment, as a seat on another host has it
    with Client("alice", key=keys["alice"]) as alice, Client("bot", key=keys["bot"]) as bot:
        assert bot.target.url == remote.url
        bot.inbox.subscribe()
        sent = alice.messages.send(target="@bot", title="over the wire", body="hi")
        push = bot.next_notification(timeout=10)
        assert (push["method"], push["params"]["seq"]) == ("inbox.delivery", sent["seq"])
        assert [m.body for m in bot.inbox.drain()] == ["hi"]
        with pytest.raises(InvalidParams) as caught:
            alice.messages.send(target="@bot", title="")
        assert caught.value.reason == "invalid-params"


def test_a_client_on_a_home_set_up_for_a_remote_hub_reaches_it_there(remote, tmp_path, monkeypatch):
    """A home that `agora setup --url` made for a seat on another host holds the hub's URL (hub.url) and
    the seat's key: the SDK, as every command, speaks to that hub, not to a socket the home has none of."""
    from agorad.surface.keys import save_key_file
    from agorad.surface.paths import Home

    keys = add(remote, "alice")
    monkeypatch.delenv("AGORA_URL", raising=False)
    seat_home = Home.resolve(tmp_path / "seat-home")
    (seat_home.root / "keys").mkdir(mode=0o700, parents=True)
    seat_home.hub_url_file.write_text(remote.url + "\n")
    save_key_file(seat_home, "alice", keys["alice"])
    with Client("alice", home=seat_home.root) as alice:
        assert alice.target.url == remote.url
        assert alice.agents.get(agent="alice")["agent"]["id"] == "alice"

    async def over_async():
        async with AsyncClient("alice", home=seat_home.root) as aalice:
            return (await aalice.hub.status())["remote"]

    assert asyncio.run(over_async()) == remote.url
    with pytest.raises(Unauthorized, match="acts only as an agent"):
        Client(home=seat_home.root)  # the operator is only ever on the hub's own socket
    monkeypatch.setenv("AGORA_URL", "ws://127.0.0.1:9/")  # the home's hub.url wins, and a refusal says so
    with pytest.raises(Unauthorized) as refused:
        Client("alice", key="agk_wrong", home=seat_home.root).connect()
    assert refused.value.message.endswith(f"(the hub at {remote.url}, from {seat_home.hub_url_file})")
    assert refused.value.reason == "unauthorized"


def test_wrong_keys_and_operator_calls_are_refused_remotely(remote):
    keys = add(remote, "bot")
    with pytest.raises(Unauthorized) as caught:
        Client("bot", key="agk_wrong", url=remote.url).connect()
    assert caught.value.reason == "unauthorized"
    with pytest.raises(Unauthorized):
        Client("ghost", key="agk_wrong", url=remote.url).connect()
    with pytest.raises(Unauthorized, match="acts only as an agent"):
        Client(url=remote.url)
    with Client("bot", key=keys["bot"], url=remote.url) as bot:
        with pytest.raises(Forbidden) as caught:
            bot.hub.sweep()
        assert caught.value.reason == "forbidden"


def test_an_async_client_over_the_url(remote):
    keys = add(remote, "alice", "bot")

    async def scenario():
        async with AsyncClient("alice", key=keys["alice"], url=remote.url) as alice, \
                AsyncClient("bot", key=keys["bot"], url=remote.url) as bot:
            await bot.inbox.subscribe()
            await asyncio.gather(*(alice.messages.send(target="@bot", title=f"m{i}") for i in range(3)))
            titles = [push["params"]["title"] async for push in _take(bot.notifications(timeout=10), 3)]
            await asyncio.to_thread(remote.stop)  # this loop must stay free to answer the closing handshake
            with pytest.raises(Unavailable):
                await bot.next_notification(timeout=10)
            return titles

    assert asyncio.run(scenario()) == ["m0", "m1", "m2"]


async def _take(iterator, count: int):
    async for item in iterator:
        yield item
        count -= 1
        if count == 0:
            return


def test_a_runner_over_the_url_answers_and_survives_a_hub_restart(remote):
    keys = add(remote, "alice", "bot")
    seen = []

    def handle(message):
        seen.append(message.ref)
        message.reply(f"got {message.title}")

    runner = AgentRunner("bot", handle, key=keys["bot"], url=remote.url, reconnect_first=0.05,
                         reconnect_cap=0.5)  # a loaded machine may take seconds to restart the hub: retry often
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    assert runner.ready.wait(10)
    with Client("alice", key=keys["alice"], url=remote.url) as alice:
        first = alice.messages.send(target="@bot", title="one")["ref"]
        wait_for(lambda: seen == [first], what="the first message")
    url = remote.url
    remote.stop()
    remote.args = ("--listen", url.removeprefix("ws://").rstrip("/"))  # the same port again
    remote.start()
    with Client("alice", key=keys["alice"], url=url) as alice:
        second = alice.messages.send(target="@bot", title="two")["ref"]
        wait_for(lambda: seen == [first, second], what="the message after the restart")
        wait_for(lambda: alice.inbox.check()["unread"] == 2, what="both replies")
    runner.stop()
    thread.join(10)
    assert not thread.is_alive() and runner.connections == 2


def test_a_reply_over_the_reply_cap_ends_the_connection_on_either_client():
    """A hub on another host is trusted less: a reply past protocol.MAX_REPLY (16 MiB) is refused by the
    asyncio and the blocking client alike, not buffered whole. A scripted peer stands in for such a hub
    (no real one answers that much: a listing's page, the largest, ends past 12 MiB of JSON)."""
    import json

    from websockets.asyncio.server import serve

    from agorad.surface.protocol import MAX_REPLY
    from agorad.surface.wsclient import RemoteClient

    async def scenario():
        async def answer(ws):
            async for text in ws:
                request = json.loads(text)
                await ws.send(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"x": "a" * MAX_REPLY}}))

        async with serve(answer, "127.0.0.1", 0, max_size=None) as server:
            url = f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
            with pytest.raises(Unavailable, match=f"a reply over {MAX_REPLY} bytes"):  # its hello's answer
                await AsyncClient("alice", key="agk_unused", url=url, timeout=30).connect()

            def blocking():
                with RemoteClient(url, timeout=30).connect() as client:
                    with pytest.raises(Unavailable, match=f"a reply over {MAX_REPLY} bytes"):
                        client.call("hub.status")

            await asyncio.get_running_loop().run_in_executor(None, blocking)

    asyncio.run(scenario())


def test_a_request_the_hub_refuses_by_its_size_is_not_called_a_reply_too_large(remote, monkeypatch):
    """The hub closes a remote connection whose request is past its frame limit (1009); the client echoes
    the close, and took its own echo for having refused a reply past 16 MiB (a review). Here a client out of
    step with the hub's limit sends one."""
    from agorad.surface import protocol
    from agorad.surface.wsclient import RemoteClient

    keys = add(remote, "alice")
    padding = "x" * (protocol.MAX_FRAME + 1)
    monkeypatch.setattr(protocol, "MAX_FRAME", 4 * protocol.MAX_FRAME)

    async def over_async():
        async with AsyncClient("alice", key=keys["alice"], url=remote.url) as alice:
            await alice.hub.status(padding=padding)

    for attempt in (lambda: asyncio.run(over_async()),
                    lambda: RemoteClient(remote.url).connect().call("hub.status", padding=padding)):
        with pytest.raises(Unavailable) as caught:
            attempt()
        assert "a reply over" not in str(caught.value) and "1009" in str(caught.value), caught.value


def test_a_wss_url_for_a_plain_port_says_the_port_is_ws(remote):
    keys = add(remote, "alice")
    url = "wss://" + remote.url.removeprefix("ws://")

    async def over_async():
        await AsyncClient("alice", key=keys["alice"], url=url).connect()

    for attempt in (lambda: Client("alice", key=keys["alice"], url=url).connect(), lambda: asyncio.run(over_async())):
        with pytest.raises(Unavailable, match="did not answer in TLS .*is ws://") as caught:
            attempt()
        assert "no hub is answering" not in str(caught.value)


def test_an_untrusted_certificate_is_named_and_ends_a_runner(secure_remote, monkeypatch):
    """It was "no hub is answering at wss://...: [SSL: CERTIFICATE_VERIFY_FAILED] ...; is it started with agora
    up --listen", and a runner retried every 10 s for ever; a ws:// URL for the TLS port had the same hint (a
    review). The certificate is named with the way to trust it, and a runner ends as for a wrong key."""
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    key, url = secure_remote.keys["alice"], secure_remote.url

    async def over_async(at: str):
        await AsyncClient("alice", key=key, url=at).connect()

    for attempt in (lambda: Client("alice", key=key, url=url).connect(), lambda: asyncio.run(over_async(url))):
        with pytest.raises(Unavailable, match="certificate.*SSL_CERT_FILE") as caught:
            attempt()
        assert "no hub is answering" not in str(caught.value)
    plain = "ws://" + url.removeprefix("wss://")
    for attempt in (lambda: Client("alice", key=key, url=plain).connect(), lambda: asyncio.run(over_async(plain))):
        with pytest.raises(Unavailable, match="wss://") as caught:
            attempt()
        assert "no hub is answering" not in str(caught.value)

    runner = AgentRunner("alice", lambda message: None, key=key, url=url, reconnect_first=0.05, reconnect_cap=0.1)
    ended = []
    thread = threading.Thread(target=lambda: ended.append(_outcome(runner.run)), daemon=True)
    thread.start()
    thread.join(10)
    if thread.is_alive():
        runner.stop()
        thread.join(10)
    assert len(ended) == 1 and isinstance(ended[0], Unavailable) and "SSL_CERT_FILE" in str(ended[0]), ended
    assert runner.connections == 0


def _outcome(run):
    try:
        return run()
    except Exception as exc:  # noqa: BLE001 - the test looks at it
        return exc
