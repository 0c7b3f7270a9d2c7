"""AgentRunner against a real hub: ack after the handler, a runner killed mid-handler, a hub
restart, graceful stop, heartbeats, the loop guard. Waits are on events and files, never sleeps."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agora_sdk import AgentRunner, Client, LoopGuardTripped, NotFound
from tests.hubproc import wait_for
from tests.seats import seats, send, unread_refs

ROOT = Path(__file__).resolve().parent.parent


STARTED: list["Running"] = []


@pytest.fixture(autouse=True)
def no_runner_outlives_its_test():
    """A test that failed half-way leaves no runner knocking at a hub that is gone."""
    yield
    while STARTED:
        running = STARTED.pop()
        running.runner.stop()
        running.thread.join(5)


class Running:
    """A runner on a thread of the test process."""

    def __init__(self, hub, agent: str, handler, **options):
        self.runner = AgentRunner(agent, handler, home=hub.home, **options)
        STARTED.append(self)
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self.runner.ready.wait(10), "the runner never finished its first catch-up"

    def _run(self) -> None:
        try:
            self.runner.run()
        except BaseException as exc:  # noqa: BLE001 - shown by stop()
            self.errors.append(exc)

    def stop(self) -> None:
        self.runner.stop()
        self.thread.join(10)
        assert not self.thread.is_alive() and self.errors == []


class Gate:
    """A handler that records each message and waits until the test opens its gate."""

    def __init__(self):
        self.entered = threading.Event()
        self.release = threading.Event()
        self.seen: list[str] = []

    def __call__(self, message) -> None:
        self.seen.append(message.ref)
        self.entered.set()
        assert self.release.wait(10)


def in_handler(hub, sender, title: str) -> tuple[Gate, Running, str]:
    """A runner for `bot` whose handler holds a fresh message from `sender` until its gate opens."""
    gate = Gate()
    running = Running(hub, "bot", gate)
    ref = send(sender, "@bot", title)["ref"]
    assert gate.entered.wait(10)
    return gate, running, ref


def status_of(hub, agent: str) -> tuple[str, str | None]:
    shown = hub.call("agents.get", agent=agent)["agent"]
    return shown["status"], shown["task"]


def test_the_ack_comes_only_after_the_handler_returns_and_heartbeats_show_the_work(hub):
    with seats(hub, "alice", "bot") as s:
        gate, running, ref = in_handler(hub, s["alice"], "review #12")
        assert unread_refs(s["bot"]) == [ref]  # delivered and in hand, not acked
        wait_for(lambda: status_of(hub, "bot") == ("working", f"{ref}: review #12"), what="the working heartbeat")
        gate.release.set()
        wait_for(lambda: unread_refs(s["bot"]) == [], what="the ack")
        wait_for(lambda: status_of(hub, "bot") == ("idle", None), what="the idle heartbeat")
        running.stop()
        assert gate.seen == [ref]


def test_catch_up_handles_what_waited_then_pushes_each_message_once(hub):
    with seats(hub, "alice", "bot") as s:
        before = [send(s["alice"], "@bot", f"before {i}")["ref"] for i in range(3)]
        seen = []
        running = Running(hub, "bot", lambda message: seen.append(message.ref))
        assert seen == before  # the catch-up ran before `ready`
        after = [send(s["alice"], "commons", f"after {i}")["ref"] for i in range(3)]
        wait_for(lambda: len(seen) == 6, what="the pushed messages")
        running.stop()
        assert seen == before + after
        assert unread_refs(s["bot"]) == []


def test_a_runner_killed_mid_handler_leaves_the_message_for_the_next_one(hub, tmp_path):
    with seats(hub, "alice", "bot") as s:
        first, record, _, ref = held_in_handler(hub, s["alice"], tmp_path, "survive a crash")
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        assert unread_refs(s["bot"]) == [ref]  # nothing acked: the message is not buried
        second = runner_process(hub, "bot", "reply", record)
        wait_for(lambda: f"done {ref}" in record.read_text(), what="the next runner to handle it")
        wait_for(lambda: unread_refs(s["bot"]) == [], what="the ack")
        second.send_signal(signal.SIGTERM)
        assert second.wait(10) == 0
        assert record.read_text().splitlines() == [f"started {ref}", f"started {ref}", f"done {ref}"]
        assert [m["title"] for m in s["alice"].call("inbox.check")["channels"][0]["messages"]] == ["re: survive a crash"]


def test_sigterm_lets_the_running_handler_finish_and_ack(hub, tmp_path):
    with seats(hub, "alice", "bot") as s:
        proc, record, gate, ref = held_in_handler(hub, s["alice"], tmp_path, "finish me")
        proc.send_signal(signal.SIGTERM)
        wait_for(lambda: "stopping once the running handler returns" in (tmp_path / "stderr").read_text(),
                 what="the runner to take the signal")
        assert proc.poll() is None and unread_refs(s["bot"]) == [ref]  # still in the handler, which waits for the gate
        gate.write_text("go")
        assert proc.wait(10) == 0
        assert record.read_text().splitlines() == [f"started {ref}", f"done {ref}"]
        assert unread_refs(s["bot"]) == []
        assert status_of(hub, "bot") == ("idle", None)


def test_stop_finishes_the_current_handler_acks_it_and_leaves_the_rest(hub):
    with seats(hub, "alice", "bot") as s:
        gate, running, first = in_handler(hub, s["alice"], "in hand")
        second = send(s["alice"], "@bot", "next")["ref"]
        running.runner.stop()
        wait_for(lambda: running.runner.stopping, what="the runner to take the stop")
        assert running.thread.is_alive() and unread_refs(s["bot"]) == [first, second]  # still in the handler
        gate.release.set()
        running.thread.join(10)
        assert not running.thread.is_alive() and running.errors == []
        assert gate.seen == [first]
        assert unread_refs(s["bot"]) == [second]  # the next one waits for the next runner


def test_a_hub_restart_is_survived_and_what_arrived_meanwhile_is_handled_once(hub):
    with seats(hub, "alice", "bot") as s:
        seen = []
        running = Running(hub, "bot", lambda message: seen.append(message.ref), reconnect_first=0.05)
        one = send(s["alice"], "@bot", "one")["ref"]
        wait_for(lambda: seen == [one], what="the first message")
    hub.stop()
    hub.start()
    with Client("alice", home=hub.home) as alice:
        meanwhile = [alice.messages.send(target="@bot", title=f"meanwhile {i}")["ref"] for i in range(3)]
        wait_for(lambda: len(seen) == 4, what="the runner to reconnect and catch up")
        later = alice.messages.send(target="@bot", title="later")["ref"]
        wait_for(lambda: len(seen) == 5, what="the push after the reconnect")
    running.stop()
    assert seen == [one, *meanwhile, later]
    assert running.runner.connections == 2
    with Client("bot", home=hub.home) as bot:
        assert bot.inbox.check()["unread"] == 0


def test_an_ack_lost_with_the_hub_is_made_again_without_running_the_handler_again(hub):
    with seats(hub, "alice", "bot") as s:
        seen = []

        def handle(message):
            seen.append(message.ref)
            hub.stop()  # the hub goes away after the handler's work and before its ack

        running = Running(hub, "bot", handle, reconnect_first=0.05)
        ref = send(s["alice"], "@bot", "last words")["ref"]
        wait_for(lambda: hub.proc.poll() is not None, what="the handler to stop the hub")
    hub.start()
    with Client("bot", home=hub.home) as bot:
        wait_for(lambda: bot.inbox.check()["unread"] == 0, what="the ack after the reconnect")
    running.stop()
    assert seen == [ref] and running.runner.connections == 2


def test_a_failing_handler_is_reported_and_its_message_left_unread(hub):
    with seats(hub, "alice", "bot") as s:
        def handle(message):
            if message.title == "bad":
                raise ValueError("cannot parse")

        running = Running(hub, "bot", handle)
        bad = send(s["alice"], "@bot", "bad")["ref"]
        good = send(s["alice"], "@bot", "good")["ref"]
        wait_for(lambda: unread_refs(s["bot"]) == [bad], what="the good one acked")
        status, task = status_of(hub, "bot")
        assert (status, task) == ("idle", None)  # the next message's success replaced the report
        running.stop()
        assert running.runner.failed == {bad}
        assert "handler failed on " + bad in running.runner.last_error


def test_failures_filling_the_catch_ups_listing_do_not_hide_the_messages_after_them(hub, monkeypatch):
    """Failed messages stay unread, oldest first: with DRAIN_LIMIT of them, the catch-up's inbox check listed
    nothing else and stopped, and later unread mail waited for a restart (a review: 200 failures, 3 good ones
    never handled). Here the limit is 3."""
    from agorad.surface import settings

    monkeypatch.setattr(settings, "DRAIN_LIMIT", 3)
    with seats(hub, "alice", "bot") as s:
        bad = [send(s["alice"], "@bot", "bad")["ref"] for _ in range(3)]
        good = [send(s["alice"], "@bot", f"good {n}")["ref"] for n in range(2)]
        handled = []

        def handle(message):
            if message.title == "bad":
                raise ValueError("cannot parse")
            handled.append(message.ref)

        running = Running(hub, "bot", handle)
        wait_for(lambda: unread_refs(s["bot"]) == bad, what="the good ones handled and acked")
        running.stop()
        assert handled == good and running.runner.failed == set(bad)


def test_while_a_message_is_held_the_seat_shows_its_task_after_handling_others(hub):
    """A message handled while another is held (the hub's pause notice, a note) left its own finished task
    shown for the whole pause, where the docs promise the held message's."""
    with seats(hub, "boss", "bot") as s:
        def handle(message):
            if message.title.startswith("do:"):
                message.hub.messages.send(target="commons", title=f"doing: {message.title}")

        running = Running(hub, "bot", handle)
        ask = send(s["boss"], "@bot", "do: roll back")["ref"]
        wait_for(lambda: unread_refs(s["bot"]) == [], what="the first message, handled")
        hub.call("hub.pause", reason="review", operator_seats=["boss"])
        held = send(s["boss"], "@bot", "do: roll forward")["ref"]
        wait_for(lambda: set(running.runner.held) == {held}, what="the refused handler, held")
        send(s["boss"], "@bot", "fyi: no rush")
        wait_for(lambda: unread_refs(s["bot"]) == [held], what="the note, handled")
        wait_for(lambda: status_of(hub, "bot") == ("working", f"{held}: do: roll forward"),
                 what="the held message's task shown again")
        assert ask != held
        running.stop()


def test_a_handler_refused_by_a_pause_is_held_and_handled_again_after_the_resume(hub):
    """The operator's seat may DM the runner during a pause, but the handler's post to commons is
    refused with `paused`: that is not a failure. The message stays unread and no error is shown;
    the resume's announcement wakes the runner, which hands the message over again."""
    with seats(hub, "boss", "bot") as s:
        attempts = []

        def handle(message):
            if message.channel.startswith("dm:"):
                attempts.append(message.ref)
                message.hub.messages.send(target="commons", title=f"doing: {message.title}")

        running = Running(hub, "bot", handle)
        hub.call("hub.pause", reason="review", operator_seats=["boss"])
        ask = send(s["boss"], "@bot", "roll back")["ref"]
        wait_for(lambda: attempts == [ask] and set(running.runner.held) == {ask}, what="the refused handler, held")
        assert unread_refs(s["bot"]) == [ask] and running.runner.failed == set()
        assert status_of(hub, "bot")[0] != "error"
        hub.call("hub.resume")
        wait_for(lambda: unread_refs(s["bot"]) == [] and attempts == [ask, ask], what="the held message, handled after the resume")
        assert running.runner.held == {}
        posts = s["boss"].call("inbox.check")["channels"]
        assert any(m["title"] == "doing: roll back" for channel in posts for m in channel["messages"])
        running.stop()


def test_a_handler_sending_past_the_frame_limit_fails_once_and_the_connection_stays(hub):
    """Its request was sent, the hub hung up, and the runner reconnected and ran the handler again without
    end (21 times in 6 s, a review). It is refused before it is sent, as by the sync Client: the handler
    fails, once."""
    with seats(hub, "alice", "bot") as s:
        calls = []

        def handle(message):
            calls.append(message.ref)
            if message.title == "big":
                message.reply("y" * (2 << 20))

        running = Running(hub, "bot", handle, reconnect_first=0.05)
        big = send(s["alice"], "@bot", "big")["ref"]
        wait_for(lambda: running.runner.last_error is not None, what="the report")
        assert running.runner.last_error.startswith(f"handler failed on {big}: TooLarge: messages.send would be")
        assert status_of(hub, "bot")[0] == "error"
        small = send(s["alice"], "@bot", "small")["ref"]
        wait_for(lambda: unread_refs(s["bot"]) == [big], what="the next message, handled")
        running.stop()
        assert calls == [big, small] and running.runner.connections == 1


def test_a_handler_whose_own_client_finds_no_hub_fails_and_is_not_run_again(hub, tmp_path):
    """Any Unavailable out of a handler was taken for the runner's hub going away: the runner reconnected and
    ran the handler again, without end, though its own connection was fine (a review)."""
    with seats(hub, "alice", "bot") as s:
        calls = []

        def handle(message):
            calls.append(message.ref)
            Client(home=tmp_path / "no-hub").hub.status()  # another hub, which is not there

        running = Running(hub, "bot", handle, reconnect_first=0.05)
        ref = send(s["alice"], "@bot", "ask elsewhere")["ref"]
        wait_for(lambda: running.runner.last_error is not None, what="the report")
        assert running.runner.last_error.startswith(f"handler failed on {ref}: Unavailable: no hub is answering")
        assert unread_refs(s["bot"]) == [ref] and status_of(hub, "bot")[0] == "error"
        running.stop()
        assert calls == [ref] and running.runner.connections == 1


def test_a_message_that_cannot_be_read_fails_alone(hub):
    with seats(hub, "alice", "bot") as s:
        seen = []
        running = Running(hub, "bot", lambda message: seen.append(message.ref))
        send(s["alice"], "commons", "one")
        wait_for(lambda: seen and status_of(hub, "bot") == ("idle", None), what="the first message handled")
        # A push for a message the seat cannot read (as after leaving its channel): handed to the runner directly.
        asyncio.run_coroutine_threadsafe(running.runner._handle("commons#99", [], 99), running.runner._loop).result(10)
        assert running.runner.failed == {"commons#99"}
        assert running.runner.last_error.startswith("cannot read commons#99: not-found")
        assert status_of(hub, "bot")[0] == "error"
        two = send(s["alice"], "commons", "two")["ref"]
        wait_for(lambda: two in seen, what="the next message, handled as usual")
        running.stop()


def test_a_handler_that_leaves_the_channel_is_reported_and_the_runner_goes_on(hub):
    with seats(hub, "alice", "bot") as s:
        seen = []

        def handle(message):
            seen.append(message.ref)
            if message.title == "leave":
                message.hub.channels.leave(channel=message.channel)

        hub.call("channels.create", channel="ops")
        for seat in s.values():
            seat.call("channels.join", channel="ops")
        running = Running(hub, "bot", handle)
        left = send(s["alice"], "ops", "leave")["ref"]
        wait_for(lambda: running.runner.last_error is not None, what="the report")
        assert running.runner.last_error.startswith(f"cannot ack {left}: forbidden")
        dm = send(s["alice"], "@bot", "still there?")["ref"]
        wait_for(lambda: seen == [left, dm], what="the next message, handled as usual")
        running.stop()


class ManualClock:
    """The loop guard's clock, moved by the test: a throttled send waits until advance() passes it."""

    def __init__(self):
        self.now = 0.0
        self.sleeping = threading.Event()
        self._waiters: list[tuple[float, asyncio.Future]] = []
        self._lock = threading.Lock()

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        future = asyncio.get_running_loop().create_future()
        with self._lock:
            self._waiters.append((self.now + seconds, future))
        self.sleeping.set()
        await future

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds
            due = [w for w in self._waiters if w[0] <= self.now]
            self._waiters = [w for w in self._waiters if w[0] > self.now]
        for _, future in due:
            future.get_loop().call_soon_threadsafe(future.set_result, None)


def test_heartbeats_go_on_after_the_hub_stalled_past_the_call_timeout(hub, caplog):
    """A heartbeat the hub did not answer in time (SIGSTOP past the call timeout) ended the steady heartbeats
    for the rest of the connection, silently: the seat went dormant while the runner still handled messages
    (a review). The connection is given up, as the sync Client does on a timeout, and made again."""
    from tests.hubproc import stopped

    hub.add_agent("bot")
    # The shortest interval the hub takes (1 s) and a short call timeout: the stall lasts about 1.5 s, not 30.
    running = Running(hub, "bot", lambda message: None, heartbeat=1, timeout=0.5, reconnect_first=0.05)
    with stopped(hub):
        wait_for(lambda: "did not answer agents.heartbeat" in caplog.text, what="the heartbeat to time out")
    wait_for(lambda: running.runner.connections == 2, what="the runner to connect again")
    for _ in range(2):  # the reconnect's own heartbeat may be the first, not the second
        now = hub.advance(5)  # the hub's clock: a heartbeat stored after this shows it
        wait_for(lambda: hub.call("agents.get", agent="bot")["agent"]["last_seen"] >= now, what="a steady heartbeat")
    running.stop()


def test_a_storming_handler_is_throttled_and_reported_never_dropped(hub):
    with seats(hub, "alice", "bot") as s:
        clock = ManualClock()

        def storm(message):
            for i in range(3):
                message.hub.messages.send(target="commons", title=f"storm {i}")

        running = Running(hub, "bot", storm, max_sends=2, window=60, clock=clock)
        ref = send(s["alice"], "@bot", "go")["ref"]
        assert clock.sleeping.wait(10)  # the third send is held
        status, task = status_of(hub, "bot")
        assert status == "error" and task.startswith("loop guard: more than 2 sends within 60s")
        assert unread_refs(s["bot"]) == [ref]
        titles = lambda: [m["title"] for c in s["alice"].call("inbox.check")["channels"] for m in c["messages"]]
        assert titles() == ["storm 0", "storm 1"]
        clock.advance(60)
        wait_for(lambda: titles() == ["storm 0", "storm 1", "storm 2"], what="the held send")
        wait_for(lambda: unread_refs(s["bot"]) == [], what="the ack")
        running.stop()
        assert "loop guard" in running.runner.last_error


def test_two_runners_answering_each_other_are_held_by_the_guard(hub):
    with seats(hub, "a", "b") as s:
        clocks = {"a": ManualClock(), "b": ManualClock()}
        runners = {agent: Running(hub, agent, lambda message: message.reply("and you?"), max_sends=3, window=60,
                                  clock=clocks[agent]) for agent in ("a", "b")}
        send(s["a"], "@b", "hello")  # from a's other connection: not a send of a's runner
        assert clocks["b"].sleeping.wait(10)  # b answered #1, #3, #5 and is held at its fourth answer, to #7
        status, task = status_of(hub, "b")
        assert status == "error" and task.startswith("loop guard: more than 3 sends within 60s")
        wait_for(lambda: status_of(hub, "a") == ("idle", None), what="a to wait for b's answer")
        assert s["a"].call("messages.read", ref="dm:a--b#7")["title"] == "re: re: re: re: re: re: hello"
        with pytest.raises(NotFound):
            s["a"].call("messages.read", ref="dm:a--b#8")  # nothing went out past the guard
        for agent in ("a", "b"):
            runners[agent].runner.stop()
        clocks["b"].advance(60)  # the held answer goes out, its handler returns and is acked, b ends
        for running in runners.values():
            running.thread.join(10)
            assert not running.thread.is_alive() and running.errors == []
        assert s["a"].call("messages.read", ref="dm:a--b#8")["sender"] == "b"


def test_a_handler_that_replies_to_itself_is_refused_and_reported(hub):
    with seats(hub, "alice", "bot") as s:
        refused = []

        def answer_self(message):
            mine = message.reply("first answer")
            for params in ({"target": message.channel, "reply_to": mine["ref"]}, {"target": "@bot"}):
                try:
                    message.hub.messages.send(title="again", **params)
                except LoopGuardTripped as exc:
                    refused.append(str(exc))

        running = Running(hub, "bot", answer_self)
        send(s["alice"], "@bot", "hello")
        wait_for(lambda: len(refused) == 2, what="the refusals")
        wait_for(lambda: unread_refs(s["bot"]) == [], what="the ack")
        status, task = status_of(hub, "bot")  # the report stays in view after the handler returned
        assert status == "error" and task == "loop guard: a DM from bot to itself was refused"
        running.stop()
        assert refused[0].startswith("loop guard: a reply to bot's own message dm:alice--bot#2 was refused")
        assert refused[1] == "loop guard: a DM from bot to itself was refused"
        assert [m["title"] for c in s["alice"].call("inbox.check")["channels"] for m in c["messages"]] == ["re: hello"]


def test_an_async_handler_awaits_its_calls(hub):
    with seats(hub, "alice", "bot") as s:
        async def handle(message):
            await message.reply(f"got {message.body}")

        running = Running(hub, "bot", handle)
        send(s["alice"], "@bot", "q", body="42")
        wait_for(lambda: s["alice"].call("inbox.check")["unread"] == 1, what="the reply")
        running.stop()


def test_a_wrong_key_ends_the_runner_with_unauthorized(hub):
    hub.add_agent("bot")
    runner = AgentRunner("bot", lambda message: None, home=hub.home, key="agk_wrong")
    from agorad.surface.errors import Unauthorized
    with pytest.raises(Unauthorized) as caught:
        runner.run()
    assert caught.value.reason == "unauthorized"


def test_after_a_rekey_a_runner_reading_its_key_file_goes_on_and_one_given_the_old_key_ends(hub):
    """The hub closes the old key's connections: a runner whose key came from the key file reconnects with
    the new one the rekey wrote and handles what comes next; one handed the key itself ends with
    Unauthorized (the old key opens nothing any more)."""
    from agorad.surface.errors import Unauthorized

    hub.add_agent("bot")
    fixed_key = hub.add_agent("fixed")
    seen = []
    running = Running(hub, "bot", lambda message: seen.append(message.title))
    handed = Running(hub, "fixed", lambda message: None, key=fixed_key)
    hub.call("agents.rekey", agent="bot")
    hub.call("agents.rekey", agent="fixed")
    with hub.client("sender", hub.add_agent("sender")) as sender:
        send(sender, "@bot", "after the rekey")
        wait_for(lambda: "after the rekey" in seen, what="the rekeyed runner to handle the message")
    assert running.runner.connections == 2
    handed.thread.join(10)
    assert not handed.thread.is_alive() and [type(e) for e in handed.errors] == [Unauthorized]
    assert "agent fixed's key was replaced" in str(handed.errors[0])  # the hub's word, not the hello's refusal
    STARTED.remove(handed)
    running.stop()


def test_a_rekey_under_a_running_handler_hands_its_message_over_again_after_the_reconnect(hub):
    """The handler's reply finds the connection revoked: not the handler's failure, as when the hub went away."""
    with seats(hub, "alice", "bot") as s:
        gate = Gate()

        def handle(message):
            gate(message)
            message.reply("done")

        running = Running(hub, "bot", handle)
        ref = send(s["alice"], "@bot", "rekeyed meanwhile")["ref"]
        assert gate.entered.wait(10)
        hub.call("agents.rekey", agent="bot")
        gate.release.set()
        with hub.client("bot") as bot:  # with the new key: the rekey closed the seat's other connection too
            wait_for(lambda: unread_refs(bot) == [], what="the message, handled again after the reconnect")
        running.stop()
        assert gate.seen == [ref, ref] and running.runner.failed == set() and running.runner.connections == 2


def test_a_runner_reading_its_key_file_follows_its_seat_through_a_rename_and_a_rekey(hub):
    """The rename moved the key file to the new id; the runner read the old id's, found none, and ended with
    Unauthorized at the rekey (a review). It asks the hub where its id went, as the CLI does."""
    hub.add_agent("ren1")
    seen = []
    running = Running(hub, "ren1", lambda message: seen.append(message.title))
    hub.call("agents.rename", old="ren1", new="ren2", reason="a better name")
    hub.call("agents.rekey", agent="ren2")
    with hub.client("sender", hub.add_agent("sender")) as sender:
        send(sender, "@ren2", "after the rename and the rekey")
        wait_for(lambda: "after the rename and the rekey" in seen, what="the renamed runner to handle it")
    running.stop()
    assert running.runner.connections == 2
    assert running.runner.agent == running.runner.guard.agent == "ren2"  # its logs and its own-DM rule kept ren1


def test_a_runner_whose_seat_is_removed_ends_with_the_hubs_reason(hub, caplog):
    """The hub says why it hangs up; the runner logged "the hub went away ...; reconnecting" and ended only
    when its hello was refused (a review)."""
    from agorad.surface.errors import Unauthorized

    hub.add_agent("bot")
    removed = Running(hub, "bot", lambda message: None, reconnect_first=0.05)
    hub.call("agents.remove", agent="bot")
    removed.thread.join(10)
    assert not removed.thread.is_alive() and [type(e) for e in removed.errors] == [Unauthorized]
    assert "agent bot was removed; this connection is closed" in str(removed.errors[0])
    assert "reconnecting" not in caplog.text
    STARTED.remove(removed)


def runner_process(hub, agent: str, mode: str, record: Path, gate: Path | None = None) -> subprocess.Popen:
    """A runner process (tests/sdk_agent.py); its log goes to `stderr` beside the record."""
    args = [sys.executable, "-m", "tests.sdk_agent", agent, mode, str(record)] + ([str(gate)] if gate else [])
    with open(record.with_name("stderr"), "ab") as log:
        return subprocess.Popen(args, cwd=ROOT, env={**hub.env, "AGORA_HOME": str(hub.home)},
                                stdout=subprocess.DEVNULL, stderr=log)


def held_in_handler(hub, sender, tmp_path: Path, title: str):
    """A runner process for `bot` whose handler has begun on a fresh message and waits on its gate:
    (process, record, gate, the message's ref)."""
    record, gate = tmp_path / "record", tmp_path / "gate"
    os.mkfifo(gate)
    proc = runner_process(hub, "bot", "hang", record, gate)
    ref = send(sender, "@bot", title)["ref"]
    wait_for(lambda: record.exists() and f"started {ref}" in record.read_text(), what="the handler to start")
    return proc, record, gate, ref
