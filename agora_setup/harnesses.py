"""Which files `agora setup` writes for each harness, and how it finds the harnesses a workspace uses.

The facts each wiring rests on were measured with the real CLIs (README "Harness
tests", tests/harness/): Claude Code runs an `asyncRewake` command hook in the
background and turns its exit 2 into a new turn with its stderr; Codex needs
matcher groups (a flat list registers nothing) and skips an `async` hook;
Cursor's stop hook returns `followup_message`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agora_setup import rules
from agora_setup.targets import JsonHooks, MarkedBlock, OwnedFile, Target, ValidToml
from agorad.surface import settings, wiring

BACKSTOP_TIMEOUT = 30  # seconds: a stop hook's whole run, generous for a loaded hub (it needs one round-trip)


@dataclass(frozen=True)
class Seat:
    agent: str
    home: Path
    exe: str  # the absolute `agora`
    workspace: Path

    def at(self, relative: str) -> Path:
        return self.workspace / relative


def _command(argv: list[str]) -> str:
    return wiring.shell(argv)


def claude(seat: Seat) -> list[Target]:
    listen = {"type": "command", "command": _command(wiring.hook_listen(seat.exe, seat.agent, seat.home)),
              "asyncRewake": True, "timeout": settings.HOOK_TIMEOUT}
    backstop = {"type": "command", "command": _command(wiring.backstop(seat.exe, "claude", seat.agent, seat.home)),
                "timeout": BACKSTOP_TIMEOUT}
    return [
        # Never UserPromptSubmit: a listener armed at every prompt is a wake storm.
        JsonHooks(seat.at(".claude/settings.json"), events={"SessionStart": [listen], "Stop": [backstop, listen]}),
        MarkedBlock(seat.at("CLAUDE.md"), body=rules.claude(seat.exe, seat.agent, seat.home)),
    ]


def codex(seat: Seat) -> list[Target]:
    def handler(argv):  # never `async = true`: Codex silently skips such a hook
        return {"type": "command", "command": _command(argv), "timeout": BACKSTOP_TIMEOUT}

    start = [seat.exe, "hook", "start", "--harness", "codex", *wiring.seat_args(seat.agent, seat.home)]
    return [
        JsonHooks(seat.at(".codex/hooks.json"), events={
            "SessionStart": [handler(start)],
            "Stop": [handler(wiring.backstop(seat.exe, "codex", seat.agent, seat.home))],
        }),
        ValidToml(seat.at(".codex/config.toml"), why="Codex does not load a project whose config it cannot parse, "
                  "hooks included"),
        MarkedBlock(seat.at("AGENTS.md"), body=rules.codex(seat.exe, seat.agent, seat.home)),
    ]


def cursor(seat: Seat) -> list[Target]:
    backstop = {"command": _command(wiring.backstop(seat.exe, "cursor", seat.agent, seat.home)),
                "timeout": BACKSTOP_TIMEOUT}
    return [
        OwnedFile(seat.at(".cursor/rules/agora.mdc"), content=rules.cursor(seat.exe, seat.agent, seat.home),
                  marker=rules.CURSOR_MARKER),
        JsonHooks(seat.at(".cursor/hooks.json"), events={"stop": [backstop]}, grouped=False, top={"version": 1}),
    ]


# harness -> (its targets, the paths whose presence says a workspace uses it)
WIRING = {
    "claude": (claude, (".claude", "CLAUDE.md")),
    "cursor": (cursor, (".cursor", ".cursorrules")),
    "codex": (codex, (".codex",)),
}


def targets(harness: str, seat: Seat) -> list[Target]:
    make, _ = WIRING[harness]
    return make(seat)


def detected(workspace: Path) -> list[str]:
    """The harnesses a workspace shows signs of using, in a stable order."""
    return [name for name, (_, signs) in WIRING.items() if any((workspace / sign).exists() for sign in signs)]


def supported() -> tuple[str, ...]:
    return tuple(WIRING)
