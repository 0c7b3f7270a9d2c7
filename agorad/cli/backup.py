"""`agora backup` and `agora restore`: a consistent copy of the hub's database, and putting one back."""

from __future__ import annotations

from pathlib import Path

import click

from agorad.cli.common import handles_errors, home_option, json_option, print_json, refuse_in_turn
from agorad.surface import settings
from agorad.surface.paths import Home


def _named_file(ctx, param, value: Path) -> Path:
    """An empty FILE is refused: click passes '' through as the current directory (`agora backup ''` said the
    directory exists, give --force; `agora restore ''` that there was no file named after it)."""
    if value == Path("."):  # only '' reaches here as ".": click refuses "." itself as a directory
        raise click.BadParameter("is empty: name the file", ctx=ctx, param=param)
    return value


@click.command("backup")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path), callback=_named_file)
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
@home_option
@json_option
@handles_errors
def backup(file, force, home, as_json):
    """Copy the hub's database to FILE (0600), consistent while the hub serves.

    A read-only connection of the caller's own copies every page in one read transaction
    (SQLite's online backup API): the copy holds every send acknowledged before it began.
    """
    refuse_in_turn()  # every channel's messages, DMs between other seats among them
    from agorad.runtime.backup import backup as make_backup

    facts = make_backup(Home.resolve(home), file, force)
    if as_json:
        print_json(facts)
        return
    click.echo(f"backed up {facts['messages']} messages and {facts['agents']} agents to {facts['path']} "
               f"({facts['bytes']} bytes)")


@click.command("restore")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path), callback=_named_file)
@click.option("--notify-dir", metavar="DIR",
              help="Where the hub writes the <id>-inbox.log notify files, as given to `agora up` "
                   "(default: the home; '' when they are off).")
@home_option
@json_option
@handles_errors
def restore(file, notify_dir, home, as_json):
    """Install FILE, a backup, as the home's database; refused while a hub runs on the home.

    FILE is checked first (an Agora database, a schema this agora knows, integrity_check);
    then the notify files are made anew from it, so listeners ring nothing twice.
    """
    refuse_in_turn()
    from agorad.runtime.restore import restore as put_back

    where = Home.resolve(home)
    directory = None if notify_dir == "" else (where.root if notify_dir is None else Home.resolve(notify_dir).root)
    facts = put_back(where, file, directory, int(settings.NOTIFY_ROTATE_MB * (1 << 20)))
    if as_json:
        print_json(facts)
        return
    click.echo(f"restored {facts['messages']} messages and {facts['agents']} agents from {facts['source']} "
               f"into {facts['path']}; notify files {'remade in ' + str(directory) if directory else 'off'}")
