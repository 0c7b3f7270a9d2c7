"""What a harness hands a hook on stdin, read without ever blocking a turn's end.

Harnesses write one JSON object and (mostly) close the pipe; but a terminal, or a pipe held open
and never written, must not hold the hook. So it reads only what arrives within
settings.HOOK_STDIN_WAIT, and stops early as soon as what it has parses as JSON.
"""

from __future__ import annotations

import json
import os
import select
import time

from agorad.surface import settings

MAX_BYTES = 1 << 20  # a Stop payload carries the last assistant message; more than this is not ours to parse


def read_ready(fd: int = 0, wait: float = settings.HOOK_STDIN_WAIT) -> dict:
    """The JSON object on `fd` if one arrives within `wait` seconds, else {} (nothing, not JSON, a tty, closed)."""
    try:
        if os.isatty(fd):
            return {}
    except OSError:  # no stdin at all
        return {}
    data, deadline = b"", time.monotonic() + wait
    while len(data) < MAX_BYTES:
        left = deadline - time.monotonic()
        try:
            ready = select.select([fd], [], [], max(0.0, left))[0]
            chunk = os.read(fd, 65536) if ready else b""
        except (OSError, ValueError):
            break
        if not chunk:  # end of input, or nothing more within the wait
            break
        data += chunk
        parsed = _object(data)
        if parsed is not None:
            return parsed
    return _object(data) or {}


def _object(data: bytes) -> dict | None:
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):  # partial, or not JSON (UnicodeDecodeError is a ValueError)
        return None
    return value if isinstance(value, dict) else None
