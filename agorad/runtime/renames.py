"""Start-up's finish of renames a stop cut short.

A rename is stored first and its files follow after the COMMIT (hub.agent_renamed): the key file,
the notify files and the seat's state files (listener offset, driver state, hook stamps). A stop in
between left them under the former id, where nothing looks: the seat's clients found no key file
(locked out until a rekey) and its listener a notify file the hub no longer wrote. A former id is
the seat's alone (an alias cannot be taken, registry._check_new_id), so each file still under one
takes the seat's current id, wherever that name is free: a file already there is newer and stays.
"""

from __future__ import annotations

import os
from pathlib import Path

import apsw

from agorad.runtime.log import log
from agorad.runtime.notify import Notifier
from agorad.store import agents as agents_sql
from agorad.surface.paths import Home, seat_state_files


def finish_cut_renames(db: apsw.Connection, home: Home, notifier: Notifier) -> list[tuple[str, str, int]]:
    """Move each file left under a former id to the seat's current id; (former id, id, files moved) of
    each rename that had any. Before the notifier starts, so its reconciliation sees the moved files."""
    finished = []
    for former, current in agents_sql.former_ids(db):
        moved = sum(_moved(source, target) for source, target in _files_of_rename(home, notifier, former, current))
        if moved:
            finished.append((former, current, moved))
    return finished


def _files_of_rename(home: Home, notifier: Notifier, former: str, current: str) -> list[tuple[Path, Path]]:
    pairs = [(home.key_file(former), home.key_file(current))]
    if notifier.enabled:
        pairs += zip(notifier.files_of(former), notifier.files_of(current))
    return pairs + list(zip(seat_state_files(home.root, former), seat_state_files(home.root, current)))


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
