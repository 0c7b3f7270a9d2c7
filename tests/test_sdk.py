"""The SDK's clients against a real hub: every method by name, errors with their reason words,
pushes as iterators, Inbox.drain, and the examples under examples/ answering real messages."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agora_sdk import AsyncClient, Client
from agorad.runtime.methods import METHODS
from agorad.surface.errors import (AgoraError, InvalidParams, MethodNotFound, NotFound, TooLarge, Unauthorized,
                                   Unavailable)
from tests.hubproc import AGORA, wait_for
from tests.seats import seats, send, unread_refs

ROOT = Path(__file__).resolve().parent.parent


def test_every_hub_method_is_reachable_by_name(hub):
    hub.add_agent("bot")
    with Client("bot", home=hub.home) as bot, Client(home=hub.home) as operator:
        for name in sorted(METHODS):
            noun, verb = name.split(".")
            method = getattr(getattr(bot, noun), verb)
            assert method.method == name
            if name in ("hub.hello", "hub.pause"):
                continue  # each would change what the connection acts as, or the hub
            for client in (bot, operator):
                try:
                    getattr(getattr(client, noun), verb)()
                except MethodNotFound:
                    pytest.fail(f"{name} did not reach the hub's {name}")
                except AgoraError:
                    pass  # missing params, forbidden, ...: the hub answered that very method


def test_calls_by_name_and_by_call_agree_and_unknown_methods_say_so(hub):
    with seats(hub, "alice", "bot"):
        with Client("alice", home=hub.home) as alice:
            sent = alice.messages.send(target="@bot", title="hi", body="there")
            assert alice.call("messages.read", ref=sent["ref"])["body"] == "there"
            with pytest.raises(MethodNotFound) as caught:
                alice.messages.nope()
            assert caught.value.reason == "method-not-found"


@pytest.mark.parametrize("make, reason", [
    (lambda a: a.messages.send(target="@bob", title=""), "invalid-params"),
    (lambda a: a.messages.read(ref="not a ref"), "invalid-params"),
    (lambda a: a.messages.read(ref="nowhere#1"), "not-found"),
    (lambda a: a.agents.remove(agent="bob"), "forbidden"),
    (lambda a: a.inbox.ack(), "invalid-params"),
])
def test_errors_are_exceptions_carrying_the_reason_word(hub, make, reason):
    with seats(hub, "alice", "bob"):
        with Client("alice", home=hub.home) as alice:
            with pytest.raises(AgoraError) as caught:
                make(alice)
            assert caught.value.reason == reason
            assert alice.inbox.check()["unread"] == 0  # nothing changed, and the connection still works


def test_a_wrong_key_a_missing_key_and_no_hub(hub, home, monkeypatch):
    monkeypatch.delenv("AGORA_KEY", raising=False)
    hub.add_agent("bot")
    with pytest.raises(Unauthorized) as caught:
        Client("bot", key="agk_wrong", home=hub.home).connect()
    assert caught.value.reason == "unauthorized"
    with pytest.raises(Unauthorized, match="no key for ghost"):
        Client("ghost", home=hub.home)
    with pytest.raises(InvalidParams, match="is not a hub URL: it looks like ws://HOST:PORT/"):
        Client("bot", home=hub.home, url="http://example.invalid/")
    hub.stop()
    with pytest.raises(Unavailable) as caught:
        Client("bot", home=hub.home).connect()
    assert caught.value.reason == "unavailable"
    with pytest.raises(Unavailable):
        asyncio.run(AsyncClient("bot", home=hub.home).connect())


def test_the_key_comes_from_agora_key_when_set(hub, monkeypatch):
    key = hub.add_agent("bot")
    (hub.home / "keys" / "bot.key").unlink()
    monkeypatch.setenv("AGORA_KEY", key)
    with Client("bot", home=hub.home) as bot:
        assert bot.agents.heartbeat(status="idle")["agent"] == "bot"


def test_sync_pushes_are_a_public_iterator(hub):
    with seats(hub, "alice", "bot"):
        with Client("alice", home=hub.home) as alice, Client("bot", home=hub.home) as bot:
            bot.inbox.subscribe()
            for i in range(3):
                alice.messages.send(target="@bot", title=f"m{i}")
            pushed = [push["params"]["title"] for push, _ in zip(bot.notifications(timeout=5), range(3))]
            assert pushed == ["m0", "m1", "m2"]
            assert list(bot.notifications(timeout=0)) == []


def test_async_client_calls_overlap_and_pushes_are_an_async_iterator(hub):
    with seats(hub, "alice", "bot"):
        async def scenario():
            async with AsyncClient("alice", home=hub.home) as alice, AsyncClient("bot", home=hub.home) as bot:
                await bot.inbox.subscribe()
                sent = await asyncio.gather(*(alice.messages.send(target="@bot", title=f"m{i}") for i in range(5)))
                titles = []
                async for push in bot.notifications(timeout=5):
                    titles.append(push["params"]["title"])
                    if len(titles) == 5:
                        break
                with pytest.raises(NotFound) as caught:
                    await bot.messages.read(ref="nowhere#1")
                assert caught.value.reason == "not-found"
                assert await bot.next_notification(timeout=0.01) is None
                return [s["seq"] for s in sent], titles

        seqs, titles = asyncio.run(scenario())
        assert seqs == [1, 2, 3, 4, 5]
        assert titles == [f"m{i}" for i in range(5)]


def test_an_async_client_learns_when_the_hub_goes_away(hub):
    hub.add_agent("bot")

    async def scenario():
        async with AsyncClient("bot", home=hub.home) as bot:
            await bot.inbox.subscribe()
            hub.stop()
            with pytest.raises(Unavailable, match="closed the connection"):
                await bot.next_notification(timeout=10)
            with pytest.raises(Unavailable):
                await bot.inbox.check()

    asyncio.run(scenario())


def test_an_async_client_connects_again_on_the_next_call_after_a_lost_connection_or_close(hub):
    """As Client does: it raised "went away: Broken pipe" at every call after a hub restart, and after close()
    (a review). The push reader still learns that the connection it subscribed on ended, once."""
    hub.add_agent("bot")

    async def scenario():
        bot = AsyncClient("bot", home=hub.home)
        await bot.inbox.subscribe()
        await asyncio.to_thread(hub.stop)
        with pytest.raises(Unavailable, match="closed the connection"):
            await bot.next_notification(timeout=10)
        await asyncio.to_thread(hub.start)
        assert (await bot.inbox.check())["unread"] == 0  # an agent's method: as the seat again
        await bot.close()
        assert (await bot.agents.get(agent="bot"))["agent"]["id"] == "bot"
        with pytest.raises(Unavailable, match="is closed"):  # the subscription went with the closed connection
            await bot.next_notification(timeout=10)
        await bot.close()

    asyncio.run(scenario())


def test_concurrent_first_calls_share_one_connection(hub):
    """Each connected, the second overwrote the first's connection, which leaked, and its call waited 30 s
    for an answer to its hello (a review)."""
    hub.add_agent("alice")

    async def scenario():
        alice = AsyncClient("alice", home=hub.home, timeout=5)
        status, shown = await asyncio.gather(alice.hub.status(), alice.agents.get(agent="alice"),
                                             return_exceptions=True)
        await alice.close()
        return status, shown

    status, shown = asyncio.run(scenario())
    assert isinstance(status, dict) and isinstance(shown, dict), (status, shown)
    assert status["home"] == str(hub.home) and shown["agent"]["id"] == "alice"


def test_the_push_reader_gets_the_hubs_reason_for_hanging_up_and_the_next_call_is_the_seats(hub):
    """The hub says why it closes a connection (an error of id null): both clients dropped it and said only
    "closed the connection" (a review), and the sync Client's next call went out without a hello, as nobody."""
    hub.add_agent("bot")
    revoked = "agent bot's key was replaced; this connection is closed"
    with Client("bot", home=hub.home) as bot:
        bot.inbox.subscribe()
        hub.call("agents.rekey", agent="bot")
        with pytest.raises(Unauthorized, match=revoked):
            bot.next_notification(timeout=10)
        assert bot.inbox.check()["unread"] == 0  # as the seat, with the key the rekey wrote

    async def scenario():
        async with AsyncClient("bot", home=hub.home) as abot:
            await abot.inbox.subscribe()
            await asyncio.to_thread(hub.call, "agents.rekey", agent="bot")
            with pytest.raises(Unauthorized, match=revoked):
                await abot.next_notification(timeout=10)
            return (await abot.inbox.check())["unread"]

    assert asyncio.run(scenario()) == 0


