"""Claude Code: what `agora setup` writes for it, and how `agora drive` runs and reads a turn.

Claude runs an `asyncRewake` command hook in the background and turns its exit 2 into a
new turn with its stderr (measured, README "Harness tests").

A driven turn is `claude -p --output-format stream-json --verbose`; every fact the
adapter rests on was measured with Claude Code 2.1.197 against the scripted model
(tests/harness/model_server.py), and its recorded streams are tests/drive/streams/claude-*.
"""

from __future__ import annotations

import dataclasses
import os

from agora_setup import rules
from agora_setup.harnesses import events, preflight as checks
from agora_setup.harnesses.common import BACKSTOP_TIMEOUT, MCP_NAME, Seat, command, mcp_entry, only_with_mcp
from agora_setup.harnesses.turns import Outcome, Turn
from agora_setup.targets import Composite, JsonEntry, JsonHooks, JsonListItems, MarkedBlock, Target
from agorad.surface import settings, wiring

# The paths whose presence says a workspace uses claude.
SIGNS = (".claude", "CLAUDE.md")


def targets(seat: Seat) -> list[Target]:
    listen = {"type": "command", "command": command(wiring.hook_listen(seat.exe, seat.agent, seat.home)),
              "asyncRewake": True, "timeout": settings.HOOK_TIMEOUT}
    backstop = {"type": "command", "command": command(wiring.backstop(seat.exe, "claude", seat.agent, seat.home)),
                "timeout": BACKSTOP_TIMEOUT}
    settings_json = seat.at(".claude/settings.json")
    return [
        Composite(settings_json, parts=(
            # Never UserPromptSubmit: a listener armed at every prompt is a wake storm.
            JsonHooks(settings_json, events={"SessionStart": [listen], "Stop": [backstop, listen]}),
            # The project's .mcp.json server without the approval dialog, and its tools without a
            # permission prompt each (Claude honours both once the workspace is trusted).
            *only_with_mcp(seat, [
                JsonListItems(settings_json, keys=("enabledMcpjsonServers",), items=(MCP_NAME,)),
                JsonListItems(settings_json, keys=("permissions", "allow"), items=(f"mcp__{MCP_NAME}",)),
            ]),
        )),
        *only_with_mcp(seat, [JsonEntry(seat.at(".mcp.json"), keys=("mcpServers",), name=MCP_NAME,
                                         value={"type": "stdio", **mcp_entry(seat)})]),
        MarkedBlock(seat.at("CLAUDE.md"), body=rules.claude(seat.exe, seat.agent, seat.home)),
    ]


# --- agora drive ---------------------------------------------------------------------------------

# The flags the adapter sets: a user's --harness-arg repeating one would change the stream the reader
# reads or the session that runs.
OWNED = ("-p", "--print", "--output-format", "--input-format", "--verbose", "--resume", "-r", "--continue", "-c",
         "--session-id", "--fork-session")
