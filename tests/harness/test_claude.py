"""Claude Code in a workspace wired for a seat: its Bash tool reads and acks, its hooks wake it and hold it to its mail.

Every test uses the files the wiring wrote, untouched, a real hub, the real
`agora` CLI, and the real Claude Code CLI against the scripted model.
"""

from __future__ import annotations

import os
import statistics
import subprocess

import psutil
import pytest

from agorad.surface import settings, wiring
from tests.harness import claude, hook_processes as hooks, latency, rewake
from tests.harness.conftest import PEER

pytestmark = [pytest.mark.harness("claude")]

PRINT_TIMEOUT = 30.0  # a claude -p turn of three model requests takes about 1.5 s here


@pytest.fixture
def sessions():
    """Claude sessions a test opens, killed with their process group at its end (hook listeners: hook_processes)."""
    opened: list[claude.Session] = []
    yield lambda seat: opened.append(claude.Session(seat.workspace, seat.env)) or opened[-1]
    for session in opened:
        session.kill_group()


def backstop(seat) -> str:
    """The Stop backstop's command line as setup wires it (Claude quotes it beside the hook's reason)."""
    return seat.command(lambda exe, agent, home: wiring.backstop(exe, "claude", agent, home))


def unread(hub, agent) -> list[str]:
    with hub.client(agent) as seat:
        return rewake.unread(seat)


@pytest.mark.timeout(180)
def test_idle_session_is_woken_for_each_dm_and_reads_and_acks_it(claude_seat, model, sessions):
    """(b) Three DMs, one at a time, to an idle stream-json session: each wakes it, and its turn reads and acks."""
    hub = claude_seat.hub
    session = sessions(claude_seat)
    seen = []
    listener = None
    with hub.client(PEER) as peer, hub.client(claude_seat.agent) as seat:
        for n in range(3):
            seconds, listener = rewake.wake_once(model, session, peer, seat, claude_seat.agent, hub.home,
                                                 f"wake {n}", previous_listener=listener)
            seen.append(seconds)
    assert session.proc.poll() is None, f"the session ended: {session.stderr()[-800:]}"
    latency.record("send -> Claude's next model request (hook-armed listener)", seen,
                   f"wired --debounce {settings.HOOK_DEBOUNCE:g}s included")
    latency.record("  the same, less the debounce window (listener exit, hook, Claude)",
                   [s - settings.HOOK_DEBOUNCE for s in seen])
    # Through the listener (its debounce window, then the hook's exit), not a time-out or a later turn.
    assert settings.HOOK_DEBOUNCE <= min(seen) and max(seen) < settings.HOOK_DEBOUNCE + 10, seen


@pytest.mark.timeout(60)
def test_listener_own_wake_latency(hub, hook_processes):
    """The listener alone, in the same run: `agora listen --once --debounce 0`, send -> AGORA_WAKE."""
    hub.add_agent("ear", liveness_mode="always-on")
    hub.add_agent(PEER, liveness_mode="always-on")
    with hub.client(PEER) as peer:
        seen = [rewake.listener_wake(hub.home, "ear", peer, f"ring {n}") for n in range(5)]
    latency.record("send -> AGORA_WAKE (agora listen --once --debounce 0)", seen)
    assert statistics.median(seen) < 1.0, seen


