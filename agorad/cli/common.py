"""What every command shares: --home/--as/--json, connecting, printing, and error -> exit status.

This is the only place that prints errors. Exit statuses: 0 success, 1 the
hub refused or failed, 2 usage error (click), 3 no hub answering.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time

import click

from agorad.cli.shared import URL_META, SharedOption
from agorad.surface.errors import AgoraError
from agorad.surface.filenames import hub_url_for
from agorad.surface.keys import in_turn
from agorad.surface.paths import Home
from agorad.surface.vocab import TURN_ENV, URL_ENV

EXIT_ERROR, EXIT_UNAVAILABLE = 1, 3

# Shared options: also accepted before the subcommand (`agora --home DIR status`; see shared.py).
home_option = click.option(
    "--home", "home", cls=SharedOption, envvar="AGORA_HOME", type=click.Path(file_okay=False),
    help="The hub's home directory (default: $AGORA_HOME, else the workspace's seat record, else ~/.agora).",
)
json_option = click.option("--json", "as_json", cls=SharedOption, is_flag=True, help="Print the result as JSON.")


def as_option(required: bool = True):
    return click.option(
        "--as", "as_id", cls=SharedOption, metavar="ID", required=required,
        help="Act as this agent (default: the workspace's seat record, .agora/seat.toml"
             + ("; needed where there is none" if required else ", else the local operator; `-`: the operator")
             + "); the key comes from $AGORA_KEY or <home>/keys/ID.key.",
    )


def fail(message: str, status: int = EXIT_ERROR):
    context = click.get_current_context(silent=True)
    program = context.find_root().info_name if context else "agora"
    click.echo(f"{program}: {message}", err=True)
    sys.exit(status)


def handles_errors(command):
    """Turn an AgoraError (or OSError) into one line on stderr and the matching exit status."""
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except AgoraError as exc:
            fail(_said(exc), EXIT_UNAVAILABLE if exc.reason == "unavailable" else EXIT_ERROR)
        except BrokenPipeError:
            raise  # the reader went away (`agora status | head`): click ends quietly, as a pipe's writer should
        except OSError as exc:
            fail(str(exc))
    return wrapper


def _said(exc: AgoraError) -> str:
    """The hub's message, and for a pause the operator's reason (agora-pause(1)). The hub keeps the reason
    out of the message, which may reach a model as a tool error; here it is quoted as a JSON string, every
    character that is not printable escaped (a remote hub's reason is not checked here), so it stays one
    line of the operator's words."""
    reason = exc.data.get("pause_reason") if exc.reason == "paused" else None
    if not isinstance(reason, str) or not reason:
        return exc.message
    quoted = json.dumps(reason, ensure_ascii=False)  # escapes quotes and C0 controls; the rest, below
    return f"{exc.message}; the operator's reason: {''.join(c if c.isprintable() else _escaped(c) for c in quoted)}"


def for_terminal(text: str) -> str:
    """`text` as it may reach a terminal: escaped as `agora read` shows a body (fence.visible: ESC and the
    other controls, bidi controls, U+2028, but not newline and tab) when standard output is a terminal (an
    agent's KB value could retitle the window or clear the screen); unchanged into a pipe or a file, where a
    script wants the bytes that were stored."""
    from agorad.surface.fence import visible

    return visible(text) if sys.stdout.isatty() else text


def _escaped(character: str) -> str:
    """A character that could act on a terminal or a reader (U+2028, U+0085, bidi controls) as inert text."""
    code = ord(character)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def hub_url(home: Home | None = None) -> str | None:
    """The hub URL this command speaks to, if remote: `agora --url`, else the home's own (its hub.url: the
    home's keys are that hub's), else $AGORA_URL. None: the hub's Unix socket under the home. Never a URL
    a seat record names: a record found above the working directory may be anyone's (a cloned repository's,
    one in /tmp), and the key of the seat it names would go to that URL."""
    context = click.get_current_context(silent=True)
    if context is not None and context.meta.get(URL_META):
        return context.meta[URL_META]
    return hub_url_for(home.root_text) if home is not None else os.environ.get(URL_ENV) or None


def seat_hosts_hub(where: Home, as_id: str | None) -> tuple[str | None, str | None]:
    """(the remote hub, the seat that asks it) when this home is a seat host's: `agora --url`, else the home's
    hub.url; (None, None) on the hub's own host, where a command that lists or shows is the operator. The
    seat: --as, else the one seat whose key the home keeps. $AGORA_URL and a workspace's seat record do not
    make such a command a seat: over them it is refused as the operator (`_connect_remote`) unless --as says
    which seat asks."""
    context = click.get_current_context(silent=True)
    url = (context.meta.get(URL_META) if context is not None else None) or where.hub_url
    if url is None:
        return None, None
    if as_id:
        return url, as_id
    from agorad.surface import keys

    kept = keys.kept_seats(where)
    if len(kept) == 1:
        return url, kept[0]
    which = f"keeps the keys of {', '.join(kept)}" if kept else f"keeps no seat's key in {where.keys_dir}"
    fail(f"the hub at {url} answers seats only, and the home {where.root} {which}: give --as ID", 2)


def connect(home: str | None, as_id: str | None = None):
    """A connected client; after `hub.hello` as `as_id` when given. Over a URL (hub_url) always as a seat."""
    from agorad.surface import keys
    from agorad.surface.client import Client

    if as_id is None and in_turn():
        as_id = _turn_seat()
    url = hub_url(Home.resolve(home))
    if url is not None:
        return _connect_remote(url, home, as_id)
    client = Client(Home.resolve(home)).connect()
    if as_id is None:
        return client
    key_owner = as_id
    key = keys.read_key(client.home, as_id)
    if key is None:
        # A renamed seat's key file moved with it: ask the hub where the old id points.
        key_owner = client.call("agents.resolve", agent=as_id)["agent"]
        key = keys.read_key(client.home, key_owner)
    if key is None:
        client.close()
        raise AgoraError(keys.no_key(client.home, as_id, "set AGORA_KEY or put the seat's key in "
                                     f"{client.home.key_file(key_owner)}", holder=key_owner))
    _hello(client, as_id, key, client.home.key_file(key_owner))
    return client


def _turn_seat() -> str:
    """In a driven turn the CLI acts as the turn's seat: a command that would act as a hub's operator asks
    as the seat instead, and the hub refuses what only the operator may do. A review had a turn rekey
    another seat, and print its new key, through `agora agent rekey`."""
    seat = os.environ.get("AGORA_AGENT_ID")
    if not seat:
        refuse_in_turn()
    return seat


def refuse_in_turn(does: str = "acts as a hub's operator") -> None:
    """Exit 1 in a driven turn: what acts as a hub's operator (or `does` something else no turn may) is not
    for a turn's tools (agora-drive(1) SECURITY)."""
    if in_turn():
        context = click.get_current_context(silent=True)
        command = context.command_path if context is not None else "this command"
        fail(f"`{command}` {does}, and this process is part of a driven turn ({TURN_ENV} is "
             "set): a turn's tools act as its seat only (agora-drive(1) SECURITY). Run it from your own shell")


def _connect_remote(url: str, home: str | None, as_id: str | None):
    """Over the hub's remote port the CLI is a seat, never the operator; its key is read on this host."""
    from agorad.surface import keys
    from agorad.surface.errors import Forbidden
    from agorad.surface.wsclient import RemoteClient

    if as_id is None:
        context = click.get_current_context(silent=True)
        command = context.command_path if context is not None else "this command"
        raise Forbidden(f"`{command}` acts as the local operator, who is only ever a same-user peer on the hub's "
                        f"own socket; over {url} the CLI acts as a seat (give --as ID where the command takes it). "
                        "Run it on the hub's host, with a home of the hub's own (not one whose hub.url names "
                        "another host) and without AGORA_URL.")
    where = Home.resolve(home)
    key = keys.read_key(where, as_id)
    if key is None:
        raise AgoraError(keys.no_key(where, as_id, f"set AGORA_KEY or put the seat's key in {where.key_file(as_id)}"))
    client = RemoteClient(url).connect()
    _hello(client, as_id, key, where.key_file(as_id))
    return client


def _hello(client, as_id: str, key: str, key_file) -> None:
    """hub.hello as the seat; a refused key says which key was tried, and where the right one goes."""
    from agorad.surface.errors import Unauthorized

    try:
        report_redirect(client.hello(as_id, key).get("redirected"))
    except Unauthorized as exc:
        client.close()
        if os.environ.get("AGORA_KEY"):
            tried = (f"the key in $AGORA_KEY was tried: unset AGORA_KEY to use {key_file}, or set it to "
                     f"{as_id}'s key")
        else:
            tried = f"the key in {key_file} was tried: put {as_id}'s key there"
        raise Unauthorized(f"{exc.message} ({tried}, as `agora agent add` printed it on the hub's host)") from None
    except BaseException:
        client.close()
        raise


def fetch(home, as_id: str | None, method: str, as_json: bool, **params) -> dict | None:
    """Call `method` (as the seat `as_id`, or the operator) with the params that are not None; print the
    result as JSON and return None when --json asked for that, else return it for the command to print."""
    with connect(home, as_id) as hub:
        result = hub.call(method, **{name: value for name, value in params.items() if value is not None})
    if as_json:
        print_json(result)
        return None
    return result


def report_redirect(redirect: dict | None) -> None:
    if redirect:
        click.echo(f"redirected: {redirect['from']} -> {redirect['to']} ({redirect['reason']})", err=True)


def read_text(text: str | None, name: str = "BODY") -> str:
    """An argument of free text as given, or stdin's for `-`; either must be UTF-8."""
    if text != "-":
        if text is not None:
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise click.BadParameter(f"{name} is not valid UTF-8", param_hint=name) from None
        return text or ""
    try:
        return sys.stdin.buffer.read().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise click.BadParameter(f"the {name.lower()} on stdin is not valid UTF-8 (byte {exc.start})",
                                 param_hint="-") from None


def print_json(data) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True))


def print_table(rows: list[list[str]], headers: list[str]) -> None:
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows)]
    for row in [headers, *rows]:
        click.echo("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())


def ago(then: float | None, now: float | None = None) -> str:
    if then is None:
        return "-"
    seconds = max(0, int((now or time.time()) - then))
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"


class Duration(click.ParamType):
    """Seconds, or a number with s/m/h/d: 90, 90s, 30m, 2h."""

    name = "duration"

    def __init__(self, minimum: float = 1.0):
        self.minimum = minimum

    def convert(self, value, param, ctx):
        from agorad.surface.durations import parse_duration

        try:
            return parse_duration(value, self.minimum)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


DURATION = Duration()
DURATION_OR_ZERO = Duration(minimum=0)
