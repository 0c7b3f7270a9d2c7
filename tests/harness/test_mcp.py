"""The MCP entries `agora setup` writes, driven by the real Claude Code and Codex CLIs: check_inbox, read_message, ack_inbox, claims.

The workspace's .mcp.json (Claude) and .codex/config.toml block (Codex) are
used as setup wrote them; the harness starts the real `agora mcp` from them
against a real hub, and the scripted model calls its tools by name. Each
tool's result must come back to the model in the next request, and the hub
must show the message acked at the end. Three runs: `claude -p`, `codex exec`
(headless seats), and the interactive Codex TUI in a pseudo-terminal, the one
place where Codex asks for approval (`codex exec` runs with approval: never).
`claude -p` and `codex exec` run again for a remote seat (`agora setup --url`),
whose `agora mcp` reaches the hub over its WebSocket port.

Test-side additions, each a stand-in for what a user does once, not wiring:
- Claude: `--allowedTools mcp__agora` on the command line. Setup writes
  `permissions.allow: ["mcp__agora"]` into .claude/settings.json, but Claude
  Code ignores it until the user has accepted the workspace's trust dialog
  (2.1.197 says so on stderr); in -p an unpermitted call is denied. And
  `MCP_CONNECTION_NONBLOCKING=0` (agora_setup/harnesses/claude.MCP_WAIT, what
  `agora drive` sets and the README tells a script of its own to set): Claude
  connects MCP servers in the background and leaves one not up yet out of the
  first request (tests/harness/test_drive.py shows it with a slow server).
- Nothing for Codex: setup's entry is `required = true`, because Codex 0.171
  builds a turn's first request with the MCP servers that are ready by then
  and leaves the others out, silently; `agora mcp` takes about 1 s to answer
  `initialize` here, so without it about half the first requests carried no
  agora tools (2 of 4 idle, 5 of 6 with the CPUs busy). A required server is
  waited for.
"""

from __future__ import annotations

import time

import pytest

from agora_setup.harnesses.claude import MCP_WAIT
from tests.harness import claude, codex, hook_processes as hooks, latency
from tests.harness.conftest import PEER
from tests.remote_seat import wire_remote_seat

TITLE = "review 0009"
BODY = "the schema change in 0009 needs your eyes"
TURN_TIMEOUT = 60.0


def _send(hub, agent: str) -> str:
    with hub.client(PEER) as peer:
        return peer.call("messages.send", target=f"@{agent}", title=TITLE, body=BODY)["ref"]


def _unread(hub, agent: str) -> list[str]:
    with hub.client(agent) as seat:
        return [m["ref"] for c in seat.call("inbox.check")["channels"] for m in c["messages"]]


def _script(ref: str) -> list[dict]:
    return [{"tool": "check_inbox", "input": {}},
            {"tool": "read_message", "input": {"ref": ref}},
            {"tool": "ack_inbox", "input": {"refs": [ref]}},
            {"text": "read and acked"}]


def _check_the_calls(model, hub, agent: str, ref: str, harness: str) -> None:
    """The four main requests of the turn: each after the first carries the previous tool's result."""
    requests = model.main_requests()
    assert len(requests) >= 4, f"{len(requests)} model requests; user texts: {[s.user_text[-300:] for s in requests]}"
    _, listing, read, ack = requests[:4]
    # A tool the request did not offer is answered with text naming what it did offer: shown here.
    assert "(scripted model)" not in listing.user_text, listing.user_text[-1500:]
    assert ref in listing.user_text and TITLE in listing.user_text and "unread 1" in listing.user_text, (
        f"check_inbox's listing is not in the next request: {listing.user_text[-800:]!r}")
    assert "<<<AGORA-MESSAGE " in read.user_text and BODY in read.user_text and "<<<AGORA-MESSAGE-END" in read.user_text, (
        f"read_message's fenced body is not in the next request: {read.user_text[-800:]!r}")
    assert f"acked {ref}" in ack.user_text, f"ack_inbox's answer is not in the next request: {ack.user_text[-800:]!r}"
    assert _unread(hub, agent) == [], f"{ref} is still unread on the hub after ack_inbox"
    # From the model's side: the request that called a tool -> the next request, carrying its result.
    seconds = [after.at - before.at for before, after in zip(requests[:3], requests[1:4])]
    latency.record(f"MCP tool call -> its result in the next request ({harness})", seconds,
                   "check_inbox, read_message, ack_inbox; the harness's own handling included")


