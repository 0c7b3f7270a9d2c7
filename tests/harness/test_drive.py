"""`agora drive` with the real Claude Code and Codex CLIs against the scripted model, offline.

The driver's loop is tested pass by pass with a scripted program in tests/test_drive.py; here
its turns are the real harnesses, run by the adapters' own command lines
(agora_setup/harnesses/claude.py and codex.py, DRIVE), in workspaces wired by `agora setup`:
- the `agora drive` process wakes on an ask DM, runs ONE turn whose model answers through the
  harness's shell (Claude) or the wired `agora mcp` tools (Claude and Codex), judges it answered from the
  stream and the hub, re-arms, and ends on SIGTERM; also for a seat on another host (`agora setup
  --url`), rung and answering over the hub's remote port;
- in this process (Driver.step with a controllable clock): turns failing on the provider back off
  60, 120, 240 s holding the wake, and the next turn answers once the model recovers; a held wake
  survives a restart of the driver.

Test-side, not wiring: each harness's private environment (tests/harness/claude.py and codex.py:
its own HOME, config and the scripted model). Codex reads the workspace's .codex/ (agora's MCP
server) only for a trusted project, and the adapter's preflight refuses an untrusted one: the
private CODEX_HOME trusts the workspace (codex.config), as a user does once in Codex.
"""

from __future__ import annotations

import time

import pytest

from agorad.surface import wiring
from tests.harness import claude, drive, hook_processes as hooks, latency
from tests.harness.conftest import PEER, Wired
from tests.harness.drive import DriverProcess, ask, owed, unread
from tests.harness.install import binary
from tests.hubproc import with_sitecustomize
from tests.remote_seat import wire_remote_seat

# What Anthropic's API answers when rate-limited (tests/drive/record_streams.py records the same).
RATE_LIMITED = {"type": "error", "error": {"type": "rate_limit_error",
                                           "message": "This request would exceed your rate limit."}}
# Claude Code retries a 429 or 5xx itself before its turn fails (measured with 2.1.197, a model answering
# 429 to everything: 10 retries, `system/api_retry` events, 11 requests over 180 s, then exit 1; inside the
# driver's 900 s --turn-limit, so such a turn is still judged `provider`). The turns that must fail fast
# get CLAUDE_CODE_MAX_RETRIES=0 (measured: one model request, a `result` with is_error and
# api_error_status 429, exit 1, about 2 s).
NO_RETRIES = {"CLAUDE_CODE_MAX_RETRIES": "0"}
TURN_TIMEOUT = 60.0


def _answered(seat, ref: str) -> None:
    """The hub's side: the debt discharged, the ask acked, the reply in PEER's DM."""
    hub, agent = seat.hub, seat.agent
    assert owed(hub, agent) == 0, f"seat {agent} still owes a reply to {ref}"
    assert unread(hub, agent) == [], f"{ref} is still unread after the turn"
    assert drive.ANSWER in drive.dm_titles(hub), f"no reply in {drive.PEER}'s DM: {drive.dm_titles(hub)}"