# What `claude -p` prints when stream-json lacks --verbose (2.1.197, measured): its check runs after the
# option parser and before any hook, MCP server or model request, even with --resume of a real session.
VERBOSE_REQUIRED = "requires --verbose"
# Claude's own words when a prompt overflows the context window (the binary's constant "Prompt is too
# long"; measured: a 400 "prompt is too long" answer gives the result text "Prompt is too long · ...").
CONTEXT_FULL = "Prompt is too long"
# The prompt a preflight's probe carries when the driver's preflight turn has none: with an empty prompt
# `claude -p` stops first with "Error: Input must be provided either through stdin or as a prompt argument
# when using --print" and never reaches the --verbose check (2.1.197, measured by tests/harness/test_drive.py,
# whose `agora drive --harness claude` was refused at arm by it). The probe never reaches the model.
PROBE_PROMPT = "[agora drive] preflight"
# What a result's `errors` says when --resume names a session Claude does not have (measured: exit 1, a
# result of subtype error_during_execution and no model request).
SESSION_GONE = "No conversation found"
# A driven turn answers through `agora mcp`'s tools, and Claude Code connects MCP servers in the background
# unless told not to (2.1.197: with MCP_CONNECTION_NONBLOCKING unset or true, nothing waits for them): its
# first model request offers only the tools of the servers connected by then, and says nothing of the rest.
# On a loaded host agora mcp (the SDK's import alone about 0.45 s) came too late: a harness run's turn got no
# agora tools and left its debt (tests/harness/test_drive.py, a seat started slowly on purpose). Told to
# block, Claude waits for each server up to MCP_CONNECT_TIMEOUT_MS (5 s unless set) before the first request
# (read in 2.1.197's code, and measured: the slow seat's turn answers). A value the caller set is kept; the
# cost, a server that hangs delays every turn's first request by up to the timeout (agora-drive(1)).
MCP_WAIT = {"MCP_CONNECTION_NONBLOCKING": "0", "MCP_CONNECT_TIMEOUT_MS": "15000"}
# The assistant message's `error` field for a provider failure (measured: 429 -> "rate_limit",
# 500 and 529 -> "server_error"; a 400 gives "invalid_request", which is not the provider's).
PROVIDER_ERRORS = ("rate_limit", "server_error", "overloaded")


def allowed_tools(agora: str) -> list[str]:
    """What a driven turn may call without a prompt nobody answers (in -p an unpermitted call is denied).

    `mcp__agora` allows every tool of the seat's MCP server (README "MCP"; measured: `check_inbox` ran
    with no denial). `Bash(<agora> *)`
    allows the shell to run the absolute agora executable with any arguments and nothing else:
    measured with 2.1.197, `agora inbox ...` runs, while `touch x` and `agora inbox ...; touch y` are
    denied (the permission docs, code.claude.com/docs/en/permissions: a prefix rule never covers a
    command chained after it; `Bash(<agora>:*)` behaves the same, the older spelling)."""
    return [f"mcp__{MCP_NAME}", f"Bash({agora} *)"]


class ClaudeDrive:
    executable = "claude"

    def argv(self, exe: str, turn: Turn) -> list[str]:
        argv = [exe, "-p", "--output-format", "stream-json", "--verbose",
                "--allowedTools", *allowed_tools(wiring.agora_executable())]
        if turn.session:
            argv += ["--resume", turn.session]
        if turn.model:
            argv += ["--model", turn.model]
        # `--` ends the options: --allowedTools takes every word after it, and a prompt may start with "-"
        # (measured: `claude -p ... -- "-dash prompt"` sends the prompt as given).
        return [*argv, *turn.args, "--", turn.prompt]

    def environment(self, turn: Turn) -> dict[str, str]:
        return {name: os.environ.get(name) or value for name, value in MCP_WAIT.items()}

    def reader(self) -> "ClaudeReader":
        return ClaudeReader()

    def preflight(self, exe: str, turn: Turn, env: dict | None) -> str | None:
        """The turn's own command line without --verbose: Claude's option parser rejects an unknown flag or
        a bad value ("error: unknown option '--x'"), and when it accepts them all it stops at the
        --verbose check, before hooks or a model request (measured, 2.1.197; told to wait for the MCP servers,
        it waited for them before that check, so the probe is told not to). A turn that
        resumes a session Claude does not have is refused here too ("No conversation found ...")."""
        refused = checks.owned_flags(turn.args, OWNED, "claude") or checks.mcp_unserved(
            turn.workspace / ".mcp.json")
        if refused:
            return refused
        argv = self.argv(exe, dataclasses.replace(turn, prompt=turn.prompt or PROBE_PROMPT))
        argv.remove("--verbose")  # the first: the adapter's own, before `--` and the prompt
        # The probe reaches no model, so it need not wait for the MCP servers as a turn does (MCP_WAIT: the
        # wait came before the --verbose check, measured: arm 1.4 -> 3.1 s with agora mcp alone).
        probe = checks.run(argv, turn.workspace, {**(os.environ if env is None else env),
                                                  "MCP_CONNECTION_NONBLOCKING": "1"})
        if isinstance(probe, str):
            return probe
        if VERBOSE_REQUIRED in probe.said:
            return None
        return f"claude refused the turn's command line: {events.error_line(probe.said) or f'exit {probe.status}'}"



