"""`agora check`: the database's integrity, and the notify files and listeners' offsets against it."""

from __future__ import annotations

import sys

import click

from agorad.cli.common import EXIT_ERROR, connect, handles_errors, home_option, json_option, print_json, print_table
from agorad.surface.errors import Unavailable
from agorad.surface.paths import Home


@click.command("check")
@click.option("--quick", is_flag=True, help="Run SQLite's quick_check instead of integrity_check (skips matching indexes to tables).")
@click.option("--notify-dir", metavar="DIR",
              help="Where the notify files are (default: what the hub says, else the home; '' to skip them).")
@home_option
@json_option
@handles_errors
def check(quick, notify_dir, home, as_json):
    """Check the database (integrity_check) and each seat's notify file and listener offset against it.

    Exits 1 when something is wrong. Only reads: safe while the hub serves.
    """
    from agorad.runtime.check import check as run_check

    where = Home.resolve(home)
    report = run_check(where, _notify_dir(where, notify_dir), quick)
    if as_json:
        print_json(report)
    else:
        _print(report)
    if not report["ok"]:
        sys.exit(EXIT_ERROR)


def _notify_dir(where: Home, given: str | None):
    if given is not None:
        return Home.resolve(given).root if given else None
    try:
        with connect(str(where.root)) as hub:
            told = hub.call("hub.status")["notify_dir"]
        return Home.resolve(told).root if told else None
    except Unavailable:
        return where.root


def _print(report: dict) -> None:
    state = "ok" if not report["integrity"] else "FAILED"
    click.echo(f"database: {report['database']}: integrity {state}, schema {report['schema']}")
    click.echo(f"notify files: {report['notify_dir'] or 'not checked'}")
    if report["seats"]:
        rows = [[s["agent"], str(s["database_id"]), _shown(s["file_id"]),
                 _shown(s["offset"]["id"] if s["offset"] else None), "PROBLEM" if s["problems"] else "ok"]
                for s in report["seats"]]
        click.echo("")
        print_table(rows, ["SEAT", "DATABASE ID", "FILE ID", "OFFSET ID", "STATE"])
    lines = [f"problem: {p}" for p in report["integrity"]]
    for seat in report["seats"]:
        lines += [f"problem: {seat['agent']}: {p}" for p in seat["problems"]]
        lines += [f"note: {seat['agent']}: {n}" for n in seat["notes"]]
    if lines:
        click.echo("")
        click.echo("\n".join(lines))
    click.echo("check: ok" if report["ok"] else "check: something is wrong (see the problems above)")


def _shown(value) -> str:
    return "-" if value is None else str(value)
