"""Writing the workspace's seat record (reading it is agorad.surface.seat_record's, for every command)."""

from __future__ import annotations

from pathlib import Path

from agorad.surface.seat_record import RECORD_FORMAT

HEADER = "# The Agora seat this workspace acts as. Written by `agora setup`; re-run it to change this file.\n"


def render(agent: str, hub: Path, key_file: Path, harnesses: list[str], created: list[str],
           made_dirs: list[str] | None) -> str:
    """The record's text. `created`: workspace files setup made (so a re-run keeps no copy of them);
    `made_dirs`: the directories it made (`--remove` takes away no other), left out for a workspace
    whose first setup did not note them (its removal then takes any it leaves empty, as it always did)."""
    import tomli_w

    data = {"format": RECORD_FORMAT, "id": agent, "hub": str(hub), "key_file": str(key_file),
            "harnesses": list(harnesses), "created": sorted(created)}
    if made_dirs is not None:
        data["made_dirs"] = sorted(made_dirs)
    return HEADER + tomli_w.dumps(data)

