"""Wire a workspace's harness for a seat, as `agora setup` does.

Stand-in until `agora setup` lands: these write, by hand, files of exactly
the shape setup is specified to write, every command rendered by
agorad.surface.wiring. Once setup lands, `wire` calls it instead and this
hand-writing goes.
"""

from __future__ import annotations

import json
from pathlib import Path

from agorad.surface import settings, wiring


def wire(harness: str, workspace: Path, agent: str, home: Path) -> None:
    {"claude": _claude, "codex": _codex}[harness](workspace, agent, home)


def _claude(workspace: Path, agent: str, home: Path) -> None:
    exe = wiring.agora_executable()
    listen = {"type": "command", "command": wiring.shell(wiring.hook_listen(exe, agent, home)),
              "asyncRewake": True, "timeout": settings.HOOK_TIMEOUT}
    backstop = {"type": "command", "command": wiring.shell(wiring.backstop(exe, "claude", agent, home))}
    hooks = {"SessionStart": [{"hooks": [listen]}], "Stop": [{"hooks": [backstop, listen]}]}
    _write_json(workspace / ".claude" / "settings.json", {"hooks": hooks})


def _codex(workspace: Path, agent: str, home: Path) -> None:
    exe = wiring.agora_executable()

    def hook(verb: str) -> dict:
        argv = [exe, "hook", verb, "--harness", "codex", *wiring.seat_args(agent, home)]
        return {"hooks": [{"type": "command", "command": wiring.shell(argv)}]}

    _write_json(workspace / ".codex" / "hooks.json", {"hooks": {"SessionStart": [hook("start")], "Stop": [hook("stop")]}})


def _write_json(path: Path, value: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2) + "\n")
