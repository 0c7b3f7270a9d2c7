"""The user's own bytes of each file setup edits, kept so `--remove` gives them back exactly.

Merging re-serialises a JSON file. When, after our entries come out, what is left
is what setup's own wiring of the saved bytes would leave (the user changed
nothing since), the saved bytes are restored, so the user's formatting, key order
and empty sections survive too. Copies live in
`<workspace>/.agora/pristine/<path in the workspace>`, private (0600 in 0700
directories: a config can hold the user's tokens), and go with the removal.
"""

from __future__ import annotations

import os
from pathlib import Path

from agorad.surface.paths import FILE_MODE, SEAT_DIR_NAME, make_private_dirs

PRISTINE_DIR = "pristine"


def _copy(workspace: Path, relative: str) -> Path:
    return workspace / SEAT_DIR_NAME / PRISTINE_DIR / relative


def keep(workspace: Path, relative: str, text: str) -> None:
    """Save the file's text before setup's first edit (a later edit keeps the first copy)."""
    copy = _copy(workspace, relative)
    if copy.exists():
        return
    make_private_dirs(copy.parent)
    fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    with open(fd, "w", newline="") as out:  # newline="": the bytes as read, \r\n kept
        out.write(text)


def saved(workspace: Path, relative: str) -> str | None:
    """The file's text before setup first edited it; None when setup created it (or the copy is gone)."""
    try:
        with open(_copy(workspace, relative), newline="") as copy:
            return copy.read()
    except (OSError, UnicodeDecodeError):
        return None


def forget(workspace: Path, relative: str) -> None:
    """Drop a file's copy, and the directories that leaves empty (up to the pristine directory)."""
    copy = _copy(workspace, relative)
    copy.unlink(missing_ok=True)
    top = directory(workspace)
    for parent in copy.parents:
        if parent == top.parent:
            return
        try:
            parent.rmdir()
        except OSError:  # not empty (or never made)
            return


def directory(workspace: Path) -> Path:
    return workspace / SEAT_DIR_NAME / PRISTINE_DIR