@pytest.mark.timeout(120)
@pytest.mark.parametrize("ending", ["stdin-closed", "terminated"])
def test_a_dm_landing_as_its_session_ends_wakes_the_next_session(claude_seat, model, sessions, ending):
    """(c) The swallowed wake: a session ends while its hook listener is armed; the DM must reach the next session.

    Two endings, as measured with 2.1.197. terminated: Claude dies and its hook,
    in its own process group, lives on; a listener that took the wake then
    would ring to nobody (and, holding the seat's lock, keep the next
    session's listener out), so it must step aside without taking it, and the
    next session rings at once. stdin-closed: Claude waits for its running
    hooks before it exits, so the listener hands the wake to a session that
    exits without another turn; nothing can tell it so, and the mail, rung but
    unread, rings again at a later arm (RERING_FIRST on the hub's clock,
    advanced here rather than waited for).
    """
    hub, agent = claude_seat.hub, claude_seat.agent
    first = sessions(claude_seat)
    stale = rewake.armed_listener(hub.home, agent)
    model.script(*rewake.handling_script(agent, hub.home))
    first.end_input()
    if ending == "terminated":
        first.terminate()
        first.proc.wait(timeout=15)
        sessions(claude_seat)  # at once: a listener still holding the seat's lock would keep this one's out
        rewake.armed_listener(hub.home, agent, other_than=stale)
        ref = _send(hub, agent, "as you left")
    else:
        # Claude has read EOF long before the listener's 1 s debounce ends.
        ref = _send(hub, agent, "as you left")
        first.proc.wait(timeout=rewake.WAKE_TIMEOUT)
        assert not any(ref in s.user_text for s in model.seen), "the ending session took a turn for the DM itself"
        assert not psutil.pid_exists(stale), "the listener outlived the session it rang for"
        hub.advance(settings.RERING_FIRST)
        sessions(claude_seat)
    model.wait_for(lambda s: not s.side and ref in s.user_text, rewake.WAKE_TIMEOUT,
                   what=f"the next session woken for {ref}")
    with hub.client(agent) as seat:
        rewake.wait_for(lambda: not rewake.unread(seat), timeout=rewake.WAKE_TIMEOUT,
                        what=f"the next session's ack of {ref}")


def _send(hub, agent: str, title: str) -> str:
    with hub.client(PEER) as peer:
        return peer.call("messages.send", target=f"@{agent}", title=title, body="for you")["ref"]


@pytest.mark.timeout(120)
def test_backstop_reprompts_a_session_turn_that_ends_with_a_dm_unread(claude_seat, model, sessions):
    """(a, in a live session) Woken for a DM, the turn ends without reading it: the Stop backstop re-prompts, then the ack lets it rest."""
    hub, agent = claude_seat.hub, claude_seat.agent
    sessions(claude_seat)
    rewake.armed_listener(hub.home, agent)
    model.script({"text": "later"}, {"shell": claude_seat.command(wiring.ack_all)}, {"text": "acked"})
    with hub.client(PEER) as peer:
        ref = peer.call("messages.send", target=f"@{agent}", title="review 0007", body="please")["ref"]
    woke = model.wait_for(lambda s: not s.side and ref in s.user_text, rewake.WAKE_TIMEOUT, what=f"the wake for {ref}")
    reminded = model.wait_for(lambda s: not s.side, rewake.WAKE_TIMEOUT, after=model.seen.index(woke) + 1,
                              what="the request after the turn that ended with the DM unread")
    # Claude labels a blocking Stop hook's stderr with the hook's command: this is the backstop speaking.
    assert backstop(claude_seat) in reminded.user_text and ref in reminded.user_text, reminded.user_text[-800:]
    with hub.client(agent) as seat:
        rewake.wait_for(lambda: not rewake.unread(seat), timeout=rewake.WAKE_TIMEOUT, what=f"the ack of {ref}")
    rewake.armed_listener(hub.home, agent)  # and the Stop after the ack armed the next listener


