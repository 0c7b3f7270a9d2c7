"""Cursor: what `agora setup` writes for it.

Cursor's stop hook returns `followup_message`; its agent CLI is not on a registry this
project's tests reach, so its wiring is tested by file content.
"""

from __future__ import annotations

from agora_setup import rules
from agora_setup.harnesses.common import BACKSTOP_TIMEOUT, MCP_NAME, Seat, command, mcp_entry, only_with_mcp
from agora_setup.targets import JsonEntry, JsonHooks, OwnedFile, Target
from agorad.surface import wiring

# The paths whose presence says a workspace uses cursor.
SIGNS = (".cursor", ".cursorrules")


def targets(seat: Seat) -> list[Target]:
    backstop = {"command": command(wiring.backstop(seat.exe, "cursor", seat.agent, seat.home)),
                "timeout": BACKSTOP_TIMEOUT}
    return [
        OwnedFile(seat.at(".cursor/rules/agora.mdc"), content=rules.cursor(seat.exe, seat.agent, seat.home),
                  marker=rules.CURSOR_MARKER),
        JsonHooks(seat.at(".cursor/hooks.json"), events={"stop": [backstop]}, grouped=False, top={"version": 1}),
        *only_with_mcp(seat, [JsonEntry(seat.at(".cursor/mcp.json"), keys=("mcpServers",), name=MCP_NAME,
                                         value=mcp_entry(seat))]),
    ]
