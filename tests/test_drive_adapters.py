"""The harness adapters agora drive runs turns through (agora_setup/harnesses/*.py, `DRIVE`).

Three kinds of evidence: the command line each adapter builds; each Reader on
event streams recorded from the real Claude Code 2.1.197 and Codex 0.171.0
against the scripted model (tests/drive/streams/); and every behaviour of the
scripted stand-in (tests/drive/fake_harness.py) run as a subprocess through the
adapter's own command line and read by its Reader, `answer` and `leave-debt`
against a real hub.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from agora_setup import harnesses
from agora_setup.harnesses import claude, codex, command, cursor
from agora_setup.harnesses.turns import Outcome, Turn, environment
from agorad.surface import wiring
from agorad.surface.vocab import DRIVE_HARNESSES, HARNESSES
from tests.drive import fake_harness
from tests.hubproc import AGORA, wait_for

STREAMS = Path(__file__).parent / "drive" / "streams"
ROLES = ("claude", "codex", "cursor")


def turn(workspace: Path = Path("/ws"), **fields) -> Turn:
    return Turn("answer your mail", workspace, **fields)


# --- the registry ---------------------------------------------------------------------------------

def test_every_drive_harness_has_a_drive_object_and_setup_lists_only_its_own():
    for name in DRIVE_HARNESSES:
        drive = harnesses.drivable(name)
        for part in ("argv", "reader", "preflight", "environment"):
            assert callable(getattr(drive, part)), (name, part)
    assert harnesses.supported() == HARNESSES
    assert "command" not in HARNESSES
    with pytest.raises(ValueError):
        harnesses.module("command")
    with pytest.raises(ValueError):
        harnesses.drivable("gemini")


# --- command lines --------------------------------------------------------------------------------

def test_claude_argv_new_resume_model_and_args():
    agora = wiring.agora_executable()
    new = claude.DRIVE.argv("/bin/claude", turn())
    assert new == ["/bin/claude", "-p", "--output-format", "stream-json", "--verbose",
                   "--allowedTools", "mcp__agora", f"Bash({agora} *)", "--", "answer your mail"]
    resumed = claude.DRIVE.argv("claude", turn(session="S", model="opus", args=("--max-turns", "5")))
    assert resumed[resumed.index("--resume") + 1] == "S"
    assert resumed[resumed.index("--model") + 1] == "opus"
    assert resumed[-4:] == ["--max-turns", "5", "--", "answer your mail"]


def test_codex_argv_new_and_resume():
    new = codex.DRIVE.argv("codex", turn(model="gpt", args=("-c", "x=1")))
    assert new[:2] == ["codex", "exec"] and new[2] != "resume"
    assert new[-2:] == ["--", "answer your mail"]
    assert 'approval_policy="never"' in new and "--json" in new and "--skip-git-repo-check" in new
    assert "--sandbox" not in new  # `codex exec resume` has no --sandbox: the sandbox rides in -c for both
    assert new[new.index("--model") + 1] == "gpt" and new[new.index("x=1") - 1] == "-c"
    resumed = codex.DRIVE.argv("codex", turn(session="T-1"))
    assert resumed[:3] == ["codex", "exec", "resume"]
    assert resumed[-3:] == ["T-1", "--", "answer your mail"]  # the thread id, then the prompt


def test_cursor_argv_new_and_resume():
    new = cursor.DRIVE.argv("cursor-agent", turn(workspace=Path("/w")))
    assert new[:4] == ["cursor-agent", "-p", "--output-format", "stream-json"]
    assert {"--force", "--approve-mcps", "--trust"} <= set(new)
    assert new[new.index("--workspace") + 1] == "/w" and "--resume" not in new
    assert new[-1] == "answer your mail"
    resumed = cursor.DRIVE.argv("cursor-agent", turn(session="C", model="m", args=("--x",)))
    assert resumed[resumed.index("--resume") + 1] == "C" and resumed[resumed.index("--model") + 1] == "m"
    assert resumed[-2:] == ["--x", "answer your mail"]


def test_command_argv_and_environment():
    t = turn(command=("/opt/seat-bot", "--fast"), args=("--extra",), session="s9", model="small")
    assert command.DRIVE.argv(None, t) == ["/opt/seat-bot", "--fast", "--extra"]
    assert environment(command.DRIVE, t) == {"AGORA_DRIVE_PROMPT": "answer your mail", "AGORA_DRIVE_SESSION": "s9",
                                             "AGORA_DRIVE_MODEL": "small"}
    assert environment(command.DRIVE, turn(command=("x",))) == {"AGORA_DRIVE_PROMPT": "answer your mail"}
    assert environment(codex.DRIVE, t) == {} and environment(cursor.DRIVE, t) == {}


def test_a_claude_turn_waits_for_its_mcp_servers_unless_the_caller_said_otherwise(monkeypatch):
    """Claude Code connects MCP servers in the background unless told to wait, and a late server's tools are
    left out of the first request (tests/harness/test_drive.py, an agora mcp slow to start)."""
    for name in claude.MCP_WAIT:
        monkeypatch.delenv(name, raising=False)
    assert environment(claude.DRIVE, turn()) == {"MCP_CONNECTION_NONBLOCKING": "0", "MCP_CONNECT_TIMEOUT_MS": "15000"}
    monkeypatch.setenv("MCP_CONNECT_TIMEOUT_MS", "60000")
    monkeypatch.setenv("MCP_CONNECTION_NONBLOCKING", "")  # set empty: as unset
    assert environment(claude.DRIVE, turn()) == {"MCP_CONNECTION_NONBLOCKING": "0", "MCP_CONNECT_TIMEOUT_MS": "60000"}


def test_the_claude_preflight_does_not_wait_for_mcp_servers(monkeypatch, tmp_path):
    """The probe stops at the --verbose check and reaches no model: waiting for the servers there only
    delayed the arm (measured with the real Claude Code, 1.4 -> 3.1 s)."""
    seen = []
    monkeypatch.setattr(claude.checks, "run", lambda argv, workspace, env: seen.append(env) or "stop here")
    env = {"PATH": "/bin", **claude.MCP_WAIT}
    assert claude.DRIVE.preflight("claude", Turn("x", tmp_path), env) == "stop here"
    assert seen[0] == {**env, "MCP_CONNECTION_NONBLOCKING": "1"} and env["MCP_CONNECTION_NONBLOCKING"] == "0"


def test_environment_is_empty_for_a_drive_object_without_one():
    class Bare:
        pass

    assert environment(Bare(), turn()) == {}


# --- readers on recorded real streams -------------------------------------------------------------

def read(drive, path: Path, status: int | None, stderr: str = "") -> Outcome:
    reader = drive.reader()
    for line in path.read_text().splitlines():
        reader.feed(line)
    return reader.finish(status, stderr)


@pytest.mark.parametrize("name, status, completed, provider, context_full, tool_calls", [
    ("claude-new", 0, True, False, False, 2),      # a Bash `agora inbox` and mcp__agora__check_inbox
    ("claude-resume", 0, True, False, False, 0),
    ("claude-429", 1, False, True, False, 0),
    ("claude-529", 1, False, True, False, 0),
    ("claude-500", 1, False, True, False, 0),
    ("claude-context", 1, False, False, True, 0),
    ("claude-no-session", 1, False, False, False, 0),
    ("codex-new", 0, True, False, False, 2),       # a command_execution and an mcp_tool_call
    ("codex-resume", 0, True, False, False, 1),
    ("codex-429", 1, False, True, False, 0),
    ("codex-500", 1, False, True, False, 0),
    ("codex-context", 1, False, False, True, 0),
])
def test_reader_on_a_recorded_stream(name, status, completed, provider, context_full, tool_calls):
    drive = harnesses.drivable(name.split("-")[0])
    outcome = read(drive, STREAMS / f"{name}.jsonl", status)
    assert (outcome.completed, outcome.provider, outcome.context_full, outcome.tool_calls) == \
        (completed, provider, context_full, tool_calls), outcome
    assert (outcome.error is None) == completed, outcome


def test_claude_reader_keeps_the_session_resumed_and_drops_one_that_is_gone():
    # (record_streams checks that the resumed turn ran in the session it resumed)
    assert read(claude.DRIVE, STREAMS / "claude-new.jsonl", 0).session
    assert read(claude.DRIVE, STREAMS / "claude-resume.jsonl", 0).session
    gone = read(claude.DRIVE, STREAMS / "claude-no-session.jsonl", 1)
    assert "No conversation found" in gone.error
    assert gone.session is None and gone.session_gone  # resuming it again would fail the same way: start anew


def test_claude_reader_quotes_the_api_error_and_notes_retries():
    outcome = read(claude.DRIVE, STREAMS / "claude-429.jsonl", 1)
    assert outcome.error.startswith("API Error: Request rejected (429)")
    assert any("retried" in note and "429" in note for note in outcome.notes)


def test_codex_reader_keeps_the_thread_and_quotes_its_failure():
    assert read(codex.DRIVE, STREAMS / "codex-new.jsonl", 0).session
    assert read(codex.DRIVE, STREAMS / "codex-resume.jsonl", 0).session
    failed = read(codex.DRIVE, STREAMS / "codex-429.jsonl", 1)
    assert failed.error == "exceeded retry limit, last status: 429 Too Many Requests"
    assert not any("429" in note for note in failed.notes)  # the error event repeats turn.failed: said once


@pytest.mark.parametrize("message, provider, context_full", [
    # Codex's own words (codex-rs/core/src/error.rs), the measured ones among them.
    ("unexpected status 503 Service Unavailable: Service Unavailable, url: http://127.0.0.1:1/v1/responses", True, False),
    ("Quota exceeded. Check your plan and billing details.", True, False),
    ("stream disconnected before completion: idle timeout", True, False),
    ("unexpected status 401 Unauthorized: Incorrect API key provided", False, False),
    ("Codex ran out of room in the model's context window. Start a new conversation.", False, True),
])
def test_codex_reader_classifies_a_failure(message, provider, context_full):
    reader = codex.DRIVE.reader()
    reader.feed(json.dumps({"type": "thread.started", "thread_id": "t"}))
    reader.feed(json.dumps({"type": "turn.failed", "error": {"message": message}}))
    outcome = reader.finish(1, "")
    assert (outcome.completed, outcome.provider, outcome.context_full) == (False, provider, context_full)


ODD_LINES = ("", "plain text", "[1, 2]", "{broken", "null", '{"type": 5}', '{"type": "assistant", "message": "x"}',
             '{"type": "assistant", "message": {"content": "str"}}', '{"type": "item.started", "item": [1]}',
             '{"type": "error", "message": null}', '{"type": "tool_call"}', '{"agora_drive": "result", "session": 7}')


@pytest.mark.parametrize("drive", [claude.DRIVE, codex.DRIVE, cursor.DRIVE, command.DRIVE])
def test_a_reader_never_raises_and_judges_no_terminal_a_failure(drive):
    reader = drive.reader()
    for line in ODD_LINES:
        reader.feed(line)
    outcome = reader.finish(None, "Traceback ...\nKilledError: gone\n")
    assert not outcome.completed and outcome.error
    assert "killed" in outcome.error


def test_exit_zero_without_terminal_event_is_not_success():
    for drive, path in ((claude.DRIVE, "claude-new"), (codex.DRIVE, "codex-new")):
        lines = (STREAMS / f"{path}.jsonl").read_text().splitlines()
        reader = drive.reader()
        for line in lines[:-1]:  # everything but the terminal event
            reader.feed(line)
        outcome = reader.finish(0, "")
        assert not outcome.completed and "without its terminal event" in outcome.error


# --- the command harness's contract ---------------------------------------------------------------

@pytest.mark.parametrize("lines, status, completed, provider, error_has", [
    ([], 0, True, False, None),
    ([], 75, False, True, "EX_TEMPFAIL"),
    ([], 2, False, False, "exited 2"),
    ([], None, False, False, "killed"),
    (['{"agora_drive": "result", "error": "model said no"}'], 0, False, False, "model said no"),
    (['{"agora_drive": "result", "error": "busy", "provider": true}'], 1, False, True, "busy"),
    (['{"agora_drive": "result", "session": "s2", "tool_calls": 3}'], 0, True, False, None),
])
def test_command_reader(lines, status, completed, provider, error_has):
    reader = command.DRIVE.reader()
    for line in ["noise", *lines]:
        reader.feed(line)
    outcome = reader.finish(status, "last words\n")
    assert (outcome.completed, outcome.provider) == (completed, provider)
    assert (error_has is None) == (outcome.error is None) and (error_has is None or error_has in outcome.error)
    if lines and "s2" in lines[0]:
        assert (outcome.session, outcome.tool_calls) == ("s2", 3)


def test_command_preflight(tmp_path):
    assert "needs a command" in command.DRIVE.preflight(None, turn(tmp_path), None)
    assert "not an executable" in command.DRIVE.preflight(None, turn(tmp_path, command=("no-such-program-x",)), None)
    assert command.DRIVE.preflight(None, turn(tmp_path, command=(sys.executable, "-c", "pass")), None) is None


def test_command_turn_runs_with_its_prompt_in_the_environment(tmp_path):
    program = ("import json, os; print(json.dumps({'agora_drive': 'result', 'session': 'k', "
               "'tool_calls': len(os.environ['AGORA_DRIVE_PROMPT'])}))")
    t = turn(tmp_path, command=(sys.executable, "-c", program))
    outcome, _ = run_turn(command.DRIVE, None, t, {**os.environ, **environment(command.DRIVE, t)})
    assert (outcome.completed, outcome.session, outcome.tool_calls) == (True, "k", len("answer your mail"))


# --- the fake harness through each adapter --------------------------------------------------------

class Fake:
    """Wrappers for each role on a private PATH, a script and a log: what a test of a driven turn needs."""

    def __init__(self, base: Path, workspace: Path):
        self.base = base
        self.workspace = workspace
        self.bin = base / "bin"
        self.exe = {role: str(fake_harness.install(self.bin, role)) for role in ROLES}
        self.script = base / "script.json"
        self.log = base / "log.jsonl"
        self.env = {**os.environ, "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}",
                    fake_harness.SCRIPT_VARIABLE: str(self.script), fake_harness.LOG_VARIABLE: str(self.log),
                    fake_harness.AGORA_VARIABLE: AGORA}

    def play(self, *behaviours: str) -> None:
        self.script.write_text(json.dumps(list(behaviours)))

    def turns(self) -> list[dict]:
        return fake_harness.Log(self.log).turns()


@pytest.fixture
def fake(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return Fake(tmp_path, workspace)


def run_turn(drive, exe, t: Turn, env: dict, timeout: float = 60) -> tuple[Outcome, subprocess.CompletedProcess]:
    """One turn the way a driver runs it: the adapter's argv, stdin /dev/null, its own process group."""
    proc = subprocess.Popen(drive.argv(exe, t), cwd=t.workspace, env={**env, **environment(drive, t)},
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    reader = drive.reader()
    for line in out.splitlines():
        reader.feed(line)
    return reader.finish(proc.returncode, err), subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.parametrize("role", ROLES)
def test_fake_ok_then_resume_through_the_adapter(role, fake):
    fake.play("ok", "ok")
    drive = harnesses.drivable(role)
    first, done = run_turn(drive, fake.exe[role], Turn("hello", fake.workspace), fake.env)
    assert first.completed and first.session and first.error is None, done.stderr
    second, done = run_turn(drive, fake.exe[role], Turn("again", fake.workspace, session=first.session), fake.env)
    assert second.completed and second.session == first.session, done.stderr
    log = fake.turns()
    assert [r["resumed"] for r in log] == [None, first.session]
    assert [r["prompt"] for r in log] == ["hello", "again"]
    assert log[0]["cwd"] == str(fake.workspace) and "PATH" in log[0]["env"]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("behaviour, status, provider, context_full", [
    ("crash", 3, False, False),
    ("429", 1, True, False),
    ("context-full", 1, False, True),
    ("no-terminal", 0, False, False),
])
def test_fake_failures_read_as_failures(role, behaviour, status, provider, context_full, fake):
    fake.play(behaviour)
    outcome, done = run_turn(harnesses.drivable(role), fake.exe[role], Turn("hello", fake.workspace), fake.env)
    assert done.returncode == status, done.stderr
    assert (outcome.completed, outcome.provider, outcome.context_full) == (False, provider, context_full), outcome
    assert outcome.error


@pytest.mark.parametrize("role", ROLES)
def test_fake_answer_really_answers_and_leave_debt_does_not(role, fake, hub, cli):
    hub.add_agent("peer", liveness_mode="always-on")
    hub.add_agent("seat", liveness_mode="always-on")
    env = {**fake.env, "AGORA_HOME": str(hub.home), "AGORA_AGENT_ID": "seat"}
    fake.play("leave-debt", "answer")
    cli("send", "--as", "peer", "@seat", "--ask", "--title", "ready?", "say so")
    drive = harnesses.drivable(role)
    lazy, done = run_turn(drive, fake.exe[role], Turn("answer", fake.workspace), env)
    assert lazy.completed and lazy.tool_calls == 1, done.stderr
    assert owed(hub) == 1
    busy, done = run_turn(drive, fake.exe[role], Turn("answer", fake.workspace, session=lazy.session), env)
    assert busy.completed and busy.tool_calls == 3, done.stderr  # inbox, one reply, ack
    assert owed(hub) == 0


def owed(hub) -> int:
    listing = subprocess.run([AGORA, "inbox", "--home", str(hub.home), "--as", "seat", "--json"], capture_output=True,
                             text=True, check=True)
    return json.loads(listing.stdout)["owed_total"]


@pytest.mark.parametrize("role", ROLES)
def test_fake_hang_holds_its_pipe_from_outside_the_process_group(role, fake):
    fake.play("hang")
    drive = harnesses.drivable(role)
    t = Turn("hello", fake.workspace)
    proc = subprocess.Popen(drive.argv(fake.exe[role], t), cwd=fake.workspace, env=fake.env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    grandchild = None
    try:
        reader = drive.reader()
        reader.feed(proc.stdout.readline().decode())  # the session's first event
        assert reader.outcome.session
        grandchild = wait_for(lambda: next((r["grandchild"] for r in fake_harness.Log(fake.log).records()
                                            if "grandchild" in r), None), what="the hang's grandchild")
        wait_for(lambda: os.getsid(grandchild) == grandchild, what="the grandchild's setsid()")
        assert os.getpgid(grandchild) != os.getpgid(proc.pid)  # outside the turn's process group
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        # The turn's group is dead, yet its stdout is held open: what is left reads, and then no EOF comes.
        while select.select([proc.stdout.fileno()], [], [], 0.2)[0]:
            assert os.read(proc.stdout.fileno(), 65536) != b"", "stdout reached EOF"
    finally:
        if grandchild:
            os.kill(grandchild, signal.SIGKILL)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        proc.stdout.close()


@pytest.mark.parametrize("role, breaks, said", [
    ("claude", lambda argv: [a for a in argv if a != "mcp__agora"], "lack mcp__agora"),
    ("claude", lambda argv: [a for a in argv if a != "--"], "after `--`"),
    ("codex", lambda argv: [a for a in argv if a != "--json"], "without --json"),
    ("cursor", lambda argv: [a for a in argv if a != "--force"], "without --force"),
])
def test_fake_refuses_a_wrong_command_line(role, breaks, said, fake):
    fake.play("ok")
    argv = breaks(harnesses.drivable(role).argv(fake.exe[role], Turn("hello", fake.workspace)))
    done = subprocess.run(argv, cwd=fake.workspace, env=fake.env, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == fake_harness.EX_USAGE and said in done.stderr, done.stderr
    assert fake.turns() == []  # a refused command line plays no turn


@pytest.mark.parametrize("role", ROLES)
def test_fake_refuses_an_unknown_resume_and_a_live_stdin(role, fake):
    fake.play("ok", "ok")
    drive = harnesses.drivable(role)
    _, done = run_turn(drive, fake.exe[role], Turn("hello", fake.workspace, session="never-issued"), fake.env)
    assert done.returncode == fake_harness.EX_USAGE and "never issued" in done.stderr
    argv = drive.argv(fake.exe[role], Turn("hello", fake.workspace))
    done = subprocess.run(argv, cwd=fake.workspace, env=fake.env, input="typing", capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == fake_harness.EX_USAGE and "/dev/null" in done.stderr


@pytest.mark.parametrize("role", ROLES)
def test_preflight_against_the_fake(role, fake):
    fake.play()  # a preflight plays no turn: an empty script would refuse one
    drive = harnesses.drivable(role)
    assert drive.preflight(fake.exe[role], Turn("x", fake.workspace), fake.env) is None
    refused = drive.preflight(fake.exe[role], Turn("x", fake.workspace, args=("--no-such-flag",)), fake.env)
    assert refused and "--no-such-flag" in refused
    owned = drive.preflight(fake.exe[role], Turn("x", fake.workspace, args=("--json" if role == "codex"
                                                                            else "--output-format", "json")), fake.env)
    assert owned and "set by agora drive" in owned
    assert "cannot run" in drive.preflight(str(fake.base / "missing"), Turn("x", fake.workspace), fake.env)
    assert fake.turns() == []


def test_claude_preflight_probes_with_a_prompt_when_the_drivers_turn_has_none(fake):
    """The driver's preflight turn has an empty prompt; `claude -p -- ""` refuses it before the --verbose
    check (2.1.197, measured in tests/harness/test_drive.py), so the probe carries one of its own."""
    fake.play()
    assert claude.DRIVE.preflight(fake.exe["claude"], Turn("", fake.workspace), fake.env) is None
    assert fake.turns() == []


def test_preflight_refuses_an_mcp_entry_nobody_can_serve(fake, monkeypatch):
    (fake.workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"agora": {"command": "agora"}}}))
    monkeypatch.setattr("agora_setup.harnesses.preflight.mcp_installed", lambda: False)
    refused = claude.DRIVE.preflight(fake.exe["claude"], Turn("x", fake.workspace), fake.env)
    assert refused and "`agora mcp` cannot start" in refused
    monkeypatch.setattr("agora_setup.harnesses.preflight.mcp_installed", lambda: True)
    assert claude.DRIVE.preflight(fake.exe["claude"], Turn("x", fake.workspace), fake.env) is None


def test_codex_preflight_refuses_an_untrusted_project(fake, tmp_path):
    (fake.workspace / ".codex").mkdir()
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    env = {**fake.env, "CODEX_HOME": str(codex_home)}
    refused = codex.DRIVE.preflight(fake.exe["codex"], Turn("x", fake.workspace), env)
    assert refused and "not trusted" in refused
    (codex_home / "config.toml").write_text(f'[projects."{fake.workspace.parent}"]\ntrust_level = "trusted"\n')
    assert codex.DRIVE.preflight(fake.exe["codex"], Turn("x", fake.workspace), env) is None


# --- the scripted model's HTTP error replies (tests/harness/model_server.py) ----------------------

def test_scripted_model_answers_an_http_error_status():
    from tests.harness.model_server import ScriptedModel

    body = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    with ScriptedModel([{"status": 429, "body": body}, {"status": 503}]) as model:
        answers = []
        for _ in range(2):
            request = urllib.request.Request(model.url + "/v1/messages", data=b'{"tools": [1]}', method="POST")
            with pytest.raises(urllib.error.HTTPError) as failed:
                urllib.request.urlopen(request, timeout=10)
            answers.append((failed.value.code, json.loads(failed.value.read())))
    assert answers[0] == (429, body)
    assert answers[1][0] == 503 and "scripted HTTP 503" in answers[1][1]["error"]["message"]


@pytest.mark.parametrize("event", [
    {"type": "result", "permission_denials": [3, {"tool_name": "Bash"}]},
    {"type": "result", "subtype": "error_during_execution", "errors": "not a list"},
    {"type": "turn.failed", "error": "a string, not an object"},
    {"type": "result", "is_error": True},
])
@pytest.mark.parametrize("drive", [claude.DRIVE, codex.DRIVE, cursor.DRIVE])
def test_a_reader_takes_malformed_terminal_events(drive, event):
    reader = drive.reader()
    reader.feed(json.dumps(event))
    outcome = reader.finish(1, "")
    assert not outcome.completed and outcome.error
