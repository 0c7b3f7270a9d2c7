"""`agora send`, `agora read`, `agora ack`: writing, reading and handling messages."""

from __future__ import annotations

import click

from agorad.cli.common import (
    as_option, connect, handles_errors, home_option, json_option, print_json, read_text, report_redirect,
)
from agorad.surface.fence import one_line
from agorad.surface.vocab import DEFAULT_URGENCY, URGENCIES


def _title(title: str | None, body: str, decline: bool) -> str:
    if title:
        return title
    first = one_line(body.strip().split("\n", 1)[0]).strip()
    if not first and decline:
        return "declined"
    if not first:
        raise click.UsageError("give a --title, or a BODY whose first line can serve as one")
    return first[:120]


def _addressees(given: tuple[str, ...]) -> list[str]:
    """Every id of every --to (each `bob` or `bob,carol`), in order, once each: a repeated --to adds
    to the others rather than replacing them."""
    ids = (agent.strip() for value in given for agent in value.split(","))
    return list(dict.fromkeys(agent for agent in ids if agent))


@click.command("send")
@as_option()
@click.argument("target")
@click.argument("body", required=False)
@click.option("--title", help="One-line headline (default: the body's first line).")
@click.option("--to", "to", multiple=True, metavar="ID[,ID...]",
              help="Agent ids the message is for, comma-separated or one --to each (repeatable); "
                   "@mentions in the text count too.")
@click.option("--ask", is_flag=True, help="Ask for a reply: each addressee owes one until someone answers.")
@click.option("--ask-each", is_flag=True,
              help="Ask every addressee for its own reply: one's answer discharges only its own debt.")
@click.option("--reply-to", metavar="REF", help="The message this answers, as CHANNEL#SEQ; a reply discharges its ask.")
@click.option("--decline", is_flag=True,
              help="With --reply-to: decline that ask on the record, settling your debt on it without answering.")
@click.option("--urgency", type=click.Choice(URGENCIES), default=DEFAULT_URGENCY, show_default=True,
              help="normal rings the recipients' doorbell (agora listen); next_turn is delivered quietly "
                   "and waits for their next inbox check.")
@home_option
@json_option
@handles_errors
def send(as_id, target, body, title, to, ask, ask_each, reply_to, decline, urgency, home, as_json):
    """Post BODY (or stdin with -) to TARGET: a channel name, or @ID for a DM."""
    if decline and not reply_to:
        raise click.UsageError("--decline needs --reply-to REF, the ask you decline")
    text = read_text(body)
    params = {"target": target, "title": _title(title, text, decline), "body": text, "ask": ask, "urgency": urgency,
              "to": _addressees(to)}
    if reply_to:
        params["reply_to"] = reply_to
    if ask_each:  # sent only when given, so a hub from before --ask-each still takes every other send
        params["ask_each"] = True
    if decline:
        params["decline"] = True
    with connect(home, as_id) as hub:
        receipt = hub.call("messages.send", **params)
    for redirect in receipt["redirected"]:
        report_redirect(redirect)
    if as_json:
        print_json(receipt)
        return
    to_text = f" (for {', '.join(receipt['to'])})" if receipt["to"] else ""
    asking = " asking each for a reply" if ask_each else " asking for a reply" if receipt["ask"] else ""
    settled = f"; {'declined' if decline else 'discharged'} {receipt['discharged']} debt(s)" if receipt["discharged"] else ""
    extras = asking + settled
    click.echo(f"sent {receipt['ref']} to {receipt['delivered']} agent(s){to_text}{extras}")


@click.command("read")
@as_option()
@click.argument("ref")
@home_option
@json_option
@handles_errors
def read(as_id, ref, home, as_json):
    """Print message REF (CHANNEL#SEQ) inside a fence. Reading does not ack."""
    with connect(home, as_id) as hub:
        message = hub.call("messages.read", ref=ref)
    if as_json:
        print_json(message)
    else:
        click.echo(message["fenced"])


@click.command("ack")
@as_option()
@click.argument("refs", nargs=-1, metavar="[REF]...")
@click.option("--upto", metavar="REF", help="Ack every message of REF's channel up to and including REF.")
@click.option("--all", "everything", is_flag=True, help="Ack everything in every channel.")
@home_option
@json_option
@handles_errors
def ack(as_id, refs, upto, everything, home, as_json):
    """Mark messages handled: REF..., --upto REF, or --all. An ack never discharges a debt."""
    if sum(map(bool, (refs, upto, everything))) != 1:
        raise click.UsageError("give REF..., --upto REF or --all (exactly one)")
    with connect(home, as_id) as hub:
        if everything:
            result = hub.call("inbox.ack", all=True)
        elif upto:
            result = hub.call("inbox.ack", upto=upto)
        else:
            result = hub.call("inbox.ack", ref=list(refs))  # one request: all of them or none
    if as_json:
        print_json(result)
    elif everything:
        click.echo("acked everything")
    else:
        for ref, cursor in result["cursors"].items():
            click.echo(f"acked {ref} ({cursor['channel']} handled through #{cursor['cursor']})")
