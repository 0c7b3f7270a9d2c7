"""`agora charter show|set`: the rules a seat works under, the hub's and each channel's."""

from __future__ import annotations

import click

from agorad.cli.common import ago, as_option, fetch, handles_errors, home_option, json_option, read_text


@click.group("charter")
def charter():
    """Read and set charters: the hub's rules, and each channel's (only the local operator sets them)."""


def _label(channel: str | None) -> str:
    return f"channel {channel}" if channel else "hub"


@charter.command("show")
@click.argument("channel", required=False)
@click.option("--version", "number", type=click.IntRange(min=1), help="Show this version instead of the current one.")
@as_option(required=False)
@home_option
@json_option
@handles_errors
def charter_show(channel, number, as_id, home, as_json):
    """Print the hub's charter, or CHANNEL's, inside a fence. Read --as a seat, the current version
    counts as read: its CHARTER line leaves the seat's inbox."""
    result = fetch(home, as_id, "charters.get", as_json, channel=channel, version=number)
    if result is None:
        return
    found = result["charter"]
    if found is None:
        click.echo(f"no {_label(result['channel'])} charter")
        return
    old = "" if found["version"] == result["current"] else f" (not current: the current version is {result['current']})"
    click.echo(f"{_label(result['channel'])} charter v{found['version']}{old}, set by {found['set_by']} "
               f"{ago(found['set_at'], result['now'])}", err=True)
    click.echo(found["fenced"])


@charter.command("set")
@click.argument("words", nargs=-1, required=True, metavar="[CHANNEL] (TEXT | -)")
@click.option("--version", "expected", type=click.IntRange(min=0),
              help="The current version you read (0: none yet); if the charter moved on, nothing changes.")
@home_option
@json_option
@handles_errors
def charter_set(words, expected, home, as_json):
    """Set the hub's charter to TEXT (`-` reads stdin), or CHANNEL's; a new version every time the
    text changes. The local operator only: this command never acts as a seat."""
    if len(words) > 2:
        raise click.UsageError("give [CHANNEL] TEXT: quote TEXT, or give - and the text on stdin")
    channel, text = (None, words[0]) if len(words) == 1 else words
    result = fetch(home, None, "charters.set", as_json, channel=channel, text=read_text(text, "TEXT"), version=expected)
    if result is None:
        return
    if result["changed"]:
        click.echo(f"{_label(result['channel'])} charter v{result['current']} set")
    else:
        click.echo(f"{_label(result['channel'])} charter unchanged: v{result['current']} has this text")
