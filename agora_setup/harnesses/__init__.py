"""Everything Agora knows about each harness, one module per harness: what `agora setup` writes for
it (`targets`, `SIGNS`) and, for those `agora drive` runs, how a turn is started and read (`DRIVE`,
agora_setup.harnesses.turns).

Adding a harness is adding one module here and naming it in HARNESSES (agorad.surface.vocab), and in
DRIVE_HARNESSES when it can be driven; `command` is drive-only, so setup never lists it.
The facts each module rests on were measured with the real CLIs (README "Harness tests",
tests/harness/).
"""

from __future__ import annotations

import importlib
from pathlib import Path

from agora_setup import rules
from agora_setup.harnesses.common import BACKSTOP_TIMEOUT, MCP_NAME, SHARED_RULES, Seat, mcp_installed
from agora_setup.targets import MarkedBlock, Target
from agorad.surface.vocab import DRIVE_HARNESSES, HARNESSES

__all__ = ["BACKSTOP_TIMEOUT", "MCP_NAME", "SHARED_RULES", "Seat", "mcp_installed", "module", "targets",
           "detected", "supported", "drivable"]


def module(name: str):
    """The harness's module (agora_setup.harnesses.<name>)."""
    if name not in HARNESSES:
        raise ValueError(f"unknown harness {name!r}; one of {', '.join(HARNESSES)}")
    return importlib.import_module(f"agora_setup.harnesses.{name}")


def targets(names: list[str], seat: Seat) -> list[Target]:
    """Every file the named harnesses get, each path once (AGENTS.md's block speaks for all its readers)."""
    chosen: dict[Path, Target] = {}
    for name in names:
        for target in module(name).targets(seat):
            chosen.setdefault(target.path, target)
    shared = seat.at(SHARED_RULES)
    if shared in chosen:
        chosen[shared] = MarkedBlock(shared, body=rules.agents_md(names, seat.exe, seat.agent, seat.home))
    return list(chosen.values())


def detected(workspace: Path) -> list[str]:
    """The harnesses a workspace shows signs of using, in a stable order."""
    return [name for name in HARNESSES if any((workspace / sign).exists() for sign in module(name).SIGNS)]


def supported() -> tuple[str, ...]:
    return HARNESSES


def drivable(name: str):
    """The DRIVE object `agora drive` runs harness `name` by (agora_setup.harnesses.turns)."""
    if name not in DRIVE_HARNESSES:
        raise ValueError(f"unknown harness {name!r} for agora drive; one of {', '.join(DRIVE_HARNESSES)}")
    return importlib.import_module(f"agora_setup.harnesses.{name}").DRIVE
