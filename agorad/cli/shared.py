"""Options every command takes, also accepted before the subcommand: `agora --home DIR status`.

`--home`, `--as` and `--json` belong to the commands (each declares them, so
its --help and man page list them); the group accepts them too and hands
them down. A value given after the subcommand wins over one given before it,
and either wins over $AGORA_HOME: the nearer and the more explicit setting
decides. Given before a command that does not take it, an option is a usage
error rather than silently ignored.
"""

from __future__ import annotations

import click
from click.core import ParameterSource

# The group's option -> the parameter name the commands give it.
SHARED = {"--home": "home", "--as": "as_id", "--json": "as_json"}
_GIVEN = "agora.shared"  # ctx.meta key: what the group was given, by parameter name
URL_META = "agora.url"  # ctx.meta key: `agora --url URL`, the hub's remote port for this invocation
RECORD_META = "agora.record"  # ctx.meta key: the seat record, once an option read it (None: there is none)
OPERATOR = "-"  # `--as -`: the local operator, for a command that takes it, even in a wired workspace


class SharedOption(click.Option):
    """A command's option that takes the group's value when the command's own command line lacks it,
    and, for --as and --home, the workspace's seat record when neither line nor environment gives one
    (unless `from_record=False`: `agora status`'s --as, which stays the operator on the hub's host)."""

    def __init__(self, *args, from_record: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        self.from_record = from_record

    def get_help_record(self, ctx):
        """As click's, without "required" for an option the seat record can supply: `--as` is needed only
        where no record names the seat, which the help text says."""
        record = super().get_help_record(ctx)
        if record is None or not (self.required and self.from_record and self.name in _FROM_RECORD):
            return record
        name, text = record
        return name, text.replace("  [required]", "").replace("; required]", "]")

    def consume_value(self, ctx, opts):
        value, source = self._given_value(ctx, opts)
        if self.name == "as_id" and value == OPERATOR:
            if self.required:
                raise click.BadParameter("this command acts as a seat: give its id (`-`, the local operator, "
                                         "is for commands that take the operator too)", ctx, self)
            return None, ParameterSource.COMMANDLINE  # given, so no seat record stands in for it
        return value, source

    def _given_value(self, ctx, opts):
        value, source = super().consume_value(ctx, opts)
        if source is not ParameterSource.COMMANDLINE:
            given = ctx.meta.get(_GIVEN, {})  # meta is shared by every context of one invocation
            if self.name in given:
                return given[self.name], ParameterSource.COMMANDLINE
        # Nothing given: click 8.5 says so with a sentinel, older ones with None; neither is a string.
        if (self.from_record and self.name in _FROM_RECORD and source is ParameterSource.DEFAULT
                and not isinstance(value, str)):
            record = seat_record(ctx)
            if record is not None:
                return _FROM_RECORD[self.name](record), ParameterSource.DEFAULT
        return value, source


# What the seat record supplies: the seat (--as) and its hub's home (--home, after $AGORA_HOME).
_FROM_RECORD = {"as_id": lambda record: record.agent, "home": lambda record: str(record.home)}


def seat_record(ctx: click.Context):
    """The nearest seat record at or above the working directory, read once per invocation; None if none.

    Only the nearest counts: a workspace's identity is its own wiring, never a parent's.
    """
    if RECORD_META not in ctx.meta:
        from agorad.surface.seat_record import RecordError, find

        try:
            ctx.meta[RECORD_META] = find()
        except RecordError as exc:
            raise click.UsageError(f"{exc} (or give --as)", ctx) from None
    return ctx.meta[RECORD_META]


def remember(ctx: click.Context, param: click.Parameter, value):
    """The group's callback for a shared option: keep a value given on its command line for the command."""
    if ctx.get_parameter_source(param.name) is ParameterSource.COMMANDLINE:
        ctx.meta.setdefault(_GIVEN, {})[param.name] = value
    return value


def _remember_url(ctx: click.Context, param: click.Parameter, value):
    if value:
        ctx.meta[URL_META] = value
    return value


def group_options(command):
    """Decorate the `agora` group with the shared options (not exposed to its callback)."""
    decorators = [
        click.option("--home", "home", metavar="DIR", expose_value=False, callback=remember,
                     help="The hub's home directory, for the command that follows."),
        click.option("--as", "as_id", metavar="ID", expose_value=False, callback=remember,
                     help="Act as this agent, for a command that takes --as."),
        click.option("--json", "as_json", is_flag=True, default=None, expose_value=False, callback=remember,
                     help="Print JSON, for a command that takes --json."),
        click.option("--url", metavar="URL", expose_value=False, callback=_remember_url,
                     help="Speak to the hub's remote port (ws:// or wss://) as the seat --as names, "
                          "instead of its Unix socket (default: the home's hub.url, else $AGORA_URL)."),
    ]
    for decorate in reversed(decorators):
        command = decorate(command)
    return command


def check_applies(ctx: click.Context, name: str, command: click.Command | None, rest: list[str]) -> None:
    """Refuse a shared option given before a command that does not take it, before anything runs."""
    given = ctx.meta.get(_GIVEN)
    if not given or command is None or set(ctx.help_option_names) & set(rest):  # help is shown whatever else
        return
    path, leaf = _leaf(ctx, [name], command, rest)
    if leaf is None:  # no subcommand named yet (or --help): click says what is missing
        return
    takes = {p.name for p in leaf.params if isinstance(p, SharedOption)}
    for option, param_name in SHARED.items():
        if param_name in given and param_name not in takes:
            error = click.UsageError(f"{option} was given before `agora {' '.join(path)}`, which does not take it", ctx)
            hook = getattr(leaf, "usage_failed", None)
            if hook:  # a command with its own usage-error contract (agora listen)
                hook(error)
            raise error


def _leaf(ctx, path: list[str], command: click.Command, rest: list[str]):
    """The command the command line names, through nested groups, and its path; nothing is run."""
    while isinstance(command, click.Group):
        if not rest or rest[0].startswith("-"):
            return path, None
        command = command.get_command(ctx, rest[0])
        if command is None:
            return path, None
        path, rest = [*path, rest[0]], rest[1:]
    return path, command
