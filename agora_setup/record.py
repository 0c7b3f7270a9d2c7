"""Writing the workspace's seat record (reading it is agorad.surface.seat_record's, for every command)."""

from __future__ import annotations

from pathlib import Path

from agorad.surface.seat_record import RECORD_FORMAT

HEADER = "# The Agora seat this workspace acts as. Written by `agora setup`; re-run it to change this file.\n"


def render(agent: str, hub: Path, key_file: Path, harnesses: list[str], created: list[str]) -> str:
    """The record's text. `created`: workspace files setup made (so a re-run keeps no copy of them) and the
    directories it made (ending in "/"; `--remove` takes away no other directory)."""
    import tomli_w

    data = {"format": RECORD_FORMAT, "id": agent, "hub": str(hub), "key_file": str(key_file),
            "harnesses": list(harnesses), "created": sorted(created)}
    return HEADER + tomli_w.dumps(data)