@pytest.mark.harness("claude")
@pytest.mark.timeout(120)
def test_claude_calls_agora_tools_through_the_wired_mcp_json(claude_seat, model):
    hub, agent = claude_seat.hub, claude_seat.agent
    ref = _send(hub, agent)
    assert _unread(hub, agent) == [ref]
    model.script(*_script(ref))
    began = time.monotonic()
    turn = claude.print_turn(claude_seat.workspace, {**claude_seat.env, **MCP_WAIT}, "check your mail",
                             TURN_TIMEOUT, allow=("mcp__agora",))
    assert turn.returncode == 0, turn.stderr[-2000:]
    offered = [t.get("name") for t in model.main_requests()[0].body.get("tools", [])]
    # Told to, Claude Code 2.1.197 waits for its MCP servers (up to MCP_CONNECT_TIMEOUT_MS) before the first
    # request; `agora mcp` takes about 1 s to answer `initialize` here.
    assert "mcp__agora__check_inbox" in offered, (
        f"the first request, {model.main_requests()[0].at - began:.2f} s after claude started, offers no agora tools "
        f"(a server not connected by then is left out): {offered}")
    latency.record("claude -p start -> its first model request (agora mcp connected)",
                   [model.main_requests()[0].at - began])
    _check_the_calls(model, hub, agent, ref, "Claude Code")
    assert turn.stdout.strip().endswith("read and acked"), turn.stdout[-500:]


@pytest.mark.harness("claude")
@pytest.mark.timeout(150)
def test_claude_calls_agora_tools_of_a_remote_seat_over_the_hubs_port(remote, model, tmp_path):
    """A workspace on the seat's "host" wired with `agora setup --url --key-stdin`: its .mcp.json runs
    `agora mcp --home` for a home whose hub.url names the hub's remote port, and the real Claude Code's
    model reads and acks its mail through those tools over the port, each result in its next request."""
    workspace, seat_home, agent = tmp_path / "rws", tmp_path / "seathome", "alice"
    (workspace / ".claude").mkdir(parents=True)
    wire_remote_seat(remote.url, remote.keys[agent], workspace, seat_home, agent)
    remote.add_agent(PEER, liveness_mode="always-on")
    ref = _send(remote, agent)
    model.script(*_script(ref))
    try:
        turn = claude.print_turn(workspace, {**claude.environment(model.url, tmp_path / "private"), **MCP_WAIT},
                                 "check your mail", TURN_TIMEOUT, allow=("mcp__agora",))
        assert turn.returncode == 0, turn.stderr[-2000:]
        offered = [t.get("name") for t in model.main_requests()[0].body.get("tools", [])]
        assert "mcp__agora__check_inbox" in offered, f"the first request offers no agora tools: {offered}"
        _check_the_calls(model, remote, agent, ref, "Claude Code, a remote seat over ws")
    finally:
        hooks.end(seat_home, spare=set())


@pytest.mark.harness("codex")
@pytest.mark.timeout(120)
def test_codex_exec_calls_agora_tools_through_the_wired_config_toml(codex_seat, model):
    """Headless: `codex exec` runs with approval: never, so no prompt can hold it (with the mode `prompt`
    the calls ran too, 0.171); the TUI test below is where the wired `approve` mode matters."""
    hub, agent = codex_seat.hub, codex_seat.agent
    ref = _send(hub, agent)
    assert _unread(hub, agent) == [ref]
    model.script(*_script(ref))
    began = time.monotonic()
    turn = codex.exec_turn(codex_seat.workspace, codex_seat.env, "check your mail", TURN_TIMEOUT)
    assert turn.returncode == 0, turn.stderr[-2000:]
    first = model.main_requests()[0].body.get("tools", [])
    namespaces = {t.get("name"): [inner.get("name") for inner in t.get("tools", [])]
                  for t in first if t.get("type") == "namespace"}
    assert "check_inbox" in namespaces.get("mcp__agora", []), f"the first request offers no agora tools: {namespaces}"
    latency.record("codex exec start -> its first model request (agora mcp required, connected)",
                   [model.main_requests()[0].at - began])
    _check_the_calls(model, hub, agent, ref, "Codex exec")
    assert turn.stdout.strip().endswith("read and acked"), turn.stdout[-500:]