def _drive_process(seat, model, harness: str, answer, label: str = "", tools: int = 3) -> None:
    """`agora drive` in the wired workspace: armed, woken by an ask, one answering turn, armed, SIGTERM."""
    hub, agent = seat.hub, seat.agent
    began = time.monotonic()
    driver = DriverProcess(seat.workspace, drive.process_env(seat.env), "--harness", harness,
                           "--harness-path", str(binary(harness)), "--debounce", "0")
    try:
        driver.until("AGORA_DRIVE state=armed reason=idle next=wake", TURN_TIMEOUT)
        armed = time.monotonic()
        # The first reply needs no ref; the rest are scripted as soon as the ask has one, long before
        # the turn's second request (the harness starts, asks the model, runs the tool first).
        model.script(answer("REF")[0])
        sent = time.monotonic()
        ref = ask(hub, agent)
        model.script(*answer(ref)[1:])
        assert driver.until("AGORA_DRIVE state=turn", TURN_TIMEOUT).startswith(
            "AGORA_DRIVE state=turn reason=obliged turn=1 owed=1 refs=1 session=new")
        end = driver.until("AGORA_DRIVE event=turn_end", TURN_TIMEOUT)
        assert " status=ok stage=hub reason=answered turn=1 " in end, f"{end}\nstderr: {driver.stderr()[-3000:]}"
        assert f" tools={tools} " in end, end  # the stream's tool calls: inbox, reply, ack (and any before)
        ended = time.monotonic()
        driver.until("AGORA_DRIVE state=armed reason=idle next=wake", TURN_TIMEOUT)
        _answered(seat, ref)
        prompts = drive.driven_prompts(model)
        assert prompts and f"seat {agent}" in prompts[0] and ref in prompts[0], (
            f"the model never got the driver's prompt: {[s.user_text[-300:] for s in model.main_requests()[:2]]}")
        if answer is drive.mcp_answer:  # agora mcp's own answers came back: the MCP path, not the shell
            assert any(f"acked {ref}" in s.user_text for s in model.main_requests()), (
                [s.user_text[-300:] for s in model.main_requests()])
    except BaseException:
        driver.kill()
        raise
    assert driver.stop() == 0, driver.stderr()[-2000:]
    assert driver.lines[-1] == "AGORA_DRIVE state=stopped reason=signal", driver.lines
    latency.record(f"agora drive ({harness}{label}): start -> armed", [armed - began])
    latency.record(f"agora drive ({harness}{label}): ask sent -> turn_end answered", [ended - sent],
                   "one real turn: harness start, four model requests, three tool calls, the hub's sweep")


@pytest.mark.harness("claude")
@pytest.mark.timeout(150)
def test_claude_driver_answers_an_ask_dm_in_one_real_turn_then_rearms(claude_seat, model):
    """The `agora drive` process with the real `claude -p`: the model answers through its Bash tool,
    running the seat's `agora inbox`, `agora send --reply-to` and `agora ack` as the prompt names them."""
    _drive_process(claude_seat, model, "claude",
                   lambda ref: drive.shell_answer(claude_seat.agent, claude_seat.home, ref))


@pytest.mark.harness("claude")
@pytest.mark.timeout(150)
def test_a_claude_turn_that_runs_an_operator_command_acts_as_its_seat_and_is_refused(claude_seat, model):
    """A prompt-injected turn runs `agora agent rekey` on another seat, which its allow rule (the agora
    executable, any arguments) lets through: the command must act as the turn's seat, so the hub refuses it.
    That needs AGORA_DRIVE_TURN to reach the command through Claude's Bash tool, which only the real CLI can
    show (a review had such a turn print the other seat's new key)."""
    home = claude_seat.home
    kept = (home / "keys" / f"{PEER}.key").read_text()
    rekey = [wiring.agora_executable(), "agent", "rekey", PEER, "--home", str(home)]

    def injected(ref: str) -> list[dict]:
        return [{"shell": wiring.shell(rekey)}, *drive.shell_answer(claude_seat.agent, home, ref)]

    _drive_process(claude_seat, model, "claude", injected, " (an operator command)", tools=4)
    assert (home / "keys" / f"{PEER}.key").read_text() == kept
    assert any("reserved to the local operator" in s.user_text for s in model.main_requests()), (
        [s.user_text[-400:] for s in model.main_requests()])


@pytest.mark.harness("claude")
@pytest.mark.timeout(150)
def test_claude_driver_answers_an_ask_dm_through_the_wired_mcp_tools(claude_seat, model):
    """The same with Claude through the wired `.mcp.json` server: the adapter's --allowedTools lets a
    driven turn call `mcp__agora` tools with nobody to approve them (no workspace trust needed)."""
    _drive_process(claude_seat, model, "claude", drive.mcp_answer)


@pytest.mark.harness("claude")
@pytest.mark.timeout(150)
def test_claude_driver_waits_for_an_agora_mcp_slow_to_start(claude_seat, model, tmp_path):
    """A loaded host, made on purpose: the wired `agora mcp` sleeps 6 s before it starts (a sitecustomize),
    longer than Claude takes to its first model request (about 3 s here). Claude connects MCP servers in the
    background by default and leaves a late one's tools out, silently; the driver tells it to wait for them
    (agora_setup/harnesses/claude.MCP_WAIT), so the turn has the agora tools and answers. The CI of 7c1976f
    lost them this way on a loaded host (a remote seat's turn: tools=0, debt-left)."""
    claude_seat.env = with_sitecustomize(claude_seat.env, tmp_path / "slow-mcp",
                                         "import sys\nimport time\n\nif sys.argv[1:2] == ['mcp']:\n    time.sleep(6)\n")
    _drive_process(claude_seat, model, "claude", drive.mcp_answer, ", agora mcp slow to start")


