"""Cursor: what `agora setup` writes for it, and how `agora drive` runs and reads a turn.

Cursor's stop hook returns `followup_message`; its agent CLI is not on a registry this
project's tests reach, so its wiring is tested by file content.

The drive adapter is built from Cursor's documentation alone and tested only against a
scripted stand-in (tests/drive/fake_harness.py), never the real `cursor-agent`: each fact
below names the page it comes from. Its provider and context-window words are guesses
until someone records a real failing stream.
"""

from __future__ import annotations

import re

from agora_setup import rules
from agora_setup.harnesses import events, preflight as checks
from agora_setup.harnesses.turns import Outcome, Turn
from agora_setup.harnesses.common import BACKSTOP_TIMEOUT, MCP_NAME, Seat, command, mcp_entry, only_with_mcp
from agora_setup.targets import JsonEntry, JsonHooks, OwnedFile, Target
from agorad.surface import wiring

# The paths whose presence says a workspace uses cursor.
SIGNS = (".cursor", ".cursorrules")


def targets(seat: Seat) -> list[Target]:
    backstop = {"command": command(wiring.backstop(seat.exe, "cursor", seat.agent, seat.home)),
                "timeout": BACKSTOP_TIMEOUT}
    return [
        OwnedFile(seat.at(".cursor/rules/agora.mdc"), content=rules.cursor(seat.exe, seat.agent, seat.home),
                  marker=rules.CURSOR_MARKER),
        JsonHooks(seat.at(".cursor/hooks.json"), events={"stop": [backstop]}, grouped=False, top={"version": 1}),
        *only_with_mcp(seat, [JsonEntry(seat.at(".cursor/mcp.json"), keys=("mcpServers",), name=MCP_NAME,
                                         value=mcp_entry(seat))]),
    ]


# --- agora drive ---------------------------------------------------------------------------------

# Print mode and its NDJSON stream (cursor.com/docs/cli/reference/output-format: "--output-format" is
# valid only with --print; stream-json is one event a line ending in a terminal `result` on success).
PRINT = ["-p", "--output-format", "stream-json"]
# Nobody answers a prompt in an unattended turn (cursor.com/docs/cli/reference/parameters):
# --force allows every command unless the user's permissions deny it (without it, headless edits and
# commands are only proposed: cursor.com/docs/cli/headless), --approve-mcps starts the workspace's MCP
# servers (agora's, from .cursor/mcp.json) without asking, --trust trusts the workspace without asking.
UNATTENDED = ["--force", "--approve-mcps", "--trust"]
OWNED = ("-p", "--print", "--output-format", "--resume", "--continue", "--workspace", "--stream-partial-output")
# Unverified: Cursor documents no error words. On failure it "exits with a non-zero code and writes an
# error message to stderr", the stream possibly ending without its terminal event (output-format page);
# these patterns read that message the way the Claude and Codex ones read theirs.
PROVIDER = re.compile(r"\b(?:429|5\d\d)\b|rate.?limit|overloaded|resource.?exhausted|high demand|unavailable", re.I)
CONTEXT_FULL = re.compile(r"prompt is too long|context (?:window|length)", re.I)


class CursorDrive:
    executable = "cursor-agent"

    def argv(self, exe: str, turn: Turn) -> list[str]:
        # --workspace: which .cursor/mcp.json and rules load (parameters page); the driver's cwd is the
        # same directory, said twice so nothing depends on Cursor's guess from the cwd.
        argv = [exe, *PRINT, *UNATTENDED, "--workspace", str(turn.workspace)]
        if turn.session:
            argv += ["--resume", turn.session]  # `--resume [chatId]` (parameters page)
        if turn.model:
            argv += ["--model", turn.model]
        # The prompt is the last positional argument (parameters page); with no recorded run, whether
        # the CLI honours `--` is unknown, so none is passed.
        return [*argv, *turn.args, turn.prompt]

    def environment(self, turn: Turn) -> dict[str, str]:
        return {}

    def reader(self) -> "CursorReader":
        return CursorReader()

    def preflight(self, exe: str, turn: Turn, env: dict | None) -> str | None:
        """`cursor-agent --help` runs (the binary is there and starts), and lists every flag the turn uses:
        with no copy of the CLI here, how it treats an unknown flag was never measured, but its help
        lists its options (parameters page), so a flag missing from it is one this version lacks."""
        refused = checks.owned_flags(turn.args, OWNED, "cursor") or checks.mcp_unserved(
            turn.workspace / ".cursor" / "mcp.json")
        if refused:
            return refused
        probe = checks.run([exe, "--help"], turn.workspace, env)
        if isinstance(probe, str):
            return probe
        if probe.status != 0:
            return f"`{exe} --help` exited {probe.status}: {events.last_line(probe.said) or 'no output'}"
        flags = [a.split("=", 1)[0] for a in self.argv(exe, turn)[1:-1] if a.startswith("--")]
        unknown = [flag for flag in flags if flag not in probe.stdout]
        if unknown:
            return f"{exe} does not list {', '.join(unknown)} in its --help: too old for agora drive, or renamed"
        return None



class CursorReader:
    """stream-json as the output-format page documents it: `system/init` (session_id), `assistant`
    messages, `tool_call` events with subtype `started` then `completed` (call_id; the call itself under a
    `<kind>ToolCall` key), and a terminal `result` (subtype `success`, is_error, result, session_id)."""

    def __init__(self):
        self.outcome = Outcome()
        self._terminal = False
        self._calls: set[str] = set()

    def feed(self, line: str) -> None:
        event = events.parse(line)
        if event is None:
            return
        if event.get("session_id") and not self.outcome.session:
            self.outcome.session = str(event["session_id"])
        kind = event.get("type")
        if kind == "tool_call":
            self._calls.add(str(event.get("call_id") or len(self._calls)))
            self.outcome.tool_calls = len(self._calls)
        elif kind == "result":
            self._result(event)

    def _result(self, event: dict) -> None:
        self._terminal = self.outcome.terminal = True
        if event.get("session_id"):
            self.outcome.session = str(event["session_id"])
        failed = bool(event.get("is_error")) or event.get("subtype") != "success"
        self.outcome.completed = not failed
        if failed:
            self._failed(str(event.get("result") or event.get("subtype") or "the turn failed"))

    def _failed(self, message: str) -> None:
        self.outcome.error = events.quote(message)
        self.outcome.provider = bool(PROVIDER.search(message))
        self.outcome.context_full = bool(CONTEXT_FULL.search(message))

    def finish(self, status: int | None, stderr: str) -> Outcome:
        if not self._terminal:
            self.outcome.completed = False
            self._failed(events.ended_without_terminal(status, stderr))
        return self.outcome


DRIVE = CursorDrive()
