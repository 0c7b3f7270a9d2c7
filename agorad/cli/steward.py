"""`agora steward`: the operator's report on stale claims, seats and debts. It sends nothing."""

from __future__ import annotations

import click

from agorad.cli.common import ago, fetch, handles_errors, home_option, json_option
from agorad.surface import settings
from agorad.surface.fence import one_line


@click.command("steward")
@click.option("--cadences", type=click.IntRange(1), default=settings.STEWARD_CADENCES, show_default=True,
              help="A claim with no receipt for this many of its cadences is stale.")
@home_option
@json_option
@handles_errors
def steward(cadences, home, as_json):
    """Report stale claims, seats and debts to the operator: for judgment, never a work order."""
    result = fetch(home, None, "steward.report", as_json, cadences=cadences)
    if result is None:
        return
    now = result["now"]
    click.echo(f"claims ({len(result['claims'])}):")
    for claim in result["claims"]:
        click.echo(f"  {claim['ref']}  {claim['owner']}  {claim['channel']}  {one_line(claim['title'], 60)}  "
                   f"[{','.join(claim['why'])}] (last receipt {ago(claim['last_receipt_at'], now)})")
    click.echo(f"seats ({len(result['seats'])}):")
    for seat in result["seats"]:
        state = "expired" if seat["expired"] else seat["status"]
        click.echo(f"  {seat['agent']}  {state}  seen {ago(seat['last_seen'], now)}  "
                   f"{seat['open_claims']} open claim(s), owes {seat['owed']}")
    click.echo(f"debts past the last escalation ({len(result['debts'])}):")
    for debt in result["debts"]:
        click.echo(f"  {debt['ref']}  {debt['debtor']} owes {debt['asker']}  {one_line(debt['title'], 60)}  "
                   f"(asked {ago(debt['asked_at'], now)})")
    if not (result["claims"] or result["seats"] or result["debts"]):
        click.echo("nothing looks stale")
