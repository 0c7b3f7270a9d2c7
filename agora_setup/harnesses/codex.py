"""Codex: what `agora setup` writes for it, and how `agora drive` runs and reads a turn.

Codex needs matcher groups in hooks.json (a flat list registers nothing) and silently skips
an `async` hook (measured, README "Harness tests").

A driven turn is `codex exec --json` (a new thread) or `codex exec resume --json <id>`; the
facts the adapter rests on were measured with Codex 0.171.0 against the scripted model
(tests/harness/model_server.py), and its recorded streams are tests/drive/streams/codex-*.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

from agora_setup import rules
from agora_setup.harnesses import events, preflight as checks
from agora_setup.harnesses.turns import Outcome, Turn
from agora_setup.harnesses.common import (BACKSTOP_TIMEOUT, MCP_NAME, SHARED_RULES, Seat, command, mcp_entry,
                                         only_with_mcp, start)
from agora_setup.targets import JsonHooks, MarkedBlock, Target, TomlBlock
from agorad.surface import settings, wiring

# The paths whose presence says a workspace uses codex.
SIGNS = (".codex",)


def targets(seat: Seat) -> list[Target]:
    def handler(argv):  # never `async = true`: Codex silently skips such a hook
        return {"type": "command", "command": command(argv), "timeout": BACKSTOP_TIMEOUT}

    return [
        JsonHooks(seat.at(".codex/hooks.json"), events={
            "SessionStart": [handler(start(seat, "codex"))],
            "Stop": [handler(wiring.backstop(seat.exe, "codex", seat.agent, seat.home))],
        }),
        # An unattended seat must never freeze on an approval dialog: approve agora's tools (Codex's
        # default_tools_approval_mode, codex-rs/config/src/mcp_types.rs). `required`: Codex 0.171 builds
        # a turn's first request only with the servers ready by then, silently leaving the rest out
        # (measured: half the first requests lacked agora's tools); a required server is waited for.
        *only_with_mcp(seat, [TomlBlock(seat.at(".codex/config.toml"), data={"mcp_servers": {MCP_NAME: {
            **mcp_entry(seat), "default_tools_approval_mode": "approve", "required": True,
            "tool_timeout_sec": settings.MCP_TOOL_TIMEOUT}}})]),
        MarkedBlock(seat.at(SHARED_RULES), body=rules.codex(seat.exe, seat.agent, seat.home)),
    ]


# --- agora drive ---------------------------------------------------------------------------------

# Flags accepted by both `codex exec` and `codex exec resume` (0.171.0 `--help` of each; `resume` has no
# --sandbox, so the sandbox is set through -c, which both take). Each -c is why an unattended turn works:
UNATTENDED = [
    "--json",
    # A seat's workspace need not be a git repository; without it codex exec refuses to start there.
    "--skip-git-repo-check",
    # Nobody is there to approve: never ask (the Codex TUI asks and waits, tests/harness/codex.py Tui).
    "-c", 'approval_policy="never"',
    # The model's shell may write only the workspace, but may connect: measured, in the workspace-write
    # sandbox `agora inbox` fails "connecting to .../agorad.sock: Operation not permitted" unless
    # network_access is on; with it, it reaches the hub (new and resumed threads alike).
    "-c", 'sandbox_mode="workspace-write"', "-c", "sandbox_workspace_write.network_access=true",
    # No traffic but the model's: with analytics on, an offline `codex exec` took 8.3 s instead of 2.1 s
    # (measured); an unattended turn never updates itself.
    "-c", "analytics.enabled=false", "-c", "check_for_update_on_startup=false",
]
OWNED = ("--json", "--experimental-json", "--last")
# Codex's words for its errors (codex-rs/core/src/error.rs, CodexErr; each measured where noted):
# 429 -> "exceeded retry limit, last status: 429 Too Many Requests" (measured), 500 -> "We're currently
# experiencing high demand, ..." (measured), 503 -> "unexpected status 503 Service Unavailable: ..."
# (measured), a 429 insufficient_quota -> "Quota exceeded. ..." (measured), a dropped stream, a failed
# connection, a plan's usage limit.
PROVIDER = re.compile(r"status:? (?:429|5\d\d)\b|experiencing high demand|stream disconnected before completion"
                      r"|Connection failed|Error while reading the server response|usage limit|Quota exceeded")
# A 400 context_length_exceeded -> "Codex ran out of room in the model's context window. ..." (measured).
CONTEXT_FULL = "ran out of room in the model's context window"
# The item types that are tool calls: the shell (`command_execution`) and MCP tools (`mcp_tool_call`),
# the two ways a turn reaches the hub (measured: `agora inbox` and agora's `check_inbox`).
TOOL_ITEMS = ("command_execution", "mcp_tool_call")
# Codex's stderr said the workspace's .codex/ was ignored (measured, an untrusted project).
UNTRUSTED = "Untrusted project-local configuration is disabled"
# Routine stderr lines, never the reason a turn failed (measured on every run from a /tmp CODEX_HOME,
# and with stdin /dev/null).
_STDERR_CHATTER = ("WARNING: proceeding", "Reading additional input from stdin", "warning:")


class CodexDrive:
    executable = "codex"

    def argv(self, exe: str, turn: Turn) -> list[str]:
        # Measured: `codex exec resume [OPTIONS] <id> -- <prompt>` continues the thread and keeps its id.
        head = [exe, "exec", "resume"] if turn.session else [exe, "exec"]
        model = ["--model", turn.model] if turn.model else []
        session = [turn.session] if turn.session else []
        # `--` before the prompt: one starting with "-" is the prompt, not a flag (measured).
        return [*head, *UNATTENDED, *model, *turn.args, *session, "--", turn.prompt]

    def environment(self, turn: Turn) -> dict[str, str]:
        return {}

    def reader(self) -> "CodexReader":
        return CodexReader()

    def preflight(self, exe: str, turn: Turn, env: dict | None) -> str | None:
        """The turn's command line with --help before its prompt: clap rejects an unknown argument first
        ("error: unexpected argument '--x' found", exit 2) and otherwise prints help and exits 0, with no
        thread started (measured, 0.171.0; `-c` values are not checked this way)."""
        refused = (checks.owned_flags(turn.args, OWNED, "codex")
                   or checks.mcp_unserved(turn.workspace / ".codex" / "config.toml", _names_agora_server)
                   or _untrusted(turn.workspace, env if env is not None else os.environ))
        if refused:
            return refused
        argv = self.argv(exe, turn)
        cut = argv.index("--")
        probe = checks.run([*argv[:cut], "--help"], turn.workspace, env)
        if isinstance(probe, str):
            return probe
        if probe.status == 0:
            return None
        return f"codex refused the turn's command line: {events.error_line(probe.said) or f'exit {probe.status}'}"


def _names_agora_server(text: str) -> bool:
    try:
        return MCP_NAME in (tomllib.loads(text).get("mcp_servers") or {})
    except (tomllib.TOMLDecodeError, AttributeError, RecursionError):
        return False


def _untrusted(workspace: Path, env) -> str | None:
    """When the workspace has a .codex/ that Codex would ignore: it reads project config (agora's MCP
    server) and hooks only for a project its user config trusts, and otherwise says so on stderr and runs
    without them (measured: the model's request then lacks agora's tools)."""
    if not (workspace / ".codex").is_dir():
        return None
    codex_home = Path(env.get("CODEX_HOME") or Path(env.get("HOME") or Path.home()) / ".codex")
    config = codex_home / "config.toml"
    try:
        projects = tomllib.loads(config.read_text()).get("projects") or {}
    except (OSError, tomllib.TOMLDecodeError, RecursionError):
        projects = {}
    for place in (workspace, *workspace.parents):  # Codex trusts a project by its root: the repo's, or cwd
        level = (projects.get(str(place)) or {}).get("trust_level")
        if level == "trusted":
            return None
        if level == "untrusted":
            break
    return (f"codex would ignore {workspace / '.codex'} (agora's MCP server and hooks): the project is not "
            f"trusted in {config}; trust it once (run `codex` in {workspace} and accept, or add "
            f'[projects."{workspace}"] trust_level = "trusted")')


class CodexReader:
    """`codex exec --json` events, one a line: `thread.started` (thread_id: the session to resume),
    `turn.started`, `item.started`/`item.completed` (item.type `command_execution`, `mcp_tool_call`,
    `agent_message`, and `error` for a warning that does not end the turn), then `turn.completed` or an
    `error` event and `turn.failed` (error.message). All measured with 0.171.0."""

    def __init__(self):
        self.outcome = Outcome()
        self._terminal = False
        self._tool_items: set[str] = set()

    def feed(self, line: str) -> None:
        event = events.parse(line)
        if event is None:
            return
        kind = event.get("type")
        if kind == "thread.started" and event.get("thread_id"):
            self.outcome.session = str(event["thread_id"])
        elif kind in ("item.started", "item.completed") and isinstance(event.get("item"), dict):
            self._item(event["item"])
        elif kind == "turn.completed":
            self._terminal = self.outcome.terminal = True
            self.outcome.completed = True
        elif kind == "turn.failed":
            self._terminal = self.outcome.terminal = True
            self.outcome.completed = False
            error = event.get("error")
            self._failed(str((error.get("message") if isinstance(error, dict) else error) or "the turn failed"))
        elif kind == "error":
            # Said before turn.failed; alone it is a retry notice ("Reconnecting...") and the turn goes on.
            if event.get("message"):
                self.outcome.notes.append(f"codex: {events.quote(event['message'])}")

    def _item(self, item: dict) -> None:
        if item.get("type") in TOOL_ITEMS:
            self._tool_items.add(str(item.get("id")))
            self.outcome.tool_calls = len(self._tool_items)
        elif item.get("type") == "error" and item.get("message"):
            note = f"codex: {events.quote(item['message'])}"
            if note not in self.outcome.notes:
                self.outcome.notes.append(note)

    def _failed(self, message: str) -> None:
        self.outcome.error = events.quote(message)
        said = f"codex: {self.outcome.error}"  # the `error` event before turn.failed says the same
        self.outcome.notes = [note for note in self.outcome.notes if note != said]
        self.outcome.provider = bool(PROVIDER.search(message))
        self.outcome.context_full = CONTEXT_FULL in message

    def finish(self, status: int | None, stderr: str) -> Outcome:
        if UNTRUSTED in stderr:
            self.outcome.notes.append(f"codex: {UNTRUSTED} (the workspace's .codex/ was not read)")
        if not self._terminal:
            self.outcome.completed = False
            self._failed(events.ended_without_terminal(status, stderr, skip=_STDERR_CHATTER))
        return self.outcome


DRIVE = CodexDrive()
