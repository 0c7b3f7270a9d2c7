"""The `command` harness: `agora drive` runs a program of the user's own as a seat's turn.

Drive-only: `agora setup` wires nothing for it (no `targets`), and it is not in
vocab.HARNESSES, only in vocab.DRIVE_HARNESSES.

The contract a program keeps (agora-drive(1)):

    argv         the user's command (--command), then any --harness-arg words, as given
    environment  AGORA_DRIVE_PROMPT   the turn's prompt (what to answer, and how)
                 AGORA_DRIVE_SESSION  the session the program last reported, when there is one
                 AGORA_DRIVE_MODEL    the --model the user chose, when they chose one
    stdin        /dev/null; the working directory is the seat's workspace
    exit status  0 the turn completed; 75 (EX_TEMPFAIL, sysexits.h) a transient failure, the
                 provider's or the network's, worth a retry later; anything else the turn failed
    stdout       optionally one line, the last of its kind winning:
                 {"agora_drive": "result", "session": "...", "tool_calls": N, "error": "..."}
                 `session` is handed back in AGORA_DRIVE_SESSION next turn; `tool_calls` counts the
                 program's calls to the hub (agora commands or MCP tools); `error` says the turn
                 failed, in the program's words, whatever the exit status; `provider` and
                 `context_full` (booleans) say why, as a harness's own events would. Every field
                 is optional; other lines are ignored.
"""

from __future__ import annotations

import os
import shutil

from agora_setup.harnesses import events
from agora_setup.harnesses.turns import Outcome, Turn

PROMPT_VARIABLE = "AGORA_DRIVE_PROMPT"
SESSION_VARIABLE = "AGORA_DRIVE_SESSION"
MODEL_VARIABLE = "AGORA_DRIVE_MODEL"
EX_TEMPFAIL = 75  # sysexits.h: "temporary failure ... the user is invited to retry later"
RESULT_TAG = "result"  # the value of "agora_drive" on the program's result line


class CommandDrive:
    executable = None  # the user's command names its program (Turn.command)

    def argv(self, exe: str | None, turn: Turn) -> list[str]:
        return [*turn.command, *turn.args]

    def environment(self, turn: Turn) -> dict[str, str]:
        variables = {PROMPT_VARIABLE: turn.prompt}
        if turn.session:
            variables[SESSION_VARIABLE] = turn.session
        if turn.model:
            variables[MODEL_VARIABLE] = turn.model
        return variables

    def reader(self) -> "CommandReader":
        return CommandReader()

    def preflight(self, exe: str | None, turn: Turn, env: dict | None) -> str | None:
        """The command is given and names a program that can run; nothing is started (a user's program
        has no option check that spends nothing)."""
        if not turn.command:
            return "the command harness needs a command to run (agora drive --command ...)"
        program = turn.command[0]
        path = (env or os.environ).get("PATH")
        found = shutil.which(program, path=path) if os.sep not in program else (
            program if os.access(os.path.join(turn.workspace, program), os.X_OK) else None)
        if found is None:
            return f"cannot run {program!r}: not an executable file" + ("" if os.sep in program else " on PATH")
        return None


class CommandReader:
    def __init__(self):
        self.outcome = Outcome()
        self._said_error = False

    def feed(self, line: str) -> None:
        event = events.parse(line)
        if event is None or event.get("agora_drive") != RESULT_TAG:
            return
        outcome = self.outcome
        outcome.terminal = True  # the program's own result line: its words decide, not its exit status
        if isinstance(event.get("session"), str) and event["session"]:
            outcome.session = event["session"]
        if isinstance(event.get("tool_calls"), int) and event["tool_calls"] >= 0:
            outcome.tool_calls = event["tool_calls"]
        self._said_error = bool(event.get("error"))
        outcome.error = events.quote(event["error"]) if self._said_error else None
        outcome.provider = event.get("provider") is True
        outcome.context_full = event.get("context_full") is True

    def finish(self, status: int | None, stderr: str) -> Outcome:
        outcome = self.outcome
        outcome.completed = status == 0 and not self._said_error
        if status == EX_TEMPFAIL:
            outcome.provider = True
        if not outcome.completed and not self._said_error:
            how = "was killed" if status is None else f"exited {status}"
            meaning = " (EX_TEMPFAIL: a transient failure)" if status == EX_TEMPFAIL else ""
            said = events.last_line(stderr)
            outcome.error = f"the command {how}{meaning}" + (f": {said}" if said else "")
        return outcome


DRIVE = CommandDrive()
