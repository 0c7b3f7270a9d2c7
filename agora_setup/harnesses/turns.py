"""What `agora drive` needs from a harness it runs unattended: the command line of one bounded turn,
and a reader of that turn's event stream that says how the turn went.

A harness module that can be driven exposes `DRIVE`, an object with:

    executable                  the program's name, looked up on PATH unless the user names a path;
                                None when the turn names its program (the `command` harness)
    argv(exe, turn) -> list     the whole command line of one turn (a new session, or a resume)
    reader() -> Reader          a fresh reader for one turn's output
    preflight(exe, turn, env)   at arm, before any wake: None when the harness would run this turn's
                                command line, else its own words for why not (unknown flag, missing
                                runtime); it must not spend a model request
    environment(turn) -> dict   optional: variables the turn's process gets on top of the driver's
                                environment (the `command` harness passes the prompt this way, since
                                a user's program takes no prompt argument); `environment()` below
                                reads it, {} when a harness has none

The turn runs with the workspace as its working directory and /dev/null as its stdin.

Exit status 0 is not success: a harness can exit 0 having done nothing (an error event, no
terminal event). The reader's Outcome is what the driver judges a turn by.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class Turn:
    """One turn the driver wants run."""
    prompt: str
    workspace: Path
    session: str | None = None  # resume this harness session; None starts a new one
    model: str | None = None  # --model, when the user chose one
    args: tuple[str, ...] = ()  # more arguments for the harness, as the user gave them (--harness-arg)
    command: tuple[str, ...] = ()  # the `command` harness: the user's program and its arguments


@dataclass
class Outcome:
    """What a turn's own output said about it."""
    completed: bool = False  # the harness's terminal event arrived and says the turn finished
    terminal: bool = False  # the terminal event arrived, whatever it said (no terminal event: a crash or a cut)
    error: str | None = None  # the harness's own words, when it said the turn failed
    provider: bool = False  # the failure was the model provider's (429, 5xx, overloaded): worth a retry later
    context_full: bool = False  # the harness said the session's context is too large: start a new one
    session_gone: bool = False  # the harness has no such session to resume (deleted, expired): start a new one
    session: str | None = None  # the harness session the turn ran in, to resume next time
    tool_calls: int = 0  # tool calls the turn made (a turn with none cannot have reached the hub)
    notes: list[str] = field(default_factory=list)  # anything else worth a line in the failures log


class Reader(Protocol):
    outcome: Outcome

    def feed(self, line: str) -> None:
        """One line of the turn's stdout, without its newline (JSON or not: a reader never raises)."""

    def finish(self, status: int | None, stderr: str) -> Outcome:
        """After the turn: its exit status (None when killed) and the tail of its stderr."""


def environment(drive, turn: Turn) -> dict[str, str]:
    """What `drive` adds to a turn's environment: its `environment(turn)`, or nothing."""
    extra = getattr(drive, "environment", None)
    return dict(extra(turn)) if extra is not None else {}
