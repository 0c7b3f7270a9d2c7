"""Reading a harness's output line by line: what every turn reader shares.

A reader is fed whatever the harness printed, JSON or not, and must never
raise (agora_setup.harnesses.turns.Reader): these helpers turn a line into an
event or nothing, and a stderr tail into the one line worth quoting.
"""

from __future__ import annotations

import json

QUOTE_LIMIT = 500  # characters of a harness's own words kept in an Outcome's error or note


def parse(line: str) -> dict | None:
    """The JSON object on `line`, or None for anything else (blank, text, a JSON array or scalar)."""
    text = line.strip()
    if not text.startswith("{"):
        return None
    try:
        event = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return event if isinstance(event, dict) else None


def quote(text: object) -> str:
    """A harness's words, one line, bounded: for an error or a note in the failures log."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= QUOTE_LIMIT else flat[:QUOTE_LIMIT - 1] + "…"


def last_line(stderr: str, skip: tuple[str, ...] = ()) -> str | None:
    """The last non-blank line of `stderr` that starts with none of `skip` (a harness's routine chatter)."""
    for line in reversed(stderr.splitlines()):
        line = line.strip()
        if line and not line.startswith(skip):
            return quote(line)
    return None


def error_line(text: str) -> str | None:
    """The line where an option parser says what it refused ("error: ..."), else the last line: clap
    (Codex) ends its message with a usage hint, commander (Claude Code) with the error itself."""
    for line in text.splitlines():
        if line.strip().lower().startswith("error"):
            return quote(line.strip())
    return last_line(text)


def ended_without_terminal(status: int | None, stderr: str, skip: tuple[str, ...] = ()) -> str:
    """Why a turn with no terminal event failed, in the words the driver logs."""
    how = "was killed" if status is None else f"exited {status}"
    said = last_line(stderr, skip)
    return f"the harness {how} without its terminal event" + (f": {said}" if said else "")
