"""The rig itself: each real harness CLI runs a shell command through its own tool against the scripted model;
the protocol adapters turn a `{"tool": NAME}` reply into a call of the tool each harness offers.

If these fail, the scenario tests' failures say nothing about Agora.
"""

from __future__ import annotations

import json

import pytest

from tests.harness import claude, codex
from tests.harness.protocols import anthropic, openai_responses


@pytest.fixture
def plain(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace


@pytest.mark.harness("claude")
def test_claude_runs_a_scripted_bash_command(plain, model, tmp_path):
    model.script({"shell": "echo rig-$((6 * 7))"}, {"text": "finished"})
    done = claude.print_turn(plain, claude.environment(model.url, tmp_path), "run the command")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "finished"
    turn = model.main_requests()
    assert [s.protocol for s in turn] == ["anthropic", "anthropic"]
    assert "rig-42" in turn[1].user_text  # the tool really ran: the shell computed it
    assert not model.errors


@pytest.mark.harness("codex")
def test_codex_runs_a_scripted_shell_command(plain, model, tmp_path):
    model.script({"shell": "echo rig-$((6 * 7))"}, {"text": "finished"})
    done = codex.exec_turn(plain, codex.environment(model.url, tmp_path, plain), "run the command")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "finished"
    turn = model.main_requests()
    assert [s.protocol for s in turn] == ["openai_responses", "openai_responses"]
    assert "rig-42" in turn[1].user_text
    assert not model.errors


def _events(chunks) -> list[dict]:
    """The JSON payloads of a streamed reply's `data:` lines."""
    text = b"".join(chunks).decode()
    return [json.loads(line[len("data: "):]) for line in text.splitlines() if line.startswith("data: {")]


def test_a_tool_reply_calls_the_offered_tool_by_its_name_or_its_mcp_suffix():
    """`{"tool": NAME}`: Claude's flat `mcp__agora__NAME`, Codex's NAME in namespace `mcp__agora`; else text naming the offer."""
    reply = {"tool": "check_inbox", "input": {"limit": 5}}
    claude_body = {"stream": True, "tools": [{"name": "Bash"}, {"name": "mcp__agora__check_inbox"}]}
    starts = [e["content_block"] for e in _events(anthropic.respond(reply, claude_body)[2])
              if e["type"] == "content_block_start"]
    assert starts[0]["type"] == "tool_use" and starts[0]["name"] == "mcp__agora__check_inbox"
    codex_body = {"tools": [{"type": "function", "name": "exec_command"},
                            {"type": "namespace", "name": "mcp__agora", "tools": [{"type": "function", "name": "check_inbox"}]}]}
    done = [e["item"] for e in _events(openai_responses.respond(reply, codex_body)[2])
            if e["type"] == "response.output_item.done"]
    assert done[0]["type"] == "function_call" and done[0]["namespace"] == "mcp__agora"
    assert done[0]["name"] == "check_inbox" and done[0]["arguments"] == '{"limit": 5}'
    missing = [e["item"] for e in _events(openai_responses.respond({"tool": "nope"}, codex_body)[2])
               if e["type"] == "response.output_item.done"]
    assert missing[0]["type"] == "message" and "mcp__agora/check_inbox" in missing[0]["content"][0]["text"]
