"""`agora mcp`'s tool errors against a real hub: each case's reason word, what happened, and a fix that fits it."""

from __future__ import annotations

import asyncio
import os

import pytest

from agorad.surface import settings
from tests.hubproc import Hub, stopped, wait_for, with_sitecustomize
from tests.mcpclient import doorbell_up, mcp_session, until

pytestmark = pytest.mark.timeout(90)

SHORT_TIMEOUT = 2  # the server's call timeout in these tests, so that a stopped hub is not waited on for 30 s


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def seated(hub):
    """The hub, with a seat alice."""
    hub.add_agent("alice")
    return hub


def short_timeout(tmp_path) -> dict:
    """The environment of a server whose hub calls time out after SHORT_TIMEOUT seconds."""
    inherited = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}
    return with_sitecustomize(inherited, tmp_path / "short-timeout",
                              f"from agora_mcp import connection\nconnection.CALL_TIMEOUT = {SHORT_TIMEOUT}\n")


def head(hub, channel: str = "commons") -> int:
    found, = [c for c in hub.call("channels.list")["channels"] if c["name"] == channel]
    return found["head"]


def test_a_send_the_hub_did_not_answer_in_time_may_have_been_stored_and_is_not_called_gone(seated, tmp_path):
    async def body():
        async with mcp_session(seated.home, "--as", "alice", env=short_timeout(tmp_path)) as alice:
            await alice.ok("check_inbox")  # connected: the send goes out on this connection
            with stopped(seated):
                sent = await alice.fails("send_message", target="commons", title="once")
                inbox = await alice.fails("check_inbox")  # a read: nothing in doubt, but not "start the hub"
            return sent, inbox
    sent, inbox = run(body())
    assert "unavailable: " in sent and f"did not answer messages.send within {SHORT_TIMEOUT} s" in sent, sent
    assert "the message may have been stored. Fix: before sending it again, see whether it was" in sent, sent
    assert "agora up" not in sent and "call the tool again" not in sent, sent
    assert "did not answer" in inbox and "agora status" in inbox and "agora up" not in inbox, inbox
    assert "may have been" not in inbox, inbox
    wait_for(lambda: head(seated) == 1, what="the send the hub took before it went on")  # it was stored


def test_a_send_cut_off_by_a_hub_killed_after_its_commit_may_have_been_stored(home):
    first = Hub(home).start()
    first.add_agent("alice")
    first.add_agent("bob")  # a send delivered to someone: its announcement is where the fault point is
    first.stop()
    crashing = Hub(home)
    crashing.env["AGORA_FAULT"] = "after-commit"  # SIGKILL between the send's COMMIT and its reply
    crashing.start()

    async def body():
        async with mcp_session(home, "--as", "alice") as alice:
            return await alice.fails("send_message", target="commons", title="once")
    try:
        sent = run(body())
    finally:
        crashing.stop()
    assert "unavailable: " in sent and "messages.send" in sent, sent
    assert "the message may have been stored. Fix: before sending it again, see whether it was" in sent, sent
    assert f"if the hub is down, start the hub with `agora up --home {home}`" in sent, sent
    assert "call the tool again" not in sent, sent
    again = Hub(home).start()
    try:
        assert head(again) == 1  # it was stored: sending it again would have posted it twice
    finally:
        again.stop()


def test_a_seat_that_is_not_registered_is_told_the_setup_command_that_registers_it(hub):
    async def body():
        async with mcp_session(hub.home, "--as", "nosuch") as nosuch:
            async def refused_wait():  # once the waiting connection has been refused too
                error, text = await nosuch("wait_for_messages", timeout_s=0.05)
                return error and text
            return await nosuch.fails("check_inbox"), await until(refused_wait, "the doorbell to be refused")
    inbox, wait = run(body())
    for text in inbox, wait:
        assert "not-found: the seat nosuch is not registered on the hub at " in text, text
        assert "Fix: register it with `agora setup nosuch`" in text, text
        assert "check_inbox lists refs" not in text, text