def test_a_seats_client_says_hello_again_after_a_hub_restart_and_a_rekey(hub):
    """The call that finds the connection gone raises Unavailable; the next connects as the seat again. It
    reconnected without a hello: as the operator, refused every seat method as `unauthorized` and allowed the
    operator's (a review)."""
    hub.add_agent("bot")
    with Client("bot", home=hub.home) as bot:
        bot.inbox.check()
        hub.stop()
        hub.start()
        with pytest.raises(Unavailable):
            bot.inbox.check()
        assert bot.inbox.check()["unread"] == 0  # an agent's method: as the seat again
        with pytest.raises(AgoraError) as refused:  # the operator's alone: refused to the seat it is again
            bot.call("steward.report")
        assert refused.value.reason == "forbidden"
        subprocess.run([AGORA, "--home", str(hub.home), "agent", "rekey", "bot"], capture_output=True, check=True,
                       timeout=30)
        with pytest.raises((Unauthorized, Unavailable)):  # the rekey revoked the old key's connection
            bot.inbox.check()
        assert bot.inbox.check()["unread"] == 0  # with the new key, read from the key file again


def test_a_client_reading_its_key_file_follows_its_seat_through_a_rename_and_a_rekey(hub):
    """The rename moved the key file to the new id; a client read the old id's, found none, and said hello
    with the replaced key (a review). It asks the hub where its id went, as the CLI does."""
    def rename_and_rekey(old: str, new: str) -> None:
        hub.call("agents.rename", old=old, new=new, reason="a better name")
        hub.call("agents.rekey", agent=new)

    hub.add_agent("sync1")
    with Client("sync1", home=hub.home) as bot:
        bot.inbox.check()
        rename_and_rekey("sync1", "sync2")
        with pytest.raises((Unauthorized, Unavailable)):
            bot.inbox.check()
        assert bot.agents.get(agent="sync2")["agent"]["id"] == "sync2"

    hub.add_agent("async1")

    async def scenario():
        async with AsyncClient("async1", home=hub.home) as abot:
            await asyncio.to_thread(rename_and_rekey, "async1", "async2")
            with pytest.raises(Unauthorized):  # the rekey revoked the connection it was on
                await abot.next_notification(timeout=10)
            return (await abot.agents.get(agent="async2"))["agent"]["id"]  # again, with async2's key file

    assert asyncio.run(scenario()) == "async2"


