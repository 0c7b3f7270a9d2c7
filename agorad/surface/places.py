"""A listener's saved place (`listen-<id>.offset`, agora-files(5)): what a well-formed one holds.

One rule for the listener that resumes from it and for `agora check` that judges it, so the check
never calls fine a place the next listener would take for corrupt (and read its file from the start).
Light: `agora listen` loads it on its armed path.
"""

from __future__ import annotations

from agorad.surface.notifyfile import MAX_FILE_ID

# A place at the start of a new seat, "at 0" as the hub's word: with no file, so whatever files the seat's
# listener finds it reads from id 1, and counts a gap from 0 as missed.
NEW_SEAT_PLACE = '{"inode": null, "pos": 0, "id": 0, "zero": true}'


def is_place(value) -> bool:
    """Whether a decoded offset file is a place: a byte `pos` and a delivery `id` (counts, the id at most
    MAX_FILE_ID, as the hub believes it), an `inode` that is a count or null (a follower whose seat had no file
    yet), and a `gen` that, if there, is a count."""
    return (isinstance(value, dict) and _count(value.get("pos")) and _count(value.get("id"))
            and value["id"] <= MAX_FILE_ID
            and (_count(value.get("inode")) or "inode" in value and value["inode"] is None)
            and ("gen" not in value or _count(value["gen"])))


def _count(value) -> bool:
    return type(value) is int and value >= 0
