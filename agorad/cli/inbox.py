"""`agora inbox`, `agora digest`, `agora owed`: what waits for a seat."""

from __future__ import annotations

import click

from agorad.cli.common import ago, as_option, fetch, handles_errors, home_option, json_option
from agorad.surface.fence import one_line
from agorad.surface import settings
from agorad.surface.vocab import ASK_EACH


def _title(text: str) -> str:
    return one_line(text, 100)


def _debt_line(debt: dict, now: float, who: str) -> str:
    escalated = f", escalated x{debt['escalations']}" if debt["escalations"] else ""
    quiet = f", {debt['urgency']}" if debt["urgency"] != "normal" else ""
    each = f", {ASK_EACH}: its own reply" if debt.get("rule") == ASK_EACH else ""
    return f"  {debt['ref']}  {who}  {_title(debt['title'])}  (asked {ago(debt['asked_at'], now)}{quiet}{each}{escalated})"


@click.command("inbox")
@as_option()
@click.option("--limit", type=click.IntRange(1, 1000), default=settings.INBOX_LIMIT, show_default=True, help="At most this many headlines.")
@home_option
@json_option
@handles_errors
def inbox(as_id, limit, home, as_json):
    """What is unread: the owed block first, then headlines by channel."""
    result = fetch(home, as_id, "inbox.check", as_json=as_json, limit=limit)
    if result is None:
        return
    now = result["now"]
    if result["owed"]:
        click.echo(f"OWED ({result['owed_total']}): you owe a reply to")
        for debt in result["owed"]:
            click.echo(_debt_line(debt, now, f"from {debt['asker']}"))
        if result["owed_total"] > len(result["owed"]):
            click.echo(f"  ... and {result['owed_total'] - len(result['owed'])} more: agora owed --as {as_id}")
    for channel in result["channels"]:
        click.echo(f"{channel['channel']} ({channel['unread']} unread)")
        for message in channel["messages"]:
            flags = f"  [{','.join(message['flags'])}]" if message["flags"] else ""
            quiet = f"  ({message['urgency']})" if message["urgency"] != "normal" else ""
            click.echo(f"  {message['ref']}  {message['sender']}  {_title(message['title'])}{flags}{quiet}")
    if not result["owed"] and not result["channels"]:
        click.echo("nothing unread, nothing owed")


@click.command("digest")
@as_option()
@home_option
@json_option
@handles_errors
def digest(as_id, home, as_json):
    """One screen: what I owe, what is owed to me, and per channel what is unread."""
    result = fetch(home, as_id, "inbox.digest", as_json=as_json)
    if result is None:
        return
    now = result["now"]
    click.echo(f"owe {result['i_owe_total']} | owed to me {result['owed_to_me_total']} | unread {result['unread']}")
    for debt in result["i_owe"]:
        click.echo(_debt_line(debt, now, f"from {debt['asker']}"))
    for channel in result["channels"]:
        click.echo(f"{channel['channel']}: {channel['unread']} unread from {', '.join(channel['senders'])}")
        for latest in channel["latest"]:
            click.echo(f"  {latest['ref']}  {latest['sender']}  {_title(latest['title'])}")


@click.command("owed")
@as_option()
@home_option
@json_option
@handles_errors
def owed(as_id, home, as_json):
    """What I owe (asks waiting for my reply) and what is owed to me."""
    result = fetch(home, as_id, "owed.list", as_json=as_json)
    if result is None:
        return
    now = result["now"]
    click.echo(f"I owe ({len(result['i_owe'])}):")
    for debt in result["i_owe"]:
        click.echo(_debt_line(debt, now, f"from {debt['asker']}"))
    click.echo(f"owed to me ({len(result['owed_to_me'])}):")
    for debt in result["owed_to_me"]:
        click.echo(_debt_line(debt, now, f"by {debt['debtor']}"))
    if result["declined_to_me"]:
        click.echo(f"declined to me (newest {len(result['declined_to_me'])}):")
        for debt in result["declined_to_me"]:
            click.echo(f"  {debt['ref']}  by {debt['debtor']}  {_title(debt['title'])}  "
                       f"(declined {ago(debt['declined_at'], now)} in {debt['declined_by']})")
