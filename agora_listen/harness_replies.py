"""How each harness wants a hook to answer: the one place its contract is spelled.

A re-prompt at a turn's end, the context a session starts with, and silence. Each fact is from the
harness's own documentation or source, cited beside it; opencode's hooks are JS plugins, so its
shape is ours, read by the plugin `agora setup` writes (agora-hook(1)).
"""

from __future__ import annotations

import json


class Reply:
    """What the hook process does: its exit status and what it writes to stdout and stderr.

    A plain class: a dataclass costs the hook `inspect` (a quarter of its start-up), a namedtuple
    the exec of its generated source.
    """

    __slots__ = ("status", "stdout", "stderr")

    def __init__(self, status: int = 0, stdout: str = "", stderr: str = ""):
        self.status, self.stdout, self.stderr = status, stdout, stderr

    def __repr__(self) -> str:
        return f"Reply({self.status!r}, {self.stdout!r}, {self.stderr!r})"


def _json(value: dict) -> str:
    return json.dumps(value) + "\n"


def _claude(reason: str) -> Reply:
    # Claude Code (code.claude.com/docs/en/hooks, "Exit code 2 behavior"): a Stop hook's exit 2 blocks
    # the stop and its stderr is fed to the model as the next turn.
    return Reply(2, "", reason)


def _cursor(reason: str) -> Reply:
    # Cursor (cursor.com/docs/agent/hooks, "stop"): `followup_message` is submitted as the next user message.
    return Reply(0, _json({"followup_message": reason}))


def _codex(reason: str) -> Reply:
    # Codex (codex-rs/hooks/src/events/stop.rs): exit 0 with decision "block" continues the turn and the
    # reason reaches the model as a user message. It has no loop cap: our backoff is the cap.
    return Reply(0, _json({"decision": "block", "reason": reason}))


def _gemini(reason: str) -> Reply:
    # Gemini CLI (geminicli.com/docs/hooks/reference, "AfterAgent"): decision "deny" rejects the final
    # response and sends `reason` to the agent as a new prompt.
    return Reply(0, _json({"decision": "deny", "reason": reason}))


def _opencode(reason: str) -> Reply:
    return Reply(0, _json({"followup": reason}))


REPROMPT = {"claude": _claude, "cursor": _cursor, "codex": _codex, "gemini": _gemini, "opencode": _opencode}

# A SessionStart hook's added context. Claude Code and Codex (codex-rs/hooks/src/events/session_start.rs,
# schema session-start.command.output) and Gemini CLI ("SessionStart") read
# hookSpecificOutput.additionalContext; Cursor's sessionStart reads `additional_context`; opencode's plugin ours.
_START = {
    "claude": lambda text: {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}},
    "codex": lambda text: {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}},
    "gemini": lambda text: {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}},
    "cursor": lambda text: {"additional_context": text},
    "opencode": lambda text: {"context": text},
}


def reprompt(harness: str, reason: str) -> Reply:
    """Keep the model working with `reason` as its next prompt."""
    return REPROMPT[harness](reason)


def context(harness: str, text: str) -> Reply:
    """Add `text` to a starting session's context."""
    return Reply(0, _json(_START[harness](text)))


def quiet(harness: str, note: str = "") -> Reply:
    """Let the turn end (or the session start) untouched; `note`, if any, goes to stderr for a human.

    Gemini CLI parses a hook's stdout as JSON ("Silence is Mandatory"), so it gets an empty object;
    the others take an empty stdout as "nothing to do".
    """
    return Reply(0, "{}\n" if harness == "gemini" else "", note)
