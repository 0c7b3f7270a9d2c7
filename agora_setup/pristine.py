"""The user's own bytes of each file setup edits, kept so `--remove` gives them back exactly.

Merging re-serialises a JSON file. When, after our entries come out, the data is
what it was before setup touched it, the saved bytes are restored, so the
user's formatting and key order survive too. Copies live in
`<workspace>/.agora/pristine/<path in the workspace>` and go with the removal.
"""

from __future__ import annotations

import json
from pathlib import Path

from agorad.surface.paths import SEAT_DIR_NAME

PRISTINE_DIR = "pristine"


def _copy(workspace: Path, relative: str) -> Path:
    return workspace / SEAT_DIR_NAME / PRISTINE_DIR / relative


def keep(workspace: Path, relative: str, text: str) -> None:
    """Save the file's text before setup's first edit (a later edit keeps the first copy)."""
    copy = _copy(workspace, relative)
    if not copy.exists():
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(text)


def restored(workspace: Path, relative: str, text: str | None) -> str | None:
    """`text`, or the saved bytes when they mean the same (JSON) or are the same (anything else)."""
    copy = _copy(workspace, relative)
    try:
        saved = copy.read_text()
    except (OSError, UnicodeDecodeError):
        return text
    same = {".json": _same_json, ".toml": _same_toml}.get(Path(relative).suffix)
    if text is None:  # nothing of the user's left: their file held nothing (e.g. `{}`) before setup
        text = {".json": "{}", ".toml": ""}.get(Path(relative).suffix, "")
        return saved if not saved.strip() or saved == text or (same is not None and same(saved, text)) else None
    if saved == text or (same is not None and same(saved, text)):
        return saved
    return text


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


def _same_toml(a: str, b: str) -> bool:
    import tomllib

    try:
        return tomllib.loads(a) == tomllib.loads(b)
    except tomllib.TOMLDecodeError:
        return False


def _same_json(a: str, b: str) -> bool:
    try:
        return json.loads(a) == json.loads(b)
    except ValueError:
        return False
