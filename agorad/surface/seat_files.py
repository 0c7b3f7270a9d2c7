"""Moving and removing a seat's state files as the hub renames or removes the seat
(agora-files(5) "SEAT FILES"); their names are spelled in agorad.surface.paths.
"""

from __future__ import annotations

import os

from agorad.surface.paths import Home, seat_state_files


def rename(home: Home, old_id: str, new_id: str) -> None:
    for old, new in zip(seat_state_files(home.root, old_id), seat_state_files(home.root, new_id)):
        try:
            os.replace(old, new)
        except FileNotFoundError:
            pass


def remove(home: Home, agent_id: str) -> None:
    for path in seat_state_files(home.root, agent_id):
        path.unlink(missing_ok=True)
