"""Wire a workspace's harness for a seat, as `agora setup` does.

Stand-in until `agora setup` lands: these write, by hand, files of exactly
the shape setup is specified to write, every command rendered by
agorad.surface.wiring. Once setup lands, `wire` calls it instead and this
hand-writing goes.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from agorad.surface import settings, wiring


def wire(harness: str, workspace: Path, agent: str, home: Path) -> None:
    {"claude": _claude, "codex": _codex}[harness](workspace, agent, home)


def _claude(workspace: Path, agent: str, home: Path) -> None:
    exe = wiring.agora_executable()
    listen = {"type": "command", "command": wiring.shell(wiring.hook_listen(exe, agent, home)),
              "asyncRewake": True, "timeout": settings.HOOK_TIMEOUT}
    backstop = {"type": "command", "command": wiring.shell(wiring.backstop(exe, "claude", agent, home))}
    # Until `agora hook` lands, its absence would exit 2 ("No such command"), which Claude takes for a
    # blocking Stop hook: every turn would be re-prompted with click's usage text.
    stop = [backstop, listen] if _has_hook_command(exe) else [listen]
    hooks = {"SessionStart": [{"hooks": [listen]}], "Stop": [{"hooks": stop}]}
    _write_json(workspace / ".claude" / "settings.json", {"hooks": hooks})


def _codex(workspace: Path, agent: str, home: Path) -> None:
    exe = wiring.agora_executable()

    def hook(verb: str) -> dict:
        argv = [exe, "hook", verb, "--harness", "codex", *wiring.seat_args(agent, home)]
        return {"hooks": [{"type": "command", "command": wiring.shell(argv)}]}

    _write_json(workspace / ".codex" / "hooks.json", {"hooks": {"SessionStart": [hook("start")], "Stop": [hook("stop")]}})


def _has_hook_command(exe: str) -> bool:
    return subprocess.run([exe, "hook", "--help"], capture_output=True).returncode == 0


def _write_json(path: Path, value: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2) + "\n")
