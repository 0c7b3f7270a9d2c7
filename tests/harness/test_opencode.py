"""The real opencode, offline against the scripted model, in a workspace wired as `agora setup` would wire it.

Proves: (i) an `opencode run` turn runs the seat's commands through the
model's bash tool; (ii) the wired plugin runs the backstop when a session goes
idle and, when it answers {"followup": R}, prompts the same session with R
(the next model request carries it), passing stop_hook_active on the idle
that follows its own prompt; (iii) an idle session is woken by the
plugin's background listener when a DM lands, three times in a row. (ii) and
(iii) run under `opencode serve`, a long-lived opencode like the TUI:
`opencode run` exits at its session's first idle, before any follow-up runs.
Also: `agora hook start`'s context reaches a session's system prompt, asked
once per session; AGENTS.md's rule block reaches the model; the plugin's
listener dies with its opencode.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from agorad.surface import wiring
from agorad.surface.paths import listen_file
from tests.harness import opencode
from tests.harness.install import NotInstalled, binary
from tests.seats import send

try:
    binary("opencode")
except NotInstalled as exc:
    pytestmark = pytest.mark.skip(reason=str(exc))

SEAT, PEER = "seat", "peer"


class Seat:
    def __init__(self, hub, workspace: Path, private: Path, peer, env: dict):
        self.hub, self.workspace, self.private, self.peer, self.env = hub, workspace, private, peer, env


@pytest.fixture
def seat(hub, model, tmp_path, hook_processes):
    keys = {agent: hub.add_agent(agent, liveness_mode="always-on") for agent in (SEAT, PEER)}
    workspace = tmp_path / "ws"
    workspace.mkdir()
    peer = hub.client(PEER, keys[PEER])
    yield Seat(hub, workspace, tmp_path, peer, opencode.environment(model.url, tmp_path))
    peer.close()


@pytest.fixture
def server(seat):
    servers = []

    def start() -> opencode.Server:
        servers.append(opencode.Server(seat.workspace, seat.env))
        return servers[-1]

    yield start
    for running in servers:
        running.stop()


def _probe(path: Path, answer: str) -> list[str]:
    """A backstop stand-in: records its stdin; on an idle not after its own prompt, answers `answer` ("block"|"quiet")."""
    script = path.with_suffix(".py")
    script.write_text(
        "import json, sys\n"
        "data = json.load(sys.stdin)\n"
        f"with open({str(path)!r}, 'a') as log:\n"
        "    log.write(json.dumps(data) + '\\n')\n"
        f"if {answer!r} == 'block' and not data['stop_hook_active']:\n"
        "    print(json.dumps({'followup': 'PROBE: check the inbox'}))\n")
    return [sys.executable, str(script)]


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _wait(condition, timeout: float, what: str):
    """Wait for a file the plugin or listener writes (the test has no event to block on): the value or fail."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)
    return value


def test_a_run_turn_runs_the_seats_inbox_through_the_bash_tool(seat, model):
    send(seat.peer, f"@{SEAT}", title="schema v2 ready")
    opencode.wire(seat.workspace, SEAT, seat.hub.home)
    inbox = wiring.shell(wiring.inbox(wiring.agora_executable(), SEAT, seat.hub.home))
    model.script({"shell": inbox}, {"text": "read it"})

    done = opencode.run(seat.workspace, seat.env, "check your mail")

    assert done.returncode == 0, done.stderr
    main = model.main_requests()
    assert len(main) == 2, [s.user_text[-200:] for s in main]
    assert "check your mail" in main[0].user_text
    assert "schema v2 ready" in main[1].user_text   # the inbox's output, returned as the bash tool's result
    assert "read it" in done.stdout


