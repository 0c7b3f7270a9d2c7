"""`agora kb get|put|ls|rm`: the key/value knowledge base."""

from __future__ import annotations

import shlex

import click

from agorad.cli.common import (
    ago, as_option, connect, for_terminal, handles_errors, home_option, json_option, print_json, print_table, read_text,
)


@click.group("kb")
def kb():
    """Read and write the knowledge base (profile/<id> entries are identities)."""


@kb.command("get")
@click.argument("key")
@home_option
@as_option(required=False)
@json_option
@handles_errors
def kb_get(key, home, as_id, as_json):
    """Print the value of KEY."""
    with connect(home, as_id) as hub:
        entry = hub.call("kb.get", key=key)["entry"]
    if as_json:
        print_json(entry)
    else:
        click.echo(for_terminal(entry["value"]), color=True)  # color: click would strip ESC sequences from a pipe


@kb.command("put")
@click.argument("key")
@click.argument("value")
@home_option
@as_option(required=False)
@json_option
@handles_errors
def kb_put(key, value, home, as_id, as_json):
    """Set KEY to VALUE (`-` reads the value from stdin); the author is --as ID or the operator."""
    value = read_text(value, "VALUE")
    with connect(home, as_id) as hub:
        entry = hub.call("kb.put", key=key, value=value)["entry"]
    if as_json:
        print_json(entry)
    else:
        click.echo(f"{entry['key']} written by {entry['author']}")


@kb.command("ls")
@click.argument("prefix", default="")
@click.option("--limit", type=click.IntRange(1, 1000), default=100, show_default=True, help="At most this many entries.")
@click.option("--after", metavar="KEY", default="", help="Start after this key (the last one a listing showed).")
@home_option
@as_option(required=False)
@json_option
@handles_errors
def kb_ls(prefix, limit, after, home, as_id, as_json):
    """List entries whose key starts with PREFIX, by key.

    A listing stops at --limit entries or at about 12 MiB of entries as JSON; when more follow, it says
    how to list them (--after the last key shown).
    """
    with connect(home, as_id) as hub:
        listed = hub.call("kb.list", prefix=prefix, limit=limit, after=after)
    entries, now = listed["entries"], listed["now"]
    if as_json:
        print_json(entries)
    elif entries:
        rows = [[e["key"], e["author"], ago(e["updated_at"], now), _first_line(e["value"])] for e in entries]
        print_table(rows, ["KEY", "AUTHOR", "UPDATED", "VALUE"])
    if listed.get("more") and entries:
        last = shlex.quote(entries[-1]["key"])
        click.echo(f"more entries follow: agora kb ls {shlex.quote(prefix)} --after {last}", err=True)


@kb.command("rm")
@click.argument("key")
@home_option
@as_option(required=False)
@json_option
@handles_errors
def kb_rm(key, home, as_id, as_json):
    """Delete KEY."""
    with connect(home, as_id) as hub:
        result = hub.call("kb.delete", key=key)
    if as_json:
        print_json(result)
    else:
        click.echo(f"deleted {result['deleted']}")


def _first_line(value: str, width: int = 60) -> str:
    # Values are free text: show one neutral line, never raw control characters.
    line = "".join(ch if ch.isprintable() else " " for ch in value.split("\n", 1)[0])
    return line if len(line) <= width else line[: width - 3] + "..."
