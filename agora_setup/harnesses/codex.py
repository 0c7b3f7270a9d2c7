"""Codex: what `agora setup` writes for it.

Codex needs matcher groups in hooks.json (a flat list registers nothing) and silently skips
an `async` hook (measured, README "Harness tests").
"""

from __future__ import annotations

from agora_setup import rules
from agora_setup.harnesses.common import (BACKSTOP_TIMEOUT, MCP_NAME, SHARED_RULES, Seat, command, mcp_entry,
                                         only_with_mcp, start)
from agora_setup.targets import JsonHooks, MarkedBlock, Target, TomlBlock
from agorad.surface import settings, wiring

# The paths whose presence says a workspace uses codex.
SIGNS = (".codex",)


def targets(seat: Seat) -> list[Target]:
    def handler(argv):  # never `async = true`: Codex silently skips such a hook
        return {"type": "command", "command": command(argv), "timeout": BACKSTOP_TIMEOUT}

    return [
        JsonHooks(seat.at(".codex/hooks.json"), events={
            "SessionStart": [handler(start(seat, "codex"))],
            "Stop": [handler(wiring.backstop(seat.exe, "codex", seat.agent, seat.home))],
        }),
        # An unattended seat must never freeze on an approval dialog: approve agora's tools (Codex's
        # default_tools_approval_mode, codex-rs/config/src/mcp_types.rs). `required`: Codex 0.171 builds
        # a turn's first request only with the servers ready by then, silently leaving the rest out
        # (measured: half the first requests lacked agora's tools); a required server is waited for.
        *only_with_mcp(seat, [TomlBlock(seat.at(".codex/config.toml"), data={"mcp_servers": {MCP_NAME: {
            **mcp_entry(seat), "default_tools_approval_mode": "approve", "required": True,
            "tool_timeout_sec": settings.MCP_TOOL_TIMEOUT}}})]),
        MarkedBlock(seat.at(SHARED_RULES), body=rules.codex(seat.exe, seat.agent, seat.home)),
    ]
