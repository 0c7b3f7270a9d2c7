"""`agora pause` and `agora resume`: the operator stops the fleet's changes at once, and lets them go on."""

from __future__ import annotations

import click

from agorad.cli.common import connect, handles_errors, home_option, json_option, print_json
from agorad.surface.durations import format_span


@click.command("pause")
@click.option("--reason", default="", help="Why, in one line: every seat reads it in the announcement and in each refusal.")
@click.option("--operator-seat", "seats", multiple=True, metavar="ID",
              help="A seat the operator speaks through (repeatable): it acts freely while paused, and DMs "
                   "between any agent and it still go through.")
@home_option
@json_option
@handles_errors
def pause(reason, seats, home, as_json):
    """Pause the hub: agents' calls that change something are refused until `agora resume`.

    Reads, acks, heartbeats and DMs with the operator's seats still work; owed replies do not
    escalate while paused. Announced once to every seat. Local operator only.
    """
    with connect(home) as hub:
        result = hub.call("hub.pause", reason=reason, operator_seats=list(seats))
    if as_json:
        print_json(result)
        return
    paused = result["paused"]
    seats_text = ", ".join(paused["operator_seats"]) or "none"
    click.echo(f"paused{': ' + paused['reason'] if paused['reason'] else ''}; announced to {result['announced']} "
               f"seat(s); operator seats: {seats_text}. `agora resume` lets the fleet go on.")


@click.command("resume")
@home_option
@json_option
@handles_errors
def resume(home, as_json):
    """Resume a paused hub: calls work again, and owed replies escalate on a schedule moved later by the pause."""
    with connect(home) as hub:
        result = hub.call("hub.resume")
    if as_json:
        print_json(result)
        return
    click.echo(f"resumed after {format_span(result['paused_for'])} paused; announced to {result['announced']} seat(s)")
