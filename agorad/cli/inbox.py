"""`agora inbox`, `agora digest`, `agora owed`: what waits for a seat."""

from __future__ import annotations

import sys

import click

from agorad.cli.common import ago, as_option, fetch, handles_errors, home_option, json_option
from agorad.surface.fence import one_line, quoted
from agorad.surface import settings
from agorad.surface.durations import format_span
from agorad.surface.vocab import ASK_EACH


def _title(text: str) -> str:
    return one_line(text, 100)


def _charter_lines(result: dict, as_id: str, now: float) -> None:
    """One CHARTER line per charter binding the seat whose current version it has not read: above everything."""
    for unread in result.get("charter") or []:
        channel = unread["channel"]
        scope, show = (f"channel {channel}", f" {channel}") if channel else ("hub", "")
        click.echo(f"CHARTER {scope} v{unread['version']} (set {ago(unread['set_at'], now)}) binds you and you have "
                   f"not read it: agora charter show{show} --as {as_id}")


def _paused_line(result: dict) -> None:
    """Above everything: a paused hub refuses what this inbox would have the seat do."""
    paused = result.get("paused")
    if paused and paused["operator_seat"]:
        click.echo(f"PAUSED for {format_span(paused['paused_for'])} by the operator; you are one of its seats and "
                   "act as ever")
    elif paused:
        open_dms = f" (but your DMs with its seats: {', '.join(paused['open_dms'])})" if paused["open_dms"] else ""
        click.echo(f"PAUSED for {format_span(paused['paused_for'])} by the operator: answers, posts and claims are "
                   f"refused until it resumes{open_dms}; reading and acking work")


def _phase_lines(phases: list[dict], total: int, now: float) -> list[str]:
    """The open phases of the seat's channels: right after the owed block, before any arrivals."""
    if not phases:
        return []
    return [f"PHASES ({total}): open in your channels"] + [
        f"  {found['channel']}  phase:{found['track']}  {found['stage']}  v{found['version']}  "
        f"(set by {found['set_by']} {ago(found['set_at'], now)})" for found in phases]


def _show(lines: list[str], what: str) -> None:
    """Lines holding other agents' words (titles, names, stages). To a terminal, as they are; anywhere else
    (a harness running the command for a model, a pipe) inside an AGORA-DATA fence, as `agora read` and
    the MCP tools quote them: the model is told they are data, not instructions. Scripts read --json."""
    if not lines:
        return
    if sys.stdout.isatty():
        click.echo("\n".join(lines))
    else:
        click.echo(quoted(lines, what))


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
    """What waits: CHARTER lines, the owed block, open phases, then unread headlines by channel."""
    result = fetch(home, as_id, "inbox.check", as_json=as_json, limit=limit)
    if result is None:
        return
    now = result["now"]
    _paused_line(result)
    _charter_lines(result, as_id, now)
    lines = []
    if result["owed"]:
        lines.append(f"OWED ({result['owed_total']}): you owe a reply to")
        lines += [_debt_line(debt, now, f"from {debt['asker']}") for debt in result["owed"]]
        if result["owed_total"] > len(result["owed"]):
            lines.append(f"  ... and {result['owed_total'] - len(result['owed'])} more: agora owed --as {as_id}")
    lines += _phase_lines(result["phases"], result["phases_total"], now)
    for channel in result["channels"]:
        lines.append(f"{channel['channel']} ({channel['unread']} unread)")
        for message in channel["messages"]:
            flags = f"  [{','.join(message['flags'])}]" if message["flags"] else ""
            quiet = f"  ({message['urgency']})" if message["urgency"] != "normal" else ""
            lines.append(f"  {message['ref']}  {message['sender']}  {_title(message['title'])}{flags}{quiet}")
    _show(lines, "inbox")
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
    _charter_lines(result, as_id, now)
    click.echo(f"owe {result['i_owe_total']} | owed to me {result['owed_to_me_total']} | unread {result['unread']}")
    lines = [_debt_line(debt, now, f"from {debt['asker']}") for debt in result["i_owe"]]
    lines += _phase_lines(result["phases"], len(result["phases"]), now)
    for channel in result["channels"]:
        lines.append(f"{channel['channel']}: {channel['unread']} unread from {', '.join(channel['senders'])}")
        lines += [f"  {latest['ref']}  {latest['sender']}  {_title(latest['title'])}" for latest in channel["latest"]]
    _show(lines, "digest")


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
    lines = [f"I owe ({len(result['i_owe'])}):"]
    lines += [_debt_line(debt, now, f"from {debt['asker']}") for debt in result["i_owe"]]
    lines.append(f"owed to me ({len(result['owed_to_me'])}):")
    lines += [_debt_line(debt, now, f"by {debt['debtor']}") for debt in result["owed_to_me"]]
    if result["declined_to_me"]:
        lines.append(f"declined to me (newest {len(result['declined_to_me'])}):")
        lines += [f"  {debt['ref']}  by {debt['debtor']}  {_title(debt['title'])}  "
                  f"(declined {ago(debt['declined_at'], now)} in {debt['declined_by']})"
                  for debt in result["declined_to_me"]]
    if result["i_owe"] or result["owed_to_me"] or result["declined_to_me"]:
        _show(lines, "owed")
    else:
        click.echo("\n".join(lines))  # the counts alone: nobody's words
