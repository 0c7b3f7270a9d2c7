"""The driver's stdout: one `AGORA_DRIVE` line per pass and per turn, and nothing else.

Every value on a line is a word from a vocabulary, a number, or a hub-validated id, so a line
can be parsed by splitting on spaces and no message text ever reaches it. Anything for humans
goes to stderr.
"""

from __future__ import annotations

import sys

PREFIX = "AGORA_DRIVE"


def emit(**fields) -> None:
    """One line: `AGORA_DRIVE key=value ...`, flushed at once (a supervisor may be reading it live)."""
    text = " ".join(f"{key}={_word(value)}" for key, value in fields.items() if value is not None)
    sys.stdout.write(f"{PREFIX} {text}\n")
    sys.stdout.flush()


def say(text: str) -> None:
    """A line for humans, on stderr, made one line whatever it holds."""
    printable = "".join(c if c.isprintable() else " " for c in str(text))  # no terminal escapes from a turn
    sys.stderr.write("agora drive: " + " ".join(printable.split()) + "\n")
    sys.stderr.flush()


def _word(value) -> str:
    if isinstance(value, float):
        return f"{value:.1f}"
    text = str(value)
    return "".join(c if c.isalnum() or c in "._:@#,/+-" else "?" for c in text) or "-"
