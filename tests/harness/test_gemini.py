"""The real Gemini CLI, offline against the scripted model, in a workspace wired as `agora setup` would wire it.

Proves: (i) a `gemini -p` turn runs the seat's commands through the model's
shell tool (run_shell_command); (ii) the AfterAgent hook fires at the turn's
end and its block contract continues the same run with the hook's text as the
next user message (the backstop's contract), and stays quiet when the hook
says nothing; (iii) Gemini has no background hook, so an idle session cannot
be woken; the nearest thing, a turn held open by an AfterAgent listener, is
proven to take mail (see hold_listen).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agorad.surface import wiring
from agorad.surface.durations import format_duration
from tests.harness import gemini
from tests.harness.install import NotInstalled, binary
from tests.seats import send

try:
    binary("gemini")
except NotInstalled as exc:
    pytestmark = pytest.mark.skip(reason=str(exc))

SEAT, PEER = "seat", "peer"


@pytest.fixture
def seat(hub, model, tmp_path, hook_processes):
    """SEAT and PEER on a real hub, a workspace, and Gemini's environment (private HOME, the scripted model)."""
    keys = {agent: hub.add_agent(agent, liveness_mode="always-on") for agent in (SEAT, PEER)}
    workspace = tmp_path / "ws"
    workspace.mkdir()
    peer = hub.client(PEER, keys[PEER])
    yield type("Seat", (), {"hub": hub, "workspace": workspace, "private": tmp_path, "peer": peer,
                             "env": gemini.environment(model.url, tmp_path, workspace)})
    peer.close()


def _probe(path: Path, answer: str) -> dict:
    """An AfterAgent hook that records its stdin and, on a turn not already continued, answers `answer`.

    answer: "quiet" (exit 0, nothing), "block" or "deny" (exit 0, {"decision": answer} on stdout), "exit2"
    (exit 2, the reason on stderr). Stands in for the backstop to pin down Gemini's side of the contract.
    """
    script = path.with_suffix(".py")
    script.write_text(
        "import json, sys\n"
        "data = json.load(sys.stdin)\n"
        f"with open({str(path)!r}, 'a') as log:\n"
        "    log.write(json.dumps(data) + '\\n')\n"
        f"answer = {answer!r}\n"
        "if data.get('stop_hook_active') or answer == 'quiet':\n"
        "    sys.exit(0)\n"
        "if answer in ('block', 'deny'):\n"
        "    print(json.dumps({'decision': answer, 'reason': 'PROBE: check the inbox'}))\n"
        "    sys.exit(0)\n"
        "sys.stderr.write('PROBE: check the inbox')\n"
        "sys.exit(2)\n")
    return {"name": "probe", "type": "command", "command": f"{sys.executable} {script}", "timeout": 30_000}


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_turn_runs_the_seats_inbox_through_the_shell_tool(seat, model):
    send(seat.peer, f"@{SEAT}", title="schema v2 ready")
    inbox = wiring.shell(wiring.inbox(wiring.agora_executable(), SEAT, seat.hub.home))
    model.script({"shell": inbox}, {"text": "read it"})
    gemini.wire(seat.workspace, SEAT, seat.hub.home, after_agent=[], session_start=[])

    done = gemini.turn(seat.workspace, seat.env, "check your mail")

    assert done.returncode == 0, done.stderr
    main = model.main_requests()
    assert len(main) == 2, [s.user_text[-200:] for s in main]
    assert "check your mail" in main[0].user_text
    # The inbox's output came back as the shell tool's functionResponse: the DM's headline is in it.
    assert "schema v2 ready" in main[1].user_text
    assert "read it" in done.stdout


@pytest.mark.parametrize("answer", ["block", "deny", "exit2"])
def test_after_agent_block_continues_the_run_with_the_hooks_text(seat, model, answer):
    calls = seat.private / "after-agent.jsonl"
    gemini.wire(seat.workspace, SEAT, seat.hub.home, after_agent=[_probe(calls, answer)], session_start=[])
    model.script({"text": "first answer"}, {"text": "second answer"})

    done = gemini.turn(seat.workspace, seat.env, "hello")

    assert done.returncode == 0, done.stderr
    main = model.main_requests()
    assert [s.user_text for s in main[1:]] == ["PROBE: check the inbox"]
    records = _records(calls)
    assert [(r["hook_event_name"], r["prompt"], r["stop_hook_active"]) for r in records] == [
        ("AfterAgent", "hello", False), ("AfterAgent", "hello", True)]
    assert records[0]["prompt_response"] == "first answer"
    assert {"session_id", "transcript_path", "cwd"} <= records[0].keys()


def test_a_quiet_after_agent_hook_lets_the_turn_end(seat, model):
    calls = seat.private / "after-agent.jsonl"
    gemini.wire(seat.workspace, SEAT, seat.hub.home, after_agent=[_probe(calls, "quiet")], session_start=[])
    model.script({"text": "only answer"}, {"text": "never asked for"})

    done = gemini.turn(seat.workspace, seat.env, "hello")

    assert done.returncode == 0, done.stderr
    assert len(model.main_requests()) == 1
    assert [r["stop_hook_active"] for r in _records(calls)] == [False]


