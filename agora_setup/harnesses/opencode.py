"""opencode: what `agora setup` writes for it.

opencode has plugins, not hooks (opencode_plugin.py).
"""

from __future__ import annotations

from agora_setup import opencode_plugin, rules
from agora_setup.harnesses.common import SHARED_RULES, Seat, start
from agora_setup.targets import MarkedBlock, OwnedFile, Target
from agorad.surface import wiring

# The paths whose presence says a workspace uses opencode.
SIGNS = (".opencode", "opencode.json", "opencode.jsonc")
PLUGIN = ".opencode/plugins/agora.js"  # the plugin setup writes, in the workspace


def plugin_commands(seat: Seat) -> tuple[list[str], list[str], list[str]]:
    """The plugin's three command lines: the idle listener, the turn-end backstop, the session start."""
    return (wiring.hook_listen(seat.exe, seat.agent, seat.home),
            wiring.backstop(seat.exe, "opencode", seat.agent, seat.home), start(seat, "opencode"))


def targets(seat: Seat) -> list[Target]:
    plugin = opencode_plugin.source(seat.agent, *plugin_commands(seat))
    return [
        OwnedFile(seat.at(PLUGIN), content=plugin, marker=opencode_plugin.MARKER),
        MarkedBlock(seat.at(SHARED_RULES), body=rules.opencode(seat.exe, seat.agent, seat.home)),
    ]