@pytest.mark.harness("codex")
@pytest.mark.timeout(150)
def test_codex_driver_answers_an_ask_dm_through_the_wired_mcp_tools(codex_seat, model):
    """The `agora drive` process with the real `codex exec --json`: the model answers through the wired
    `agora mcp` server (check_inbox, send_message with reply_to, ack_inbox). The private CODEX_HOME trusts
    the workspace (tests/harness/codex.py): without it Codex ignores .codex/ and the preflight refuses."""
    _drive_process(codex_seat, model, "codex", drive.mcp_answer)


@pytest.mark.harness("claude")
@pytest.mark.timeout(150)
def test_claude_driver_of_a_remote_seat_answers_over_the_hubs_port(remote, model, tmp_path):
    """A seat on another host (`agora setup --url --key-stdin`, a home of its own with the hub's URL): the
    driver rings on the hub's pushes over its remote port, and the turn's model answers through the wired
    `agora mcp`, which reaches the hub there too."""
    workspace, seat_home = tmp_path / "rws", tmp_path / "seathome"
    (workspace / ".claude").mkdir(parents=True)
    wire_remote_seat(remote.url, remote.keys["alice"], workspace, seat_home, "alice")
    remote.add_agent(PEER, liveness_mode="always-on")
    seat = Wired(remote, workspace, tmp_path / "private", agent="alice")
    seat.env = claude.environment(model.url, seat.private)
    try:
        _drive_process(seat, model, "claude", drive.mcp_answer, ", a remote seat over ws")
    finally:
        hooks.end(seat_home, spare=set())


def _claude_env(seat, monkeypatch) -> None:
    """The in-process driver hands the harness os.environ (scrubbed) plus the adapter's: the private
    environment goes there, and the turns fail fast on a provider error."""
    for name, value in {**seat.env, **NO_RETRIES}.items():
        monkeypatch.setenv(name, value)


@pytest.mark.harness("claude")
@pytest.mark.timeout(180)
def test_claude_turns_failing_on_429_back_off_holding_the_wake_and_the_recovered_model_answers(
        claude_seat, model, monkeypatch):
    hub, agent = claude_seat.hub, claude_seat.agent
    _claude_env(claude_seat, monkeypatch)
    ref = ask(hub, agent)
    model.script(*[{"status": 429, "body": RATE_LIMITED}] * 3, *drive.shell_answer(agent, hub.home, ref))
    clock = drive.Clock()
    waits, took = [], []
    with drive.owning(claude_seat):
        driver = drive.in_process(claude_seat, clock)
        for n in range(3):
            began = time.monotonic()
            done = driver.step()
            took.append(time.monotonic() - began)
            assert (done.state, done.verdict.status, done.verdict.reason) == ("turn", "failed", "provider"), (
                done.verdict)
            held = driver.step()
            assert held.state == "backoff" and held.reason == f"streak-{n + 1}", held
            assert owed(hub, agent) == 1, "the wake was dropped, not held"
            waits.append(held.next_at - clock.now)
            clock.now = held.next_at
        assert waits == [60.0, 120.0, 240.0]
        done = driver.step()
    assert (done.verdict.status, done.verdict.reason) == ("ok", "answered"), done.verdict
    assert driver.state.streak == 0 and driver.state.retry_at is None
    _answered(claude_seat, ref)
    # One model request per failed turn (no retry inside the turn), four for the answering one.
    assert len(model.main_requests()) == 3 + 4, [s.user_text[-200:] for s in model.main_requests()]
    assert drive.driven_prompts(model), "the model never got the driver's prompt"
    latency.record("agora drive (claude): a turn failing on 429 with no retries", took)


