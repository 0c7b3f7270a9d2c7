"""Claude Code: what `agora setup` writes for it.

Claude runs an `asyncRewake` command hook in the background and turns its exit 2 into a
new turn with its stderr (measured, README "Harness tests").
"""

from __future__ import annotations

from agora_setup import rules
from agora_setup.harnesses.common import BACKSTOP_TIMEOUT, MCP_NAME, Seat, command, mcp_entry, only_with_mcp
from agora_setup.targets import Composite, JsonEntry, JsonHooks, JsonListItems, MarkedBlock, Target
from agorad.surface import settings, wiring

# The paths whose presence says a workspace uses claude.
SIGNS = (".claude", "CLAUDE.md")


def targets(seat: Seat) -> list[Target]:
    listen = {"type": "command", "command": command(wiring.hook_listen(seat.exe, seat.agent, seat.home)),
              "asyncRewake": True, "timeout": settings.HOOK_TIMEOUT}
    backstop = {"type": "command", "command": command(wiring.backstop(seat.exe, "claude", seat.agent, seat.home)),
                "timeout": BACKSTOP_TIMEOUT}
    settings_json = seat.at(".claude/settings.json")
    return [
        Composite(settings_json, parts=(
            # Never UserPromptSubmit: a listener armed at every prompt is a wake storm.
            JsonHooks(settings_json, events={"SessionStart": [listen], "Stop": [backstop, listen]}),
            # The project's .mcp.json server without the approval dialog, and its tools without a
            # permission prompt each (Claude honours both once the workspace is trusted).
            *only_with_mcp(seat, [
                JsonListItems(settings_json, keys=("enabledMcpjsonServers",), items=(MCP_NAME,)),
                JsonListItems(settings_json, keys=("permissions", "allow"), items=(f"mcp__{MCP_NAME}",)),
            ]),
        )),
        *only_with_mcp(seat, [JsonEntry(seat.at(".mcp.json"), keys=("mcpServers",), name=MCP_NAME,
                                         value={"type": "stdio", **mcp_entry(seat)})]),
        MarkedBlock(seat.at("CLAUDE.md"), body=rules.claude(seat.exe, seat.agent, seat.home)),
    ]