def test_the_plugin_reprompts_an_idle_session_when_the_backstop_blocks(seat, model, server):
    calls = seat.private / "backstop.jsonl"
    opencode.wire(seat.workspace, SEAT, seat.hub.home, backstop=_probe(calls, "block"))
    model.script({"text": "first answer"}, {"text": "second answer"})
    running = server()
    session = running.new_session()

    running.prompt(session, "hello")

    model.wait_for(lambda s: not s.side and s.user_text.strip() == "PROBE: check the inbox", 60,
                   what="the backstop's reason as the next user message")
    records = _wait(lambda: len(_records(calls)) >= 2 and _records(calls), 60, "the second idle's backstop")
    assert [(r["hook_event_name"], r["session_id"], r["stop_hook_active"]) for r in records] == [
        ("session.idle", session, False), ("session.idle", session, True)]
    assert [s.user_text.strip() for s in model.main_requests()] == ["hello", "PROBE: check the inbox"]


def test_a_quiet_backstop_leaves_the_session_idle(seat, model, server):
    calls = seat.private / "backstop.jsonl"
    opencode.wire(seat.workspace, SEAT, seat.hub.home, backstop=_probe(calls, "quiet"))
    model.script({"text": "only answer"}, {"text": "never asked for"})
    running = server()
    session = running.new_session()

    running.prompt(session, "hello")

    _wait(lambda: _records(calls), 60, "the backstop at the idle")
    running.prompt(session, "second turn")   # a later request proves the session ran nothing in between
    second = model.wait_for(lambda s: not s.side and "second turn" in s.user_text, 60)
    assert [s.user_text.strip() for s in model.main_requests()] == ["hello", second.user_text.strip()]
    assert [r["stop_hook_active"] for r in _records(calls)[:1]] == [False]


