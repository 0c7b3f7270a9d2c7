"""One line per event on stderr: `agorad 2026-11-29T16:52:53Z event key=value ...`.

Callers pass only identifiers and counts; keys and message text never reach a log.
"""

from __future__ import annotations

import sys
import time


def log(event: str, **fields) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    parts = " ".join(f"{k}={_value(v)}" for k, v in fields.items())
    sys.stderr.write(f"agorad {stamp} {event} {parts}".rstrip() + "\n")
    sys.stderr.flush()


def _value(value) -> str:
    text = str(value)
    if not text or any(c.isspace() or not c.isprintable() for c in text):
        return repr(text)
    return text