class ClaudeReader:
    """stream-json, one event a line: `system/init` (session_id, tools, mcp_servers), `assistant` messages
    whose `tool_use` blocks are the tool calls, `user` tool results, `system/api_retry` per provider retry,
    and last `result`: the terminal event (subtype `success` or `error_*`, `is_error`, `result` text,
    `api_error_status`, `errors`, `permission_denials`). All measured with 2.1.197."""

    def __init__(self):
        self.outcome = Outcome()
        self._terminal = False
        self._provider_kind: str | None = None

    def feed(self, line: str) -> None:
        event = events.parse(line)
        if event is None:
            return
        if event.get("session_id") and not self.outcome.session:
            self.outcome.session = str(event["session_id"])
        kind = event.get("type")
        if kind == "assistant":
            self._assistant(event)
        elif kind == "system" and event.get("subtype") == "api_retry":
            # Claude retries a 429 or 5xx itself (CLAUDE_CODE_MAX_RETRIES times) and says so before each wait.
            self.outcome.notes.append(f"claude retried the model request after HTTP {event.get('error_status')}")
        elif kind == "result":
            self._result(event)

    def _assistant(self, event: dict) -> None:
        message = event.get("message") or {}
        blocks = message.get("content") if isinstance(message, dict) else None
        self.outcome.tool_calls += sum(1 for b in blocks or [] if isinstance(b, dict) and b.get("type") == "tool_use")
        if event.get("error") in PROVIDER_ERRORS:
            self._provider_kind = event["error"]

    def _result(self, event: dict) -> None:
        self._terminal = self.outcome.terminal = True
        outcome = self.outcome
        if event.get("session_id"):
            outcome.session = str(event["session_id"])  # a result names the session it ran in
        failed = bool(event.get("is_error")) or event.get("subtype") != "success"
        outcome.completed = not failed
        for denial in event.get("permission_denials") or []:
            if isinstance(denial, dict):
                said = events.quote(denial.get("tool_input") or "")
                outcome.notes.append(f"claude denied a {denial.get('tool_name')} call: {said}")
        if not failed:
            return
        # A failed turn's words: the result text (an API error), else its `errors` (a resume that
        # found no session: "No conversation found with session ID: ..."), else the subtype.
        errors = event.get("errors") if isinstance(event.get("errors"), list) else []
        words = event.get("result") or "; ".join(map(str, errors)) or event.get("subtype") or "the turn failed"
        outcome.error = events.quote(words)
        if any(str(error).startswith(SESSION_GONE) for error in errors):
            outcome.session = None  # resuming it again fails the same way: the next turn starts a new one
            outcome.session_gone = True
        status = event.get("api_error_status")
        outcome.provider = _provider_status(status) or self._provider_kind is not None
        outcome.context_full = str(event.get("result") or "").startswith(CONTEXT_FULL)

    def finish(self, status: int | None, stderr: str) -> Outcome:
        if not self._terminal:
            self.outcome.completed = False
            self.outcome.error = events.ended_without_terminal(status, stderr, skip=_STDERR_CHATTER)
            self.outcome.context_full = CONTEXT_FULL in stderr
        return self.outcome


# Claude's stderr line about a workspace whose settings it ignores until trusted: routine for a driven
# seat (the permissions come from --allowedTools), never the reason a turn failed.
_STDERR_CHATTER = ("Ignoring ",)


def _provider_status(status) -> bool:
    """429 (rate limit), 529 (overloaded) and any 5xx: the provider's, worth a retry later (measured:
    Claude sets `api_error_status` to the HTTP status it gave up on)."""
    return isinstance(status, int) and (status == 429 or status >= 500)


DRIVE = ClaudeDrive()