def test_pushes_read_before_a_failed_call_are_still_given_after_it(hub):
    """Dropping a connection after a failed call dropped the pushes it had read (a review of the change above)."""
    with seats(hub, "alice", "bot") as s:
        with Client("bot", home=hub.home) as bot:
            bot.inbox.subscribe()
            sent = [send(s["alice"], "@bot", f"m{n}")["ref"] for n in range(2)]
            assert bot.call("agents.heartbeat")  # its reply comes after both pushes, which it reads and keeps
            subprocess.run([AGORA, "--home", str(hub.home), "agent", "rekey", "bot"], capture_output=True,
                           check=True, timeout=30)
            with pytest.raises((Unauthorized, Unavailable)):
                bot.call("agents.heartbeat")
            got = [bot.next_notification(timeout=5) for _ in sent]
            assert [f"{p['params']['channel']}#{p['params']['seq']}" for p in got] == sent
            with pytest.raises(Unavailable):  # then the dropped connection's end, as before
                bot.next_notification(timeout=1)


def test_drain_returns_what_waits_owed_first_next_turn_included_and_acks_nothing(hub):
    with seats(hub, "alice", "bot") as s:
        chatter = send(s["alice"], "commons", "chatter")["ref"]
        quiet = send(s["alice"], "@bot", "for later", body="no hurry", urgency="next_turn")["ref"]
        ask = send(s["alice"], "@bot", "please review", body="diff", ask=True)["ref"]
        with Client("bot", home=hub.home) as bot:
            drained = bot.inbox.drain()
            assert [m.ref for m in drained] == [ask, chatter, quiet]  # owed first, then by channel
            assert [m.owed for m in drained] == [True, False, False]
            assert drained[2].next_turn and drained[2].body == "no hurry"
            assert "<<<AGORA-MESSAGE " in drained[0].fenced and drained[0].body == "diff"
            assert bot.inbox.check()["unread"] == 3  # nothing acked
            drained[2].ack()
            drained[0].reply("looks fine")
            assert [m.ref for m in bot.inbox.drain()] == [chatter, ask]  # the ask: unread still, owed no more
            assert bot.owed.list()["i_owe"] == []

            async def drain_async():
                async with AsyncClient("bot", home=hub.home) as abot:
                    return [m.ref for m in await abot.inbox.drain(limit=5)]

            assert asyncio.run(drain_async()) == [chatter, ask]