@pytest.mark.harness("codex")
@pytest.mark.timeout(150)
def test_codex_exec_calls_agora_tools_of_a_remote_seat_over_the_hubs_port(remote, model, tmp_path):
    """As the Claude Code test above, with the .codex/config.toml entry setup --url writes."""
    workspace, seat_home, agent = tmp_path / "rws", tmp_path / "seathome", "alice"
    (workspace / ".codex").mkdir(parents=True)
    wire_remote_seat(remote.url, remote.keys[agent], workspace, seat_home, agent, harness="codex")
    remote.add_agent(PEER, liveness_mode="always-on")
    ref = _send(remote, agent)
    model.script(*_script(ref))
    try:
        turn = codex.exec_turn(workspace, codex.environment(model.url, tmp_path / "private", workspace),
                               "check your mail", TURN_TIMEOUT)
        assert turn.returncode == 0, turn.stderr[-2000:]
        _check_the_calls(model, remote, agent, ref, "Codex exec, a remote seat over ws")
    finally:
        hooks.end(seat_home, spare=set())


def _claim_script() -> list[dict]:
    return [{"tool": "claims", "input": {"action": "open", "channel": "commons", "title": TITLE}},
            {"tool": "claims", "input": {"action": "receipt", "ref": "claim:1", "text": "schema read; data next"}},
            {"text": "claimed"}]


def _check_the_claim(model, hub, agent: str) -> None:
    """The claims tool opened a claim and wrote its receipt, and each result reached the next request."""
    requests = model.main_requests()
    assert len(requests) >= 3, f"{len(requests)} model requests; user texts: {[s.user_text[-300:] for s in requests]}"
    _, opened, receipted = requests[:3]
    assert "open: claim:1 is at v1 (open)" in opened.user_text, opened.user_text[-800:]
    assert "receipt 1 written on claim:1" in receipted.user_text, receipted.user_text[-800:]
    shown = hub.call("claims.show", ref="claim:1")
    assert (shown["owner"], shown["title"], shown["receipts"]) == (agent, TITLE, 1), shown


@pytest.mark.harness("claude")
@pytest.mark.timeout(120)
def test_claude_opens_a_claim_and_writes_its_receipt_through_the_claims_tool(claude_seat, model):
    model.script(*_claim_script())
    turn = claude.print_turn(claude_seat.workspace, {**claude_seat.env, **MCP_WAIT}, "take the review",
                             TURN_TIMEOUT, allow=("mcp__agora",))
    assert turn.returncode == 0, turn.stderr[-2000:]
    _check_the_claim(model, claude_seat.hub, claude_seat.agent)


@pytest.mark.harness("codex")
@pytest.mark.timeout(120)
def test_codex_exec_opens_a_claim_and_writes_its_receipt_through_the_claims_tool(codex_seat, model):
    model.script(*_claim_script())
    turn = codex.exec_turn(codex_seat.workspace, codex_seat.env, "take the review", TURN_TIMEOUT)
    assert turn.returncode == 0, turn.stderr[-2000:]
    _check_the_claim(model, codex_seat.hub, codex_seat.agent)


@pytest.mark.harness("codex")
@pytest.mark.timeout(120)
def test_interactive_codex_calls_agora_tools_with_no_approval_prompt(codex_seat, model):
    """The TUI, where approval prompts live (`codex exec` never asks): the wired `approve` mode lets each call run.

    The user opens Codex, waits for it to start (its MCP servers with it),
    types a prompt; no key is pressed after. With the entry's approval mode
    set to `prompt` instead (measured with 0.171), the TUI signals
    `state=blocked:...:kind=permission`, asks "Allow the agora MCP server to
    run tool "check_inbox"?", and no second request comes."""
    hub, agent = codex_seat.hub, codex_seat.agent
    ref = _send(hub, agent)
    model.script(*_script(ref))
    tui = codex.Tui(codex_seat.workspace, codex_seat.env)
    try:
        tui.wait_idle()
        tui.submit("check your mail")
        try:
            model.wait_for(lambda s: not s.side and f"acked {ref}" in s.user_text, TURN_TIMEOUT,
                           what="the request carrying ack_inbox's answer")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\nthe TUI's screen ends: {tui.text()[-1500:]!r}") from None
        _check_the_calls(model, hub, agent, ref, "Codex TUI")
        assert not tui.blocked(), f"the TUI waited on the user mid-turn: {tui.text()[-1500:]!r}"
    finally:
        tui.kill()
