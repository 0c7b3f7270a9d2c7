"""Reading a notify file's last delivery id: shared by the hub and the listener.

Kept free of the database and other heavy imports, for `agora listen`.
"""

from __future__ import annotations

import os

from agorad.surface import cjson
from agorad.surface.filenames import NotRegularFile, open_regular

TYPE_CHECKING = False  # typing's, without importing typing: `agora listen` imports this
if TYPE_CHECKING:
    from pathlib import Path

_TAIL_BYTES = 64 * 1024

# The largest delivery id believed when read from a file (a notify line's, a listener's saved place): start-up
# raises a seat's ids above what its files show (notify_reconcile.py), and a file edited by hand to name a
# larger one pushed them past what SQLite holds (every later send to the seat failed) or JSON readers keep exact.
MAX_FILE_ID = 2**53 - 1


def last_id_in(path: Path) -> int | None:
    """The id of the last complete line of `path`, or None when it holds none, or is no regular file."""
    try:
        fd = open_regular(path, os.O_RDONLY)
    except (FileNotFoundError, NotRegularFile):
        return None
    try:
        size = os.fstat(fd).st_size
        tail = os.pread(fd, _TAIL_BYTES, max(0, size - _TAIL_BYTES))
    finally:
        os.close(fd)
    for line in reversed(tail.split(b"\n")):
        if not line:  # the end of the file, after its last newline: nothing to parse
            continue
        try:
            value = cjson.loads(line)["id"]
        except (ValueError, KeyError, TypeError, RecursionError):
            continue  # an empty or torn line (or one nested past the parser's depth): look further back
        if type(value) is int and value > 0:
            return value
    return None


def is_file_id(value) -> bool:
    """Whether `value`, read from a file, can be a delivery id (a positive integer, at most MAX_FILE_ID)."""
    return type(value) is int and 0 < value <= MAX_FILE_ID
