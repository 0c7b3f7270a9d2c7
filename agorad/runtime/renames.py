"""Start-up's finish of renames a stop cut short.

A rename is stored first and its files follow after the COMMIT (HubState.move_seat_files), in this order:
the seat's state files (listener offset, driver state, hook stamps), the notify files, the key file
last. A stop in between left some under the former id, where nothing looks: the seat's clients found
no key file (locked out until a rekey) and its listener a notify file the hub no longer wrote.

The key file, which only the hub writes and which goes last, is the mark of a cut: a former id is the
seat's alone (an alias cannot be taken, registry._check_new_id), so a key file under one (or a rekey's
staged key, cut in the same batch) says the rename did not finish, and every file still under that id
is the seat's, to take its current id over whatever stands there (a listener's started as the new id
while no hub answered, a removed seat's leftovers). Without the mark, files under a former id are not
a cut's (a listener started as the former id while the hub was down saves its offset there) and stay.
A seat with no key file on this host leaves no mark: its cut stays cut.
"""

from __future__ import annotations

import os

from agorad.runtime.hub import HubState
from agorad.store import agents as agents_sql
from agorad.surface import keys


def finish_cut_renames(hub: HubState) -> list[tuple[str, str, int]]:
    """Move the files of each cut rename to the seat's current id, with the rename's own steps
    (HubState.move_seat_files); (former id, id, files moved) of each. Before the notifier starts, so its
    reconciliation sees the moved files."""
    finished = []
    for former, current in agents_sql.former_ids(hub.db):
        key_file = hub.home.key_file(former)
        if not (os.path.lexists(key_file) or os.path.lexists(f"{key_file}{keys.STAGED_SUFFIX}")):
            continue
        moved = sum(os.path.lexists(path) for path in hub.seat_files_of(former))
        hub.move_seat_files(former, current)
        finished.append((former, current, moved))
    return finished
