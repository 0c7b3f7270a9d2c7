"""Start-up's finish of renames a stop cut short.

A rename is stored first and its files follow after the COMMIT (hub.agent_renamed), in this order:
the key file, the notify files, the seat's state files (listener offset, driver state, hook stamps).
A stop in between left them under the former id, where nothing looks: the seat's clients found no
key file (locked out until a rekey) and its listener a notify file the hub no longer wrote. A former
id is the seat's alone (an alias cannot be taken, registry._check_new_id), so each such file takes
the seat's current id, wherever that name is free: a file already there is newer and stays.

Only the hub writes key and notify files, so one under a former id is a cut's; state files are also
written by a listener or driver started as the former id while no hub answered (it re-arms on the
seat once one does), and such an offset names no file of the seat's. So state files follow when a
key or notify file shows the cut, or when the former id's saved offset names the seat's notify file
(its inode: a rename keeps it), as after a cut between the notify and the state files.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import apsw

from agorad.runtime.log import log
from agorad.runtime.notify import Notifier
from agorad.store import agents as agents_sql
from agorad.surface.paths import Home, listen_file, seat_state_files


def finish_cut_renames(db: apsw.Connection, home: Home, notifier: Notifier) -> list[tuple[str, str, int]]:
    """Move each file left under a former id to the seat's current id; (former id, id, files moved) of
    each rename that had any. Before the notifier starts, so its reconciliation sees the moved files."""
    finished = []
    for former, current in agents_sql.former_ids(db):
        moved = sum(_moved(source, target) for source, target in _hubs_files(home, notifier, former, current))
        if moved or _offset_names_the_seats_file(home, notifier, former, current):
            moved += sum(_moved(source, target) for source, target in
                         zip(seat_state_files(home.root, former), seat_state_files(home.root, current)))
            finished.append((former, current, moved))
    return finished


def _hubs_files(home: Home, notifier: Notifier, former: str, current: str) -> list[tuple[Path, Path]]:
    """(under the former id, under the current id) of the files only the hub writes: the key, the notify files."""
    pairs = [(home.key_file(former), home.key_file(current))]
    if notifier.enabled:
        pairs += zip(notifier.files_of(former), notifier.files_of(current))
    return pairs


def _offset_names_the_seats_file(home: Home, notifier: Notifier, former: str, current: str) -> bool:
    """Whether the listener offset saved under the former id names the seat's notify file or its `.1`
    (agora-files(5): {"inode", "pos", "id"}); one a listener saved as the former id with no hub up names
    none of them (or null)."""
    try:
        saved = json.loads(listen_file(home.root, former, "offset").read_text())
    except (OSError, ValueError):
        return False
    inode = saved.get("inode") if isinstance(saved, dict) else None
    if not notifier.enabled or type(inode) is not int:
        return False
    return any(_inode(path) == inode for path in notifier.files_of(current))


def _inode(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def _moved(source: Path, target: Path) -> bool:
    """Rename `source` to `target` if `source` is there and `target` is not (start-up holds the home's
    lock: nothing else writes here meanwhile). A failure is logged: the hub starts all the same."""
    if os.path.lexists(target) or not os.path.lexists(source):
        return False
    try:
        os.replace(source, target)
    except OSError as exc:
        log("file-step-failed", error=exc.strerror or exc, path=source)
        return False
    return True