@pytest.mark.timeout(120)
def test_print_turn_reads_and_acks_and_the_backstop_holds_it_to_unread_mail(claude_seat, model):
    """(a) `claude -p` in the wired workspace: inbox and ack through Bash; a turn ending with a DM unread is re-prompted.

    Under plain -p Claude waits for its asyncRewake hooks, so the wired listener ends at once there
    (--background-only); without that, it held the turn up to its --max-wait (measured with 2.1.197)."""
    hub, agent = claude_seat.hub, claude_seat.agent
    exe = wiring.agora_executable()
    inbox = wiring.shell(wiring.inbox(exe, agent, hub.home))
    ack = wiring.shell(wiring.ack_all(exe, agent, hub.home))
    with hub.client(PEER) as peer:
        first = peer.call("messages.send", target=f"@{agent}", title="review 0004", body="please")["ref"]
        model.script({"shell": inbox}, {"shell": ack}, {"text": "read and acked"})
        turn = claude.print_turn(claude_seat.workspace, claude_seat.env, "check your mail", PRINT_TIMEOUT)
        assert turn.returncode == 0, turn.stderr
        requests = model.main_requests()
        assert "review 0004" in requests[1].user_text, requests[1].user_text  # `agora inbox` listed it
        assert unread(hub, agent) == [], f"{first} is still unread after the turn's `agora ack`"

        second = peer.call("messages.send", target=f"@{agent}", title="urgent: 0005", body="now")["ref"]
        before = len(model.seen)
        model.script({"text": "nothing to do"}, {"shell": ack}, {"text": "acked after the reminder"})
        turn = claude.print_turn(claude_seat.workspace, claude_seat.env, "carry on", PRINT_TIMEOUT)
        assert turn.returncode == 0, turn.stderr
        ended, reminded = [s for s in model.seen[before:] if not s.side][:2]
        assert "carry on" in ended.user_text
        assert backstop(claude_seat) in reminded.user_text and second in reminded.user_text, reminded.user_text[-800:]
        assert unread(hub, agent) == [], f"{second} is still unread after the backstop's re-prompt"


@pytest.mark.timeout(180)
def test_a_remote_seats_idle_session_is_woken_over_the_remote_port_and_acks_there(remote, model, tmp_path):
    """A workspace on the seat's "host" (a home of its own, no hub there) wired with `agora setup --url
    --key-stdin` against a hub's remote port: the idle session's hook listener arms over ws, a DM wakes it,
    and its turn's `agora inbox` and `agora ack --all` (the same lines as a local seat's) reach the hub there;
    then the Stop backstop holds the next turn to an ask left unread, through the port too."""
    seat_home, workspace, agent = tmp_path / "seathome", tmp_path / "rws", "alice"
    workspace.mkdir()
    (workspace / ".claude").mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("AGORA_HOME", "AGORA_KEY", "AGORA_URL")}
    done = subprocess.run([wiring.agora_executable(), "setup", agent, "--harness", "claude", "--dir", str(workspace),
                           "--home", str(seat_home), "--url", remote.url, "--key-stdin"],
                          input=remote.keys[agent], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    session = claude.Session(workspace, claude.environment(model.url, tmp_path / "private"))
    try:
        with remote.client("bob", remote.keys["bob"]) as peer, remote.client(agent, remote.keys[agent]) as seat:
            seconds, _ = rewake.wake_once(model, session, peer, seat, agent, seat_home, "over the port", None)
            latency.record("send -> Claude's next model request, a remote seat (ws listener)", [seconds],
                           f"wired --debounce {settings.HOOK_DEBOUNCE:g}s included")
            listener = rewake.armed_listener(seat_home, agent)
            model.script({"text": "later"}, {"shell": wiring.shell(wiring.ack_all(wiring.agora_executable(), agent,
                                                                                     seat_home))}, {"text": "acked"})
            ref = peer.call("messages.send", target=f"@{agent}", title="review 0008", body="please", ask=True)["ref"]
            woke = model.wait_for(lambda s: not s.side and ref in s.user_text, rewake.WAKE_TIMEOUT,
                                  what=f"the wake for {ref}")
            reminded = model.wait_for(lambda s: not s.side, rewake.WAKE_TIMEOUT, after=model.seen.index(woke) + 1,
                                      what="the request after the turn that ended with the ask unread")
            assert ref in reminded.user_text, reminded.user_text[-800:]
            rewake.wait_for(lambda: not rewake.unread(seat), timeout=rewake.WAKE_TIMEOUT, what=f"the ack of {ref}")
            assert listener
    finally:
        session.kill_group()
        hooks.end(seat_home, spare=set())
