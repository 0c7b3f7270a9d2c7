"""`agora phase set|ls`: `phase:<track>` rows saying where a track of work stands in a channel."""

from __future__ import annotations

import click

from agorad.cli.common import ago, as_option, fetch, handles_errors, home_option, json_option, print_json, print_table
from agorad.surface.vocab import PHASE_STAGES


@click.group("phase")
def phase():
    """Set and list the phases of channels (members only): propose, open, work, gate, complete."""


@phase.command("set")
@click.argument("channel")
@click.argument("track")
@click.argument("stage", type=click.Choice(PHASE_STAGES))
@click.option("--version", "expected", type=click.IntRange(min=0),
              help="The version you read (0: the track is new); if it moved on since, nothing changes.")
@as_option(required=False)
@home_option
@json_option
@handles_errors
def phase_set(channel, track, stage, expected, as_id, home, as_json):
    """Put TRACK of CHANNEL at STAGE (phase:TRACK; a new track starts at version 1)."""
    result = fetch(home, as_id, "phases.set", as_json, channel=channel, track=track, stage=stage, version=expected)
    if result is None:
        return
    found = result["phase"]
    done = "set" if result["changed"] else "unchanged"
    click.echo(f"{found['channel']} phase:{found['track']} {found['stage']} v{found['version']} {done}")


@phase.command("ls")
@click.argument("channel", required=False)
@as_option(required=False)
@home_option
@json_option
@handles_errors
def phase_ls(channel, as_id, home, as_json):
    """List CHANNEL's phases, or those of every channel you are in (every channel, for the operator)."""
    listed = fetch(home, as_id, "phases.list", False, channel=channel)
    if as_json:
        print_json(listed["phases"])
        return
    rows = [[p["channel"], f"phase:{p['track']}", p["stage"], str(p["version"]), p["set_by"], ago(p["set_at"], listed["now"])]
            for p in listed["phases"]]
    if rows:
        print_table(rows, ["CHANNEL", "PHASE", "STAGE", "VERSION", "SET BY", "SET"])
    else:
        click.echo("no phases")