def test_exit_2_with_anything_on_stdout_sends_stdout_not_stderr(seat, model, tmp_path):
    """Gotcha: on exit 2 the runner parses stdout first; stderr is the reason only when stdout is empty."""
    script = tmp_path / "noisy.sh"
    script.write_text("#!/bin/sh\ncat >/dev/null\n[ -e \"$0.done\" ] && exit 0\ntouch \"$0.done\"\n"
                      "echo 'AGORA_WAKE agent=seat n=1'\necho 'the digest' >&2\nexit 2\n")
    script.chmod(0o755)
    gemini.wire(seat.workspace, SEAT, seat.hub.home,
                after_agent=[{"name": "noisy", "type": "command", "command": str(script), "timeout": 30_000}],
                session_start=[])
    model.script({"text": "first"}, {"text": "second"})

    done = gemini.turn(seat.workspace, seat.env, "hello")

    assert done.returncode == 0, done.stderr
    assert [s.user_text for s in model.main_requests()[1:]] == ["AGORA_WAKE agent=seat n=1"]


def _agora_hook_exists() -> bool:
    exe = wiring.agora_executable()
    return subprocess.run([exe, "hook", "--help"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _agora_hook_exists(), reason="`agora hook stop` is not in this build yet")
def test_the_wired_backstop_reprompts_while_important_mail_is_unread(seat, model):
    gemini.wire(seat.workspace, SEAT, seat.hub.home)   # exactly setup's hooks
    send(seat.peer, f"@{SEAT}", title="please review 0004")
    model.script({"text": "nothing to do"}, {"text": "looking"})

    done = gemini.turn(seat.workspace, seat.env, "hello")

    assert done.returncode == 0, done.stderr
    main = model.main_requests()
    assert len(main) >= 2, "the backstop did not continue the turn"
    assert "inbox" in main[1].user_text


def hold_listen(agent: str, home: Path, sentinels: Path, max_wait: float) -> dict:
    """An AfterAgent hook that holds the turn open until mail lands: `agora listen --once`, streams swapped.

    Gemini takes a hook's stdout over its stderr, so the listener's digest
    (stderr) goes to the hook's stdout and its sentinel lines to `sentinels`.
    """
    argv = wiring.hook_listen(wiring.agora_executable(), agent, home)
    argv[argv.index("--max-wait") + 1] = format_duration(max_wait)
    return {"name": "agora-hold", "type": "command",
            "command": f"{wiring.shell(argv)} 2>&1 >>{wiring.shell([str(sentinels)])}",
            "timeout": int((max_wait + 30) * 1000)}


def _armed_count(path: Path) -> int:
    return path.read_text().count("AGORA_LISTEN armed") if path.exists() else 0


def _wait(condition, timeout: float, what: str):
    """Wait on a file the listener appends to (inotify would be overkill for a test): the condition or fail."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


def test_a_turn_held_by_an_after_agent_listener_takes_mail_twice(seat, model):
    """The only wake Gemini allows: the turn never ends while the hook waits, so this is a foreground wait."""
    sentinels = seat.private / "listen.out"
    gemini.wire(seat.workspace, SEAT, seat.hub.home,
                after_agent=[hold_listen(SEAT, seat.hub.home, sentinels, max_wait=120)], session_start=[])
    model.script({"text": "idle now"}, {"text": "read the first"}, {"text": "read the second"})
    proc = gemini.start(seat.workspace, seat.env, "wait for mail")
    try:
        for n, title in enumerate(["first wake", "second wake"], start=1):
            _wait(lambda: _armed_count(sentinels) >= n, 60, f"listener #{n} to arm")
            before = len(model.seen)
            sent = time.monotonic()
            send(seat.peer, f"@{SEAT}", title=title)
            woke = model.wait_for(lambda s: not s.side and title in s.user_text, 60, after=before,
                                  what=f"a request carrying {title!r}")
            print(f"gemini held-turn wake #{n}: send -> next model request {1000 * (woke.at - sent):.0f} ms")
            assert "AGORA_WAKE" not in woke.user_text   # the digest, not the sentinel line
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def test_the_rule_block_in_gemini_md_reaches_the_model(seat, model):
    gemini.wire(seat.workspace, SEAT, seat.hub.home, after_agent=[], session_start=[])

    done = gemini.turn(seat.workspace, seat.env, "hello")

    assert done.returncode == 0, done.stderr
    first = json.dumps(model.main_requests()[0].body)
    assert json.dumps(f"## Agora: you are seat `{SEAT}`")[1:-1] in first
    assert json.dumps(wiring.shell(wiring.inbox(wiring.agora_executable(), SEAT, seat.hub.home)))[1:-1] in first


def test_session_start_additional_context_reaches_the_first_request(seat, model, tmp_path):
    calls = tmp_path / "start.jsonl"
    script = tmp_path / "start.py"
    script.write_text(
        "import json, sys\n"
        f"open({str(calls)!r}, 'a').write(sys.stdin.read() + '\\n')\n"
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'SessionStart',"
        " 'additionalContext': 'PROBE-CONTEXT: seat has 2 unread'}}))\n")
    probe = {"name": "probe-start", "type": "command", "command": f"{sys.executable} {script}", "timeout": 30_000}
    gemini.wire(seat.workspace, SEAT, seat.hub.home, after_agent=[], session_start=[probe])

    done = gemini.turn(seat.workspace, seat.env, "hello")

    assert done.returncode == 0, done.stderr
    assert "PROBE-CONTEXT: seat has 2 unread" in model.main_requests()[0].user_text
    started = [json.loads(line) for line in calls.read_text().splitlines() if line.strip()]
    assert [(s["hook_event_name"], s["source"]) for s in started] == [("SessionStart", "startup")]
