"""The Gemini CLI and opencode wiring proposed for agora_setup/harnesses/, written with setup's own targets.

Until agora setup wires these two harnesses, the tests write exactly this
(through agora_setup.targets, as setup would); once agora_setup.harnesses has
`gemini` and `opencode`, the tests call those instead and this module goes.
Tests may swap a handler or a plugin command for a probe; nothing else differs.
"""

from __future__ import annotations

from pathlib import Path

from agora_setup import rules
from agora_setup.harnesses import BACKSTOP_TIMEOUT, Seat
from agora_setup.targets import JsonHooks, MarkedBlock, OwnedFile, Target
from agorad.surface import wiring

GEMINI_TIMEOUT_MS = BACKSTOP_TIMEOUT * 1000   # Gemini hook timeouts are milliseconds (default 60000)
OPENCODE_PLUGIN = ".opencode/plugins/agora.js"
OPENCODE_MARKER = "// agora: written by `agora setup`"


def gemini_handlers(seat: Seat) -> dict[str, list[dict]]:
    """SessionStart: the seat's context; AfterAgent: the backstop. Named: Gemini fingerprints name+command."""
    start = [seat.exe, "hook", "start", "--harness", "gemini", *wiring.seat_args(seat.agent, seat.home)]
    return {
        "SessionStart": [{"name": "agora-start", "type": "command", "command": wiring.shell(start),
                          "timeout": GEMINI_TIMEOUT_MS}],
        "AfterAgent": [{"name": "agora-backstop", "type": "command",
                        "command": wiring.shell(wiring.backstop(seat.exe, "gemini", seat.agent, seat.home)),
                        "timeout": GEMINI_TIMEOUT_MS}],
    }


def gemini(seat: Seat, handlers: dict[str, list[dict]] | None = None) -> list[Target]:
    handlers = gemini_handlers(seat) if handlers is None else handlers
    return [
        JsonHooks(seat.at(".gemini/settings.json"), events={e: h for e, h in handlers.items() if h}),
        # Gemini has no background hook: a turn's end is raised, an idle session is not woken.
        MarkedBlock(seat.at("GEMINI.md"), body=rules.generic(seat.exe, seat.agent, seat.home)),
    ]


def opencode_rules(seat: Seat) -> str:
    return rules.routine(seat.exe, seat.agent, seat.home) + """

Wakes reach this session by itself: agora's plugin (.opencode/plugins/agora.js)
keeps a listener armed while you are idle and checks your inbox at each turn's
end; mail arrives as a message relayed from agora. Do not start a listener of
your own."""


def opencode(seat: Seat, listen: list[str] | None = None, backstop: list[str] | None = None,
             start: list[str] | None = None) -> list[Target]:
    from tests.harness.opencode import plugin_source

    listen = wiring.hook_listen(seat.exe, seat.agent, seat.home) if listen is None else listen
    backstop = wiring.backstop(seat.exe, "opencode", seat.agent, seat.home) if backstop is None else backstop
    if start is None:
        start = [seat.exe, "hook", "start", "--harness", "opencode", *wiring.seat_args(seat.agent, seat.home)]
    return [
        OwnedFile(seat.at(OPENCODE_PLUGIN), content=plugin_source(seat.agent, listen, backstop, start),
                  marker=OPENCODE_MARKER),
        MarkedBlock(seat.at("AGENTS.md"), body=opencode_rules(seat)),
    ]


def seat(workspace: Path, agent: str, home: Path) -> Seat:
    return Seat(agent=agent, home=home, exe=wiring.agora_executable(), workspace=workspace)


def write(targets: list[Target]) -> None:
    """What setup does with its targets, minus the lock and the checks: each file's text, wired."""
    for target in targets:
        path = Path(target.path)
        text = target.wire(path.read_text() if path.exists() else None)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
