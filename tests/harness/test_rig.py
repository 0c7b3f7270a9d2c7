"""The rig itself: each real harness CLI runs a shell command through its own tool against the scripted model.

If these fail, the scenario tests' failures say nothing about Agora.
"""

from __future__ import annotations

import pytest

from tests.harness import claude, codex


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
