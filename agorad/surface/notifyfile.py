"""Reading a notify file's last delivery id: shared by the hub and the listener.

Kept free of the database and other heavy imports, for `agora listen`.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False  # typing's, without importing typing: `agora listen` imports this
if TYPE_CHECKING:
    from pathlib import Path

_TAIL_BYTES = 64 * 1024


def last_id_in(path: Path) -> int | None:
    """The id of the last complete line of `path`, or None when it holds none."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - _TAIL_BYTES))
            tail = handle.read()
    except (FileNotFoundError, IsADirectoryError):
        return None
    for line in reversed(tail.split(b"\n")):
        if not line:  # the end of the file, after its last newline: nothing to parse
            continue
        try:
            return int(json.loads(line)["id"])
        except (ValueError, KeyError, TypeError):
            continue  # an empty or torn line: look further back
    return None