def test_a_receipt_on_another_seats_claim_is_left_to_its_owner_and_a_non_member_keeps_the_member_fix(seated):
    seated.add_agent("bob")
    seated.call("channels.create", channel="ops")  # the operator's channel: neither seat is a member

    async def body():
        async with mcp_session(seated.home, "--as", "alice") as alice, \
                mcp_session(seated.home, "--as", "bob") as bob:
            await alice.ok("claims", action="open", channel="commons", title="migrate")
            receipt = await bob.fails("claims", action="receipt", ref="claim:1", text="I did it")
            outside = await bob.fails("send_message", target="ops", title="hello")
            return receipt, outside
    receipt, outside = run(body())
    assert "forbidden: claim:1 is alice's claim: only its owner may write a receipt on it" in receipt, receipt
    assert "Fix: only alice may: tell them what you found" in receipt, receipt
    assert "not a member" not in receipt, receipt
    assert "forbidden: bob is not a member of ops" in outside and "Fix: the seat is not a member there" in outside


def test_an_ask_with_no_addressee_names_the_tools_field_not_the_clis_flag(seated):
    async def body():
        async with mcp_session(seated.home, "--as", "alice") as alice:
            return await alice.fails("send_message", target="commons", title="who?", ask=True)
    text = run(body())
    assert "invalid-params: an ask needs someone to answer it: an addressee in to, an @mention, or a DM." in text, text
    assert "--to" not in text, text
    assert head(seated) == 0


def test_a_body_over_the_frame_names_the_body_limit_to_get_under(seated):
    huge = "x" * (1 << 20)  # with the rest of the request, over the hub's 1 MiB frame

    async def body():
        async with mcp_session(seated.home, "--as", "alice") as alice:
            text = await alice.fails("send_message", target="commons", title="huge", body=huge)
            assert (await alice.ok("check_inbox")).startswith("owed 0")  # the server goes on as before
            return text
    text = run(body())
    usual = settings.MAX_BODY_KIB * 1024
    assert f"too-large: body is {1 << 20} bytes; a hub takes at most {usual} unless" in text, text
    assert "frame" not in text and "closing the connection" not in text, text
    assert "Fix: shorten it below the limit" in text, text
    assert head(seated) == 0


def test_a_hub_that_is_down_is_told_to_be_started_once(home):
    async def body():
        async with mcp_session(home, "--as", "alice") as alice:
            return await alice.fails("check_inbox"), await alice.fails("send_message", target="commons", title="t")
    for text in run(body()):
        assert "unavailable: no hub is answering on " in text, text
        assert text.count("agora up") == 1 and f"`agora up --home {home}`" in text, text
        assert "Fix: this server reconnects by itself, so call the tool again once the hub answers." in text, text


def test_a_change_refused_by_a_pause_is_left_for_the_resume_not_called_again(seated):
    seated.add_agent("bob")
    with seated.client() as op:
        op.call("hub.pause", reason="migration")

    async def body():
        async with mcp_session(seated.home, "--as", "alice") as alice:
            sent = await alice.fails("send_message", target="commons", title="t")
            opened = await alice.fails("claims", action="open", channel="commons", title="t")
            await doorbell_up(alice)
            with seated.client() as op:
                op.call("hub.resume")
            woke = await alice.ok("wait_for_messages", timeout_s=30)  # the resume's announcement is addressed to it
            return sent, opened, woke
    sent, opened, woke = run(body())
    for text in (sent, opened):
        assert "tool send_message: paused: the hub is paused (for " in text or "tool claims: paused: " in text, text
        assert "Fix: the operator paused the hub and calling again is refused until it resumes" in text, text
        assert "call again" not in text and "hub's log" not in text, text  # a refusal that lasts is no glitch
    assert woke.startswith("1 arrived") and "hub resumed after" in woke, woke
    assert head(seated) == 2  # the pause's and the resume's announcements, nothing of alice's


@pytest.mark.parametrize("tool, arguments, field", [
    ("claims", {"action": "receipt", "ref": "claim:1", "text": "y" * (1 << 20)}, "text"),
    ("send_message", {"target": "commons", "title": "t" * (1 << 20)}, "title"),
    ("heartbeat", {"task": "t" * (1 << 20)}, "task"),
])
def test_a_text_over_the_frame_is_refused_before_it_is_sent_naming_its_field(seated, tool, arguments, field):
    with seated.client("alice") as alice:
        alice.call("claims.open", channel="commons", title="work")

    async def body():
        async with mcp_session(seated.home, "--as", "alice") as alice:
            await alice.ok("check_inbox")
            return await alice.fails(tool, **arguments)
    text = run(body())
    assert f"too-large: {field} is " in text and "the hub takes at most 1048576 in one request" in text, text
    assert "closing the connection" not in text, text  # the hub never saw it: no words about the wire
    assert "Fix: shorten it below the limit" in text, text
    assert head(seated) == 0