def _agora_hook_exists() -> bool:
    return subprocess.run([wiring.agora_executable(), "hook", "--help"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _agora_hook_exists(), reason="`agora hook stop` is not in this build yet")
def test_the_wired_backstop_reprompts_while_important_mail_is_unread(seat, model, server):
    opencode.wire(seat.workspace, SEAT, seat.hub.home)   # exactly setup's plugin
    send(seat.peer, f"@{SEAT}", title="please review 0004")
    model.script({"text": "nothing to do"}, {"text": "looking"})
    running = server()
    session = running.new_session()

    running.prompt(session, "hello")

    again = model.wait_for(lambda s: not s.side and len(model.main_requests()) >= 2 and s is model.main_requests()[1],
                           60, what="the backstop's follow-up prompt")
    assert "inbox" in again.user_text


def _armed(home: Path, previous: str | None) -> str | None:
    """The listener's pidfile once a listener other than `previous` holds it (written when its place is fixed)."""
    try:
        text = listen_file(home, SEAT, "pid").read_text()
    except FileNotFoundError:
        return None
    return text if text and text != previous else None


def test_an_idle_session_is_woken_by_the_plugins_listener_three_times(seat, model, server):
    """Setup's plugin, untouched: at each idle the backstop runs (it may re-prompt: the mail stays unread
    here), then the listener arms."""
    opencode.wire(seat.workspace, SEAT, seat.hub.home)
    model.script({"text": "idle now"}, *({"text": f"read wake {n}"} for n in (1, 2, 3)))
    running = server()
    session = running.new_session()
    running.prompt(session, "hello")
    armed = None
    for n in (1, 2, 3):
        armed = _wait(lambda: _armed(seat.hub.home, armed), 60, f"listener #{n} to arm at the idle")
        before = len(model.seen)
        sent = time.monotonic()
        send(seat.peer, f"@{SEAT}", title=f"wake number {n}")
        woke = model.wait_for(lambda s: not s.side and f"wake number {n}" in s.user_text, 60, after=before,
                              what=f"the session's request for wake {n}")
        print(f"opencode idle wake #{n}: send -> next model request {1000 * (woke.at - sent):.0f} ms")
        assert "AGORA_WAKE" not in woke.user_text   # the listener's digest (stderr), not its sentinel line
        # The wake continued the session the user started: its first prompt leads the request's history.
        history = [m for m in woke.body["messages"] if m.get("role") == "user"]
        assert "hello" in json.dumps(history[0]) and f"wake number {n}" in json.dumps(history[-1])


def test_the_rule_block_in_agents_md_reaches_the_model(seat, model):
    opencode.wire(seat.workspace, SEAT, seat.hub.home)

    done = opencode.run(seat.workspace, seat.env, "hello")

    assert done.returncode == 0, done.stderr
    first = json.dumps(model.main_requests()[0].body)
    assert json.dumps(f"## Agora: you are seat `{SEAT}`")[1:-1] in first
    assert json.dumps(wiring.shell(wiring.inbox(wiring.agora_executable(), SEAT, seat.hub.home)))[1:-1] in first


def _listener_watches_its_harness() -> bool:
    return importlib.util.find_spec("agora_listen.harness") is not None


@pytest.mark.skipif(not _listener_watches_its_harness(),
                    reason="this build's listener does not yet end when its harness dies (agora_listen.harness)")
def test_the_plugins_listener_does_not_outlive_its_opencode_even_killed(seat, model, server):
    """A listener left armed by a dead harness would take the next wake and ring nobody (issue: swallowed wakes).

    The plugin spawns the listener directly (no shell): its parent is opencode and its stdout a pipe
    to it, the two things a --once listener watches. Without that watch it survives a SIGKILL.
    """
    opencode.wire(seat.workspace, SEAT, seat.hub.home)
    running = server()
    running.prompt(running.new_session(), "hello")
    _wait(lambda: _armed(seat.hub.home, None), 60, "the listener to arm at the idle")
    home = str(seat.hub.home)
    listeners = [p for p in psutil.process_iter(["cmdline", "ppid"])
                 if p.info["ppid"] == running.proc.pid and "listen" in (p.info["cmdline"] or [])
                 and home in " ".join(p.info["cmdline"] or [])]
    assert len(listeners) == 1, "the plugin's listener is not opencode's child"

    running.proc.kill()

    _, alive = psutil.wait_procs(listeners, timeout=15)
    assert not alive, f"the listener {alive} outlived its opencode"


def test_a_session_starts_with_the_start_hooks_context(seat, model, tmp_path):
    calls = tmp_path / "start.jsonl"
    script = tmp_path / "start.py"
    script.write_text(
        "import json, sys\n"
        f"open({str(calls)!r}, 'a').write(sys.stdin.read() + '\\n')\n"
        "print(json.dumps({'context': 'PROBE-CONTEXT: seat has 2 unread'}))\n")
    opencode.wire(seat.workspace, SEAT, seat.hub.home, start=[sys.executable, str(script)])
    model.script({"text": "first"})

    done = opencode.run(seat.workspace, seat.env, "hello")

    assert done.returncode == 0, done.stderr
    first = model.main_requests()[0].body
    system = " ".join(m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])
                      for m in first["messages"] if m["role"] == "system")
    assert "PROBE-CONTEXT: seat has 2 unread" in system
    asked = [json.loads(line) for line in calls.read_text().splitlines() if line.strip()]
    assert [a["hook_event_name"] for a in asked] == ["session.start"]   # once per session, not per request


def test_the_wired_start_hook_gives_the_seats_context(seat, model):
    if subprocess.run([wiring.agora_executable(), "hook", "start", "--help"], capture_output=True).returncode:
        pytest.skip("`agora hook start` is not in this build yet")
    send(seat.peer, f"@{SEAT}", title="please review 0004")
    opencode.wire(seat.workspace, SEAT, seat.hub.home)   # exactly setup's plugin

    done = opencode.run(seat.workspace, seat.env, "hello")

    assert done.returncode == 0, done.stderr
    system = json.dumps([m for m in model.main_requests()[0].body["messages"] if m["role"] == "system"])
    assert "please review 0004" in system or json.dumps(wiring.shell(
        wiring.inbox(wiring.agora_executable(), SEAT, seat.hub.home)))[1:-1] in system
