"""Moving and removing a seat's state files as the hub renames or removes the seat
(agora-files(5) "SEAT FILES"); their names are spelled in agorad.surface.paths.
"""

from __future__ import annotations

import os

from agorad.surface.filenames import write_private
from agorad.surface.paths import Home, listen_file, seat_state_files
from agorad.surface.places import NEW_SEAT_PLACE


def rename(home: Home, old_id: str, new_id: str) -> None:
    for old, new in zip(seat_state_files(home.root, old_id), seat_state_files(home.root, new_id)):
        try:
            os.replace(old, new)
        except FileNotFoundError:
            pass


def remove(home: Home, agent_id: str) -> None:
    for path in seat_state_files(home.root, agent_id):
        path.unlink(missing_ok=True)


def restart_listen_place(home: Home, agent_id: str) -> None:
    """A seat just added: a listener place left under its id counts another seat's ids (a listener of a
    removed seat of that id, with no file to notice the removal by, saved it after the removal took the
    seat's files), or knows nothing (saved while no hub answered). The new seat's ids start at 1: the place
    becomes the start of the seat, so all its files come to hold is read. Not removed: a next listener with no
    place would take what came before its first arm for old news."""
    path = listen_file(home.root, agent_id, "offset")
    if path.exists():
        write_private(path, NEW_SEAT_PLACE)
