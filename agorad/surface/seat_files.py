"""The listener and driver files of a seat under the home (agora-files(5) "SEAT FILES"),
as the hub sees them: they follow a rename and go with a removal."""

from __future__ import annotations

import os

from agorad.surface.paths import Home

# State only: a live listener's lock and pidfile are its own, and it removes them when it ends.
SUFFIXES = ("backoff", "offset", "owedsig")


def names(agent_id: str) -> list[str]:
    return [f"listen-{agent_id}.{suffix}" for suffix in SUFFIXES] + [f"drive-{agent_id}.turns.jsonl"]


def rename(home: Home, old_id: str, new_id: str) -> None:
    for old, new in zip(names(old_id), names(new_id)):
        try:
            os.replace(home.root / old, home.root / new)
        except FileNotFoundError:
            pass


def remove(home: Home, agent_id: str) -> None:
    for name in names(agent_id):
        (home.root / name).unlink(missing_ok=True)
