"""A seat's hook stamps, `hook-<id>.<hook>.stamp`: one JSON object per (seat, hook) (agora-files(5)).

    {"wired": 1764500000.0, "fired": 1764500123.4, "backoff": {...}, "arming": {...}}

`wired` is when `agora setup` wired the hook (null: never, or unwired); `fired` the wall-clock time
the hook last ran; `backoff` and `arming` the stop-hook backstop's re-prompt schedules (the mail,
and Cursor's background listener), each {"window": s, "next": hub time, "marks": [...]} or null (agora_listen/backoff.py).
A missing or corrupt stamp reads as {} (never wired, never fired, nothing owed to a schedule), so
a damaged file errs toward re-prompting. Writes are atomic and 0600 (filenames.write_private).
Files are named as strings (filenames.py): the stop hook reads and writes a stamp at every turn's end.
"""

from __future__ import annotations

import json
import os
import time

from agorad.surface.filenames import hook_stamp, read_regular, write_private

FIELDS = ("wired", "fired", "backoff", "arming")


def why_unstamped(root: str | os.PathLike, exc: OSError) -> str:
    """What a hook says when it cannot stamp its firing: a home that is not there is named as such (the
    temporary file's errno said nothing a user could act on)."""
    if not os.path.isdir(root):
        return f"there is no Agora home at {root}; check --home (or $AGORA_HOME)"
    return f"cannot stamp the firing in {root} ({exc.strerror or exc}); check --home {root}"


def read(root: str | os.PathLike, agent: str, hook: str) -> dict:
    """The stamp's known fields; {} when missing or corrupt."""
    try:
        data = json.loads(read_regular(hook_stamp(root, agent, hook)))
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: data[k] for k in FIELDS if k in data and _valid(k, data[k])}


def _valid(field: str, value) -> bool:
    if field in ("wired", "fired"):
        return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))
    return isinstance(value, dict)


def write(root: str | os.PathLike, agent: str, hook: str, stamp: dict) -> None:
    # No fsync: a stamp lost to a machine crash only shows an older firing or re-prompts once more,
    # and the hook runs at every turn's end, where a disk flush would be most of its time.
    write_private(hook_stamp(root, agent, hook), json.dumps({k: stamp.get(k) for k in FIELDS}), sync=False)


def mark_fired(root: str | os.PathLike, agent: str, hook: str, at: float | None = None) -> dict:
    """Stamp a firing now (wall clock) and return the stamp as it now stands."""
    stamp = read(root, agent, hook)
    stamp["fired"] = time.time() if at is None else at
    write(root, agent, hook, stamp)
    return stamp


def mark_wired(root: str | os.PathLike, agent: str, hook: str) -> None:
    """`agora setup` wired this hook for the seat: `agora status` shows NEVER FIRED until it runs."""
    stamp = read(root, agent, hook)
    stamp["wired"] = time.time()
    write(root, agent, hook, stamp)


def unwired(root: str | os.PathLike, agent: str, hook: str) -> None:
    """A workspace that wired this hook for the seat wires another now: `wired` goes, the firing and the
    re-prompt schedules stay (another workspace may wire the seat still, and its hook goes on with them)."""
    stamp = read(root, agent, hook)
    if not any(stamp.get(kept) for kept in FIELDS if kept != "wired"):
        forget(root, agent, hook)  # nothing but `wired`: the stamp goes, as on --remove
    elif stamp.get("wired") is not None:
        stamp["wired"] = None
        write(root, agent, hook, stamp)


def forget(root: str | os.PathLike, agent: str, hook: str) -> None:
    """`agora setup --remove`: the hook is no longer wired, and its stamp goes."""
    try:
        os.unlink(hook_stamp(root, agent, hook))
    except FileNotFoundError:
        pass