@pytest.mark.harness("claude")
@pytest.mark.timeout(150)
def test_claude_wake_held_by_a_failed_turn_is_answered_after_the_driver_restarts(claude_seat, model, monkeypatch):
    hub, agent = claude_seat.hub, claude_seat.agent
    _claude_env(claude_seat, monkeypatch)
    ref = ask(hub, agent)
    model.script({"status": 429, "body": RATE_LIMITED}, *drive.shell_answer(agent, hub.home, ref))
    clock = drive.Clock()
    with drive.owning(claude_seat):
        done = drive.in_process(claude_seat, clock).step()
    assert (done.verdict.status, done.verdict.reason) == ("failed", "provider"), done.verdict
    with drive.owning(claude_seat):  # a new driver process: its state from drive-<id>.state
        restarted = drive.in_process(claude_seat, clock)
        held = restarted.step()
        assert (held.state, held.next_at - clock.now) == ("backoff", 60.0), held
        assert owed(hub, agent) == 1
        clock.now = held.next_at
        done = restarted.step()
    assert (done.verdict.status, done.verdict.reason) == ("ok", "answered"), done.verdict
    _answered(claude_seat, ref)


# Codex retries a 429 itself per its provider's request_max_retries and stream_max_retries (its config's
# model_providers.<id> keys); 0 makes the turn fail at the first answer, as the user's own -c would.
CODEX_NO_RETRIES = ("-c", "model_providers.scripted.request_max_retries=0",
                    "-c", "model_providers.scripted.stream_max_retries=0")


@pytest.mark.harness("codex")
@pytest.mark.timeout(150)
def test_codex_turn_failing_on_429_backs_off_holding_the_wake_and_the_recovered_model_answers(
        codex_seat, model, monkeypatch):
    hub, agent = codex_seat.hub, codex_seat.agent
    for name, value in codex_seat.env.items():
        monkeypatch.setenv(name, value)
    ref = ask(hub, agent)
    model.script({"status": 429, "body": {"error": {"type": "rate_limit_exceeded", "message": "slow down"}}},
                 *drive.mcp_answer(ref))
    clock = drive.Clock()
    with drive.owning(codex_seat):
        driver = drive.in_process(codex_seat, clock, "codex", CODEX_NO_RETRIES)
        done = driver.step()
        assert (done.verdict.status, done.verdict.reason) == ("failed", "provider"), done.verdict
        held = driver.step()
        assert (held.state, held.next_at - clock.now) == ("backoff", 60.0) and owed(hub, agent) == 1, held
        clock.now = held.next_at
        done = driver.step()
    assert (done.verdict.status, done.verdict.reason) == ("ok", "answered"), done.verdict
    _answered(codex_seat, ref)


@pytest.mark.harness("claude")
@pytest.mark.timeout(150)
def test_claude_work_chunk_goes_on_with_the_seats_open_claim_and_writes_a_receipt(claude_seat, model, monkeypatch):
    """Nothing waits in the inbox and the seat owns an open claim: ONE work chunk in the real `claude -p`,
    whose model re-reads the claim and writes a receipt through its shell, as the chunk's prompt names
    the commands; the driver judges it by the claim (progress), not by the inbox."""
    hub, agent = claude_seat.hub, claude_seat.agent
    _claude_env(claude_seat, monkeypatch)
    with hub.client(agent) as seat:
        ref = seat.call("claims.open", channel="commons", title="port the parser")["ref"]
    exe = wiring.agora_executable()
    model.script({"shell": wiring.shell(wiring.claim(exe, agent, hub.home, "show", ref))},
                 {"shell": wiring.shell(wiring.claim(exe, agent, hub.home, "receipt", ref, "parser ported"))},
                 {"text": "one slice done"})
    with drive.owning(claude_seat):
        driver = drive.in_process(claude_seat, drive.Clock())
        done = driver.step()
    assert (done.state, done.verdict.status, done.verdict.reason) == ("chunk", "ok", "progress"), (
        done.verdict, [s.user_text[-300:] for s in model.main_requests()])
    with hub.client(agent) as seat:
        claim = seat.call("claims.show", ref=ref)
    assert claim["receipts"] == 1 and claim["receipts_shown"][0]["text"] == "parser ported", claim
    prompts = drive.driven_prompts(model)
    assert prompts and f"owns {ref} (version 1)" in prompts[0] and "port the parser" not in prompts[0]
    assert driver.state.chunk_session is not None and driver.state.session is None  # its own session
