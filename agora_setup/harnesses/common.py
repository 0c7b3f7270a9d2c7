"""What every harness module shares: the seat being wired, and how hooks and MCP entries are spelled."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agorad.surface import wiring

BACKSTOP_TIMEOUT = 30  # seconds: a stop hook's whole run, generous for a loaded hub (it needs one round-trip)
SHARED_RULES = "AGENTS.md"  # read by Codex and opencode both: one block for the two
MCP_NAME = "agora"  # the server's name in every MCP config: an entry of this name is setup's own


@dataclass(frozen=True)
class Seat:
    agent: str
    home: Path
    exe: str  # the absolute `agora`
    workspace: Path
    mcp: bool = True  # write MCP entries: `agora mcp` can run here (the optional `mcp` extra is installed)

    def at(self, relative: str) -> Path:
        return self.workspace / relative


def command(argv: list[str]) -> str:
    return wiring.shell(argv)


def start(seat: Seat, harness: str) -> list[str]:
    return wiring.session_start(seat.exe, harness, seat.agent, seat.home)


def mcp_installed() -> bool:
    """Whether `agora mcp` can start here: an entry for a server that cannot start is ignored silently."""
    import importlib.util

    return importlib.util.find_spec("mcp") is not None


def only_with_mcp(seat: Seat, targets: list) -> list:
    return targets if seat.mcp else []


def mcp_entry(seat: Seat) -> dict:
    """An MCP entry's command and args (the hub rides in --home: harnesses scrub AGORA_HOME)."""
    argv = wiring.mcp_server(seat.exe, seat.agent, seat.home)
    return {"command": argv[0], "args": argv[1:]}
