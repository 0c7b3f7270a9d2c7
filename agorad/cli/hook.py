"""`agora hook stop|start --harness H`: the harness hooks. A thin adapter over agora_listen.backstop.

Imports stay inside the commands: the stop hook runs at every turn's end, so its start-up is its cost.
"""

from __future__ import annotations

import sys

import click

from agorad.cli.common import home_option
from agorad.cli.shared import SharedOption
from agorad.surface.vocab import HARNESSES


class HookCommand(click.Command):
    """A usage error exits 1, never 2: Claude Code reads a Stop hook's exit 2 as "re-prompt with stderr",
    which would feed the error to the model at every turn's end. 1 shows it to the user and moves on."""

    def parse_args(self, ctx, args):
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            exc.exit_code = EXIT_USAGE
            raise


EXIT_USAGE = 1


def _seat_options(command):
    command = home_option(command)
    command = click.option("--as", "as_id", cls=SharedOption, metavar="ID", required=True,
                           help="The seat the hook acts for (its key: $AGORA_KEY or <home>/keys/ID.key).")(command)
    return click.option("--harness", type=click.Choice(HARNESSES), required=True,
                        help="The harness running the hook: its contract decides how the hook answers.")(command)


@click.group("hook")
def hook():
    """Hooks a harness runs for a seat (agora setup wires them): the turn-end backstop and the session start."""


@hook.command("stop", cls=HookCommand)
@_seat_options
def stop(harness, as_id, home):
    """At a turn's end: re-prompt, by the harness's contract, while unread important mail waits."""
    from agora_listen.backstop import stop as run

    _answer(run, harness, as_id, home)


@hook.command("start", cls=HookCommand)
@_seat_options
def start(harness, as_id, home):
    """At a session's start: give the model the seat, its unread and owed counts, and the commands to run."""
    from agora_listen.session_start import start as run

    _answer(run, harness, as_id, home)


def _answer(run, harness: str, as_id: str, home: str | None) -> None:
    from agora_listen.hook_input import read_ready
    from agorad.surface.paths import Home
    from agorad.surface.protocol import is_agent_id

    if not is_agent_id(as_id):  # before any file is named after it
        click.echo(f"agora hook: --as {as_id!r} is not a valid agent id; check the hook's command in the "
                   "harness's config (`agora setup` writes it)", err=True)
        sys.exit(EXIT_USAGE)
    reply = run(harness, as_id, Home.resolve(home).root, read_ready())
    sys.stdout.write(reply.stdout)
    sys.stderr.write(reply.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(reply.status)