def test_an_acked_ask_still_owed_is_drained_at_the_front(hub):
    with seats(hub, "alice", "bot") as s:
        ask = send(s["alice"], "@bot", "owed", ask=True)["ref"]
        s["bot"].call("inbox.ack", ref=ask)
        later = send(s["alice"], "commons", "later")["ref"]
        with Client("bot", home=hub.home) as bot:
            assert [(m.ref, m.owed) for m in bot.inbox.drain()] == [(ask, True), (later, False)]


def test_agents_every_lists_every_page_on_either_client(hub):
    """agents.list ends a page past 12 MiB of JSON (domain/roster.py), and every() asks for the rest: 90
    profiles of 64 KiB of UTF-8 outside the BMP are 17.7 MB of JSON, more than the async client reads."""
    for n in range(90):
        hub.call("kb.put", key=f"profile/seat-{n:02d}", value="\U0001F600" * 16_384)
    hub.add_agent("bot")
    ids = ["bot", *(f"seat-{n:02d}" for n in range(90))]
    with Client("bot", home=hub.home) as bot:
        assert bot.agents.list()["more"]
        assert [a["id"] for a in bot.agents.every()] == ids
        assert [a["unread"] for a in bot.agents.every(counts=True)] == [0] * len(ids)

    async def every_async():
        async with AsyncClient("bot", home=hub.home) as abot:
            return [a["id"] for a in await abot.agents.every()]

    assert asyncio.run(every_async()) == ids


