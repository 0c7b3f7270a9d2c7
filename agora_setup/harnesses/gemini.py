"""Gemini CLI: what `agora setup` writes for it.

Its AfterAgent hook re-prompts with `{"decision": "block"}`; it has no background hook and
takes its timeouts in milliseconds (measured, README "Harness tests").
"""

from __future__ import annotations

from agora_setup import rules
from agora_setup.harnesses.common import BACKSTOP_TIMEOUT, MCP_NAME, Seat, command, mcp_entry, only_with_mcp, start
from agora_setup.targets import Composite, JsonEntry, JsonHooks, MarkedBlock, Target
from agorad.surface import settings, wiring

# The paths whose presence says a workspace uses gemini.
SIGNS = (".gemini", "GEMINI.md")


def targets(seat: Seat) -> list[Target]:
    # Gemini fingerprints a hook by name and command and warns once when either changes: keep both stable.
    timeout_ms = BACKSTOP_TIMEOUT * 1000

    def handler(name: str, argv: list[str]) -> dict:
        return {"name": name, "type": "command", "command": command(argv), "timeout": timeout_ms}

    settings_json = seat.at(".gemini/settings.json")
    return [
        Composite(settings_json, parts=(
            JsonHooks(settings_json, events={
                "SessionStart": [handler("agora-start", start(seat, "gemini"))],
                "AfterAgent": [handler("agora-backstop", wiring.backstop(seat.exe, "gemini", seat.agent, seat.home))],
            }),
            # trust: the seat's own mailbox tools run without a confirmation each.
            *only_with_mcp(seat, [JsonEntry(settings_json, keys=("mcpServers",), name=MCP_NAME,
                                             value={**mcp_entry(seat), "trust": True})]),
        )),
        # No background hook: a turn's end is raised, an idle session is not woken.
        MarkedBlock(seat.at("GEMINI.md"), body=rules.gemini(seat.exe, seat.agent, seat.home)),
    ]
