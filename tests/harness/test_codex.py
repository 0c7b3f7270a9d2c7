"""Codex in a workspace wired by `agora setup`: `codex exec` fires the wired SessionStart and Stop hooks.

Trust: the private CODEX_HOME trusts the workspace and each run passes
--dangerously-bypass-hook-trust (tests/harness/codex.py); a user trusts both
in Codex itself, as `agora setup` tells them.
"""

from __future__ import annotations

import json
import time

import pytest

from agorad.surface import wiring
from agorad.surface.paths import hook_stamp
from tests.harness import codex
from tests.harness.conftest import PEER

pytestmark = [pytest.mark.harness("codex")]


def fired(home, agent: str, hook: str) -> float | None:
    """When `agora hook HOOK` last ran for the seat, from its stamp (None: never)."""
    try:
        return json.loads(hook_stamp(home, agent, hook).read_text()).get("fired")
    except (OSError, ValueError):
        return None


@pytest.mark.timeout(120)
def test_exec_turn_fires_the_wired_hooks_and_the_backstop_holds_it_to_unread_mail(codex_seat, model):
    """(d) One `codex exec` turn: both hooks stamp; SessionStart's context reaches the model; Stop re-prompts while a DM is unread."""
    hub, agent = codex_seat.hub, codex_seat.agent
    with hub.client(PEER) as peer:
        ref = peer.call("messages.send", target=f"@{agent}", title="review 0006", body="please")["ref"]
    began = time.time()
    model.script({"text": "nothing to do"}, {"shell": codex_seat.command(wiring.ack_all)}, {"text": "acked"})
    done = codex.exec_turn(codex_seat.workspace, codex_seat.env, "carry on")
    assert done.returncode == 0, done.stderr[-2000:]
    for hook in ("start", "stop"):
        when = fired(hub.home, agent, hook)
        assert when is not None and when >= began - 1, (
            f"hook {hook} did not stamp {hook_stamp(hub.home, agent, hook)} during the turn (fired={when})")
    requests = model.main_requests()
    # SessionStart's context reaches the model as a developer message: the seat, what waits, the inbox command.
    context = [text for text in _messages(requests[0].body, "developer") if f"seat {agent}" in text]
    assert context and "1 unread" in context[0] and codex_seat.command(wiring.inbox) in context[0], (
        f"the first request has no SessionStart context from agora: {_messages(requests[0].body, 'developer')}")
    reminded = [s for s in requests if "<hook_prompt" in s.user_text]
    assert reminded, f"no request carried the Stop hook's reason; user texts: {[s.user_text[-300:] for s in requests]}"
    assert ref in reminded[0].user_text, reminded[0].user_text[-800:]
    assert requests.index(reminded[0]) == 1, "the reminder came on the Stop after the first ending, not later"
    with hub.client(agent) as seat:
        unread = [m["ref"] for c in seat.call("inbox.check")["channels"] for m in c["messages"]]
    assert unread == [], f"{ref} is still unread after the backstop's re-prompt"
    assert done.stdout.strip().endswith("acked")


def _messages(body: dict, role: str) -> list[str]:
    """The text of each input message with this role in a Responses request."""
    return ["".join(part.get("text", "") for part in item.get("content") or [] if isinstance(part, dict))
            for item in body.get("input", []) if item.get("type") == "message" and item.get("role") == role]


@pytest.mark.timeout(120)
def test_a_turn_that_keeps_ignoring_its_mail_still_ends(codex_seat, model):
    """Codex has no cap on Stop re-prompts (later Stops only say stop_hook_active): the backstop's backoff is the cap."""
    hub, agent = codex_seat.hub, codex_seat.agent
    with hub.client(PEER) as peer:
        ref = peer.call("messages.send", target=f"@{agent}", title="review 0008", body="please")["ref"]
    model.script({"text": "not now"}, {"text": "still not now"}, {"text": "no"})
    done = codex.exec_turn(codex_seat.workspace, codex_seat.env, "carry on", timeout=30)
    assert done.returncode == 0, done.stderr[-2000:]
    reminders = [s for s in model.main_requests() if "<hook_prompt" in s.user_text]
    assert len(reminders) == 1 and ref in reminders[0].user_text, [s.user_text[-300:] for s in reminders]
    with hub.client(agent) as seat:
        assert [m["ref"] for c in seat.call("inbox.check")["channels"] for m in c["messages"]] == [ref]
