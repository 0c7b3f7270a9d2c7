"""`agora hook stop|start --harness H`: the harness hooks. A thin adapter over agora_listen.backstop.

The form `agora setup` writes skips click altogether (hook_fast.py, through agorad.cli.run);
this is the command's definition, its help, and the path for every other form.
"""

from __future__ import annotations

import contextlib
import sys

import click

from agorad.cli.common import home_option
from agorad.cli.hook_fast import EXIT_USAGE
from agorad.cli.shared import SharedOption
from agorad.surface.vocab import HARNESSES


@contextlib.contextmanager
def _usage_exits_one():
    """A usage error exits 1, never 2: Claude Code reads a Stop hook's exit 2 as "re-prompt with stderr",
    which would feed the error to the model at every turn's end. 1 shows it to the user and moves on."""
    try:
        yield
    except click.UsageError as exc:
        exc.exit_code = EXIT_USAGE
        raise


class HookCommand(click.Command):
    def parse_args(self, ctx, args):
        with _usage_exits_one():
            return super().parse_args(ctx, args)


class HookGroup(click.Group):
    """The same for the group's own errors: an unknown subcommand (a mistyped `stop` in a hand-edited hook),
    an option before the subcommand, no subcommand at all (found by a review: each exited 2)."""

    def parse_args(self, ctx, args):
        with _usage_exits_one():
            return super().parse_args(ctx, args)

    def resolve_command(self, ctx, args):
        with _usage_exits_one():
            return super().resolve_command(ctx, args)



def _seat_options(command):
    command = home_option(command)
    command = click.option("--as", "as_id", cls=SharedOption, metavar="ID", required=True,
                           help="The seat the hook acts for (its key: $AGORA_KEY or <home>/keys/ID.key).")(command)
    return click.option("--harness", type=click.Choice(HARNESSES), required=True,
                        help="The harness running the hook: its contract decides how the hook answers.")(command)


@click.group("hook", cls=HookGroup)
def hook():
    """Hooks a harness runs for a seat (agora setup wires them): the turn-end backstop and the session start."""


@hook.command("stop", cls=HookCommand)
@_seat_options
def stop(harness, as_id, home):
    """At a turn's end: re-prompt, by the harness's contract, while unread important mail waits."""
    _answer("stop", harness, as_id, home)


@hook.command("start", cls=HookCommand)
@_seat_options
def start(harness, as_id, home):
    """At a session's start: give the model the seat, its unread and owed counts, and the commands to run."""
    _answer("start", harness, as_id, home)


def _answer(which: str, harness: str, as_id: str, home: str | None) -> None:
    from agorad.cli.hook_fast import answer

    sys.exit(answer(which, harness, as_id, home))
