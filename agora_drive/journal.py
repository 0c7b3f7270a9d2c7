"""The driver's logs: one JSON object a line, private, bounded (drive-<id>.turns.jsonl, .failures.jsonl).

A record can hold what a harness printed, which a model may have written to order: a fake
`AGORA_WAKE ...` line, a newline, a terminal escape. So each record is encoded with
`ensure_ascii=True`: every control character and every non-ASCII one is escaped, which keeps a record
one line for any reader (Python's `str.splitlines` also breaks at U+2028, U+0085 and friends, which
`ensure_ascii=False` would write raw), keeps C1 escapes such as U+009B out of a terminal running
`tail -f`, and encodes a lone surrogate instead of failing on it. Non-Latin text costs six bytes a
character; these are logs, read rarely.

A file that would pass its limit is first renamed to `<name>.1` (replacing the one before), so at most
two generations exist and a log costs at most twice its limit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from agorad.surface.filenames import NotRegularFile, open_regular
from agorad.surface.paths import FILE_MODE, rotated

_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW  # (open_regular: never a FIFO)
_READ = os.O_RDONLY | os.O_NOFOLLOW
_TAIL_SPAN = 1 << 16  # tail reads back this much first, and four times more until it has enough


def encode(record: dict) -> bytes:
    """One line: compact JSON, ASCII only (see above); a value JSON has no form for becomes its str()."""
    return (json.dumps(record, ensure_ascii=True, separators=(",", ":"), default=str) + "\n").encode("ascii")


def append(path: Path, record: dict, limit_bytes: int) -> None:
    """Add `record` to the log at `path` in one write(2), rotating the log first if it would pass
    `limit_bytes`. A record larger than the limit gets a fresh file to itself. A symlink at `path` is
    refused (O_NOFOLLOW): the home is private, and a link there is not ours to follow."""
    line = encode(record)
    try:
        fd = open_regular(path, _APPEND, FILE_MODE)
        try:
            size = os.fstat(fd).st_size
            if size and size + len(line) > limit_bytes:
                os.replace(path, rotated(path))
                os.close(fd)
                fd = open_regular(path, _APPEND, FILE_MODE)
            os.write(fd, line)
        finally:
            os.close(fd)
    except OSError as exc:
        raise OSError(f"appending to the log {path}: {exc.strerror}") from exc


def tail(path: Path, n: int) -> list[dict]:
    """The last `n` records, oldest first, from `path` and (when it holds fewer) its rotated
    generation. Lines that are not a JSON object (a torn write, a stray edit) are skipped."""
    if n <= 0:
        return []
    newest = _tail_of(Path(path), n)
    if len(newest) < n:
        newest = _tail_of(rotated(Path(path)), n - len(newest)) + newest
    return newest


def _tail_of(path: Path, n: int) -> list[dict]:
    try:
        fd = open_regular(path, _READ)
    except (FileNotFoundError, NotRegularFile):
        return []
    with os.fdopen(fd, "rb") as log:
        size = log.seek(0, os.SEEK_END)
        span = _TAIL_SPAN
        while True:
            start = max(0, size - span)
            log.seek(start)
            lines = log.read(size - start).split(b"\n")
            if start > 0:
                lines = lines[1:]  # it began mid-line
            records = [record for record in map(_decoded, lines) if record is not None]
            if len(records) >= n or start == 0:
                return records[-n:]
            span *= 4


def _decoded(line: bytes) -> dict | None:
    if not line.strip():
        return None
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):  # bad JSON, bytes that are not UTF-8, absurd nesting
        return None
    return record if isinstance(record, dict) else None