def example(hub, name: str, agent: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(ROOT / "examples" / name), agent], cwd=ROOT,
                            env={**hub.env, "AGORA_HOME": str(hub.home)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def stop_example(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err


def test_the_echo_example_answers_what_is_addressed_to_it(hub):
    """...and not the hub's own notices, which are addressed to every seat (a pause, a resume)."""
    with seats(hub, "alice", "echo") as s:
        hub.call("hub.pause", reason="maintenance")
        hub.call("hub.resume")
        s["alice"].call("inbox.ack", all=True)
        send(s["alice"], "commons", "channel chatter")
        ping = send(s["alice"], "@echo", "ping", body="hello there")["ref"]
        proc = example(hub, "echo_agent.py", "echo")
        try:
            wait_for(lambda: s["alice"].call("inbox.check")["unread"] == 1, what="the echo")
            wait_for(lambda: unread_refs(s["echo"]) == [], what="all four messages acked")
        finally:
            stop_example(proc)
        answer = s["alice"].call("inbox.check")["channels"][0]["messages"][0]
        read = s["alice"].call("messages.read", ref=answer["ref"])
        assert (read["title"], read["body"], read["reply_to_ref"]) == ("re: ping", "echo: hello there", ping)
        senders = [s["alice"].call("messages.read", ref=f"commons#{seq}")["sender"] for seq in (1, 2, 3)]
        assert senders == ["agora-hub", "agora-hub", "alice"]
        with pytest.raises(NotFound):
            s["alice"].call("messages.read", ref="commons#4")  # the echo answered neither notice



def test_two_echo_examples_answer_a_ping_once_and_stop(hub):
    """A review: two echoes answered each other's answers, twenty a minute each, for as long as both ran."""
    with seats(hub, "alice", "e1", "e2") as s:
        procs = [example(hub, "echo_agent.py", agent) for agent in ("e1", "e2")]
        try:
            send(s["e1"], "@e2", "ping", body="hello")  # from e1's other connection: e1's runner has it not
            wait_for(lambda: unread_refs(s["e2"]) == [], what="e2 to answer the ping and ack it")
            wait_for(lambda: unread_refs(s["e1"]) == [], what="e1 to handle the answer and ack it")  # (after any reply)
        finally:
            for proc in procs:
                stop_example(proc)
        assert s["e1"].call("messages.read", ref="dm:e1--e2#2")["title"] == "re: ping"
        with pytest.raises(NotFound):
            s["e1"].call("messages.read", ref="dm:e1--e2#3")  # e1 did not answer the answer


def test_the_reviewer_example_answers_asks_and_discharges_the_debt(hub):
    with seats(hub, "alice", "reviewer") as s:
        ask = send(s["alice"], "@reviewer", "review this", body="x = 1\n# TODO: test", ask=True)["ref"]
        send(s["alice"], "@reviewer", "fyi", body="not an ask")
        assert [d["ref"] for d in s["reviewer"].call("owed.list")["i_owe"]] == [ask]
        proc = example(hub, "reviewer_agent.py", "reviewer")
        try:
            wait_for(lambda: s["reviewer"].call("owed.list")["i_owe"] == [], what="the debt discharged")
            wait_for(lambda: unread_refs(s["reviewer"]) == [], what="both messages acked")
        finally:
            stop_example(proc)
        replies = s["alice"].call("inbox.check")["channels"][0]["messages"]
        assert len(replies) == 1
        read = s["alice"].call("messages.read", ref=replies[0]["ref"])
        assert (read["reply_to_ref"], read["body"]) == (ask, "changes requested: 2 line(s), 1 TODO(s)")
        assert s["alice"].call("owed.list")["owed_to_me"] == []


@pytest.mark.parametrize("wire", ["socket", "url"])
def test_an_async_client_reads_the_largest_body_whose_reply_is_bigger_than_a_request_may_be(home, wire):
    """A reply may exceed a request's 1 MiB frame (protocol.MAX_REPLY): read carries the body twice, and each
    control character is six bytes of JSON. At the body ceiling that is about 1.5 MiB; the async client
    (and so AgentRunner) used to refuse it as an oversized frame on either wire, the sync one did not."""
    from tests.hubproc import Hub

    running = Hub(home, "--max-body-kib", "128", "--listen", "127.0.0.1:0").start()
    try:
        keys = {agent: running.add_agent(agent, liveness_mode="always-on") for agent in ("alice", "bob")}
        body = "\x01" * (128 * 1024)
        with Client("alice", key=keys["alice"], home=running.home) as alice:
            ref = alice.messages.send(target="@bob", title="a large log", body=body)["ref"]
        where = {"home": running.home} if wire == "socket" else {"url": running.call("hub.status")["remote"]}

        async def read() -> dict:
            async with AsyncClient("bob", key=keys["bob"], **where) as bob:
                return await bob.messages.read(ref=ref)

        message = asyncio.run(read())
        assert message["body"] == body
    finally:
        running.stop()


@pytest.mark.parametrize("wire", ["socket", "url"])
def test_an_async_request_over_the_frame_limit_is_refused_before_it_is_sent_and_the_connection_kept(remote, wire):
    """The sync Client refuses a request the hub would refuse by its size (protocol.encode_request); the async
    one sent it, the hub hung up, and a runner's handler replying 2 MiB was run again at every reconnect."""
    where = {"home": remote.home} if wire == "socket" else {"url": remote.url}

    async def scenario():
        async with AsyncClient("alice", key=remote.keys["alice"], **where) as alice, \
                AsyncClient("bob", key=remote.keys["bob"], **where) as bob:
            await alice.inbox.subscribe()
            with pytest.raises(TooLarge, match="messages.send would be [0-9]+ bytes"):
                await alice.messages.send(target="@bob", title="big", body="y" * (2 << 20))
            sent = await bob.messages.send(target="@alice", title="small")
            push = await alice.next_notification(timeout=10)  # the subscription's connection is the same one
            return push["params"]["seq"] == sent["seq"]

    assert asyncio.run(scenario())


def test_a_call_made_while_the_connection_is_being_lost_does_not_strand_the_one_in_flight(hub, monkeypatch):
    """The hub hangs up with a call in flight (here: a request over the 1 MiB frame limit, which this client
    is made to send, answered with an error of id null, then the end). A second call made while the reader is
    still closing the connection must not strand the first: it used to reconnect and cancel the reader before
    the reader failed the first call, which then waited forever (timeout=None). It connects again, once the
    reader has failed the calls in flight."""
    from agorad.surface import protocol
    from agorad.surface.protocol import MAX_FRAME

    monkeypatch.setattr(protocol, "MAX_FRAME", 4 * MAX_FRAME)  # a client out of step with the hub's limit

    async def scenario():
        client = AsyncClient(home=hub.home, timeout=None)
        await client.connect()
        first = asyncio.ensure_future(client.call("hub.status", padding="x" * MAX_FRAME))

        async def second():
            while client._wire is not None:  # the reader has seen the end and is closing the connection
                await asyncio.sleep(0)
            return await client.call("hub.status")

        outcomes = await asyncio.wait_for(asyncio.gather(first, second(), return_exceptions=True), 10)
        await client.close()
        return outcomes

    first, second = asyncio.run(scenario())
    assert isinstance(first, AgoraError) and second["home"] == str(hub.home), (first, second)
