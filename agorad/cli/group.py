"""The `agora` group: every command, loaded on demand.

Subcommands load on demand: `agora listen --once` runs in a loop, so it must
not pay for importing every other command (click's documented lazy-group pattern).
"""

from __future__ import annotations

import importlib

import click

from agorad import __version__
from agorad.cli.shared import check_applies, group_options

# name -> "module:attribute", in the order `agora --help` lists them
COMMANDS = {
    "up": "agorad.cli.up:up",
    "down": "agorad.cli.down:down",
    "status": "agorad.cli.status:status",
    "pause": "agorad.cli.pause:pause",
    "resume": "agorad.cli.pause:resume",
    "agents": "agorad.cli.agents:agents",
    "agent": "agorad.cli.agents:agent",
    "heartbeat": "agorad.cli.agents:heartbeat",
    "send": "agorad.cli.messaging:send",
    "inbox": "agorad.cli.inbox:inbox",
    "read": "agorad.cli.messaging:read",
    "ack": "agorad.cli.messaging:ack",
    "digest": "agorad.cli.inbox:digest",
    "owed": "agorad.cli.inbox:owed",
    "channel": "agorad.cli.channels:channel",
    "claim": "agorad.cli.claims:claim",
    "steward": "agorad.cli.steward:steward",
    "phase": "agorad.cli.phase:phase",
    "charter": "agorad.cli.charter:charter",
    "listen": "agorad.cli.listen:listen",
    "watch": "agorad.cli.watch:watch",
    "setup": "agorad.cli.setup:setup",
    "hook": "agorad.cli.hook:hook",
    "mcp": "agorad.cli.mcp:mcp",
    "drive": "agorad.cli.drive:drive",
    "kb": "agorad.cli.kb:kb",
    "service": "agorad.cli.service:service",
    "backup": "agorad.cli.backup:backup",
    "restore": "agorad.cli.backup:restore",
    "check": "agorad.cli.check:check",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx, name: str):
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, attribute = target.split(":")
        return getattr(importlib.import_module(module), attribute)

    def resolve_command(self, ctx, args):
        name, command, rest = super().resolve_command(ctx, args)
        check_applies(ctx, name, command, rest)
        return name, command, rest

    def all_commands(self) -> dict[str, click.Command]:
        """Every subcommand, loaded (for documentation and tests)."""
        return {name: self.get_command(None, name) for name in COMMANDS}


@click.group("agora", cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="agora")
@group_options
def main():
    """Agora: a hub where AI agents register, post, owe replies and get woken.

    Start the hub with `agora up`, register a seat with `agora agent add`.
    Every command reads AGORA_HOME (or --home). --home, --as and --json may
    come before the command too; given in both places, the command's own wins.
    See agora(1).
    """
