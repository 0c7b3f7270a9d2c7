"""`agora claim open|update|receipt|park|done|ls|show`: who is doing what."""

from __future__ import annotations

import shlex

import click

from agorad.cli.common import (
    ago, as_option, fetch, handles_errors, home_option, json_option, print_json, print_table, read_text,
)
from agorad.surface import settings
from agorad.surface.durations import format_duration
from agorad.surface.fence import one_line
from agorad.surface.vocab import CLAIM_STATES, CLAIM_UNSET


class Cadence(click.ParamType):
    """A check-in cadence in whole minutes (`45m`, `2h`); for a claim that may have one already
    (`removable`), also `none` to remove it. Its errors offer only what this command takes."""

    name = "cadence"

    def __init__(self, removable: bool):
        self.removable = removable

    def convert(self, value, param, ctx):
        from agorad.surface.durations import parse_duration

        if isinstance(value, int):
            return value
        if value == CLAIM_UNSET:
            if not self.removable:
                self.fail("a new claim has no cadence to remove; leave --cadence out", param, ctx)
            return value
        try:
            seconds = parse_duration(value)
        except ValueError:
            self.fail(f"{value!r} is not a cadence: give whole minutes, {settings.CADENCE_FLOOR_MINUTES}m at "
                      f"least, like 45m, 2h or 1d{self._or_none()}", param, ctx)
        floor, ceiling = settings.CADENCE_FLOOR_MINUTES, settings.CADENCE_MAX_MINUTES
        if seconds % 60 and seconds <= ceiling * 60:  # (a float past 2**53 s is no whole minute: it is too long)
            self.fail(f"{value!r} is not whole minutes (a cadence is given like 45m or 2h){self._or_none()}",
                      param, ctx)
        if not floor * 60 <= seconds <= ceiling * 60:  # said here in the option's words, not the hub's field name
            self.fail(f"{value!r} is outside {format_duration(floor * 60)} to {format_duration(ceiling * 60)}"
                      f"{self._or_none()}", param, ctx)
        return int(seconds // 60)

    def _or_none(self) -> str:
        return f"; or {CLAIM_UNSET} to remove the cadence" if self.removable else ""


NEW_CADENCE, CHANGED_CADENCE = Cadence(removable=False), Cadence(removable=True)
version_option = click.option("--version", "version", type=int, required=True, metavar="N",
                              help="The version you read (agora claim show): a claim changed since is refused.")


@click.group("claim")
def claim():
    """Claims: say who is doing what, with progress receipts and an optional check-in cadence."""


# The hub's `changed` names its wire fields; a person reads them as the options that set them.
# (--json keeps the wire names: a stable contract.)
OPTION_WORDS = {"cadence_minutes": "cadence"}


def _changed_text(changed: list[str]) -> str:
    return ", ".join(OPTION_WORDS.get(field, field) for field in changed)


def _cadence_text(minutes) -> str:
    return format_duration(minutes * 60) if minutes else "-"


def _print_claim(result: dict, verb: str) -> None:
    cadence = f", cadence {_cadence_text(result['cadence_minutes'])}" if result["cadence_minutes"] else ""
    click.echo(f"{verb} {result['ref']} in {result['channel']} ({result['state']}, version {result['version']}{cadence})")


@claim.command("open")
@as_option()
@click.argument("channel")
@click.argument("title")
@click.option("--cadence", type=NEW_CADENCE, metavar="DUR",
              help="Promise a receipt at least this often (whole minutes, 30m at least): a lapse sends you one reminder.")
@click.option("--link", metavar="REF", help="Another claim this one belongs with, as claim:N.")
@home_option
@json_option
@handles_errors
def claim_open(as_id, channel, title, cadence, link, home, as_json):
    """Open a claim in CHANNEL, owned by you: TITLE says what you are doing."""
    params = {"channel": channel, "title": title}
    if cadence is not None:
        params["cadence_minutes"] = cadence
    if link == CLAIM_UNSET:  # as --cadence none: only a claim that has one can have it removed
        raise click.UsageError(f"a new claim has no link to remove; leave --link out (--link {CLAIM_UNSET} is "
                               "for `agora claim update`)")
    if link:
        params["link"] = link
    result = fetch(home, as_id, "claims.open", as_json, **params)
    if result is not None:
        _print_claim(result, "opened")


@claim.command("update")
@as_option(required=False)
@click.argument("ref")
@version_option
@click.option("--title", help="A new title.")
@click.option("--cadence", type=CHANGED_CADENCE, metavar="DUR", help=f"A new cadence (whole minutes), or {CLAIM_UNSET} to remove it.")
@click.option("--link", metavar="REF", help=f"Link to claim REF (claim:N), or {CLAIM_UNSET} to remove the link.")
@click.option("--state", type=click.Choice(CLAIM_STATES), help="A new state (open reopens a parked or done claim).")
@home_option
@json_option
@handles_errors
def claim_update(as_id, ref, version, title, cadence, link, state, home, as_json):
    """Change claim REF if it is still at --version: its owner, or the operator without --as."""
    fields = {"title": title, "cadence_minutes": cadence, "link": link, "state": state}
    params = {name: value for name, value in fields.items() if value is not None}
    if not params:
        raise click.UsageError("nothing to change: give --title, --cadence, --link or --state")
    result = fetch(home, as_id, "claims.update", as_json, ref=ref, version=version, **params)
    if result is not None:
        _print_claim(result, f"changed {_changed_text(result['changed'])} of" if result["changed"] else "nothing changed in")


@claim.command("receipt")
@as_option()
@click.argument("ref")
@click.argument("text")
@home_option
@json_option
@handles_errors
def claim_receipt(as_id, ref, text, home, as_json):
    """Record progress on your claim REF (TEXT, or - for stdin): restarts its cadence, discharges a reminder."""
    from_stdin = text == "-"
    text = read_text(text, "TEXT")
    if from_stdin:
        text = text.strip()  # a line piped in ends with its newline
    result = fetch(home, as_id, "claims.receipt", as_json, ref=ref, text=text)
    if result is None:
        return
    discharged = "; discharged its reminder" if result["discharged"] else ""
    click.echo(f"receipt {result['receipt']} on {result['ref']}{discharged}")


def _state_command(verb: str, method: str, help_text: str):
    @claim.command(verb, help=help_text)
    @as_option(required=False)
    @click.argument("ref")
    @version_option
    @home_option
    @json_option
    @handles_errors
    def command(as_id, ref, version, home, as_json):
        result = fetch(home, as_id, method, as_json, ref=ref, version=version)
        if result is not None:
            _print_claim(result, "set" if result["changed"] else "already")
    return command


_state_command("park", "claims.park",
               "Set claim REF aside (parked) if it is still at --version: its cadence is silenced until it reopens.")
_state_command("done", "claims.done", "Mark claim REF done if it is still at --version; its cadence is silenced.")


@claim.command("ls")
@as_option(required=False)
@click.option("--channel", help="Only claims in this channel.")
@click.option("--state", type=click.Choice(CLAIM_STATES), help="Only claims in this state.")
@click.option("--owner", metavar="ID", help="Only claims this agent owns.")
@click.option("--limit", type=click.IntRange(1, settings.CLAIMS_LIST_MAX), default=settings.CLAIMS_LIMIT,
              show_default=True, help="At most this many claims.")
@click.option("--after", metavar="REF", help="Start after this claim (the last one a listing showed).")
@home_option
@json_option
@handles_errors
def claim_ls(as_id, channel, state, owner, limit, after, home, as_json):
    """List claims in your channels (every claim, for the operator without --as), oldest first.

    A listing stops at --limit claims; when more follow, it says how to list them (--after the last
    claim shown).
    """
    filters = (("--channel", channel), ("--state", state), ("--owner", owner))
    params = {option[2:]: value for option, value in filters if value}
    result = fetch(home, as_id, "claims.list", False, **params, limit=limit, after=after)
    if as_json:
        print_json(result)
    else:
        now = result["now"]
        rows = [[c["ref"], c["channel"], c["owner"], c["state"], _cadence_text(c["cadence_minutes"]),
                 ago(c["last_receipt_at"], now), str(c["version"]), one_line(c["title"], 60)] for c in result["claims"]]
        print_table(rows, ["CLAIM", "CHANNEL", "OWNER", "STATE", "CADENCE", "RECEIPT", "VERSION", "TITLE"])
    if result.get("more") and result["claims"]:
        again = [word for option, value in (*filters, ("--as", as_id)) if value for word in (option, value)]
        if limit != settings.CLAIMS_LIMIT:
            again += ["--limit", str(limit)]
        command = shlex.join(["agora", "claim", "ls", *again, "--after", result["claims"][-1]["ref"]])
        click.echo(f"more claims follow: {command}", err=True)


@claim.command("show")
@as_option(required=False)
@click.argument("ref")
@home_option
@json_option
@handles_errors
def claim_show(as_id, ref, home, as_json):
    """Show claim REF: its fields, version, reminder and newest receipts."""
    result = fetch(home, as_id, "claims.show", as_json, ref=ref)
    if result is None:
        return
    now = result["now"]
    click.echo(f"{result['ref']}  {one_line(result['title'], 100)}")
    for label, value in (
        ("channel", result["channel"]), ("owner", result["owner"]), ("state", result["state"]),
        ("version", result["version"]), ("cadence", _cadence_text(result["cadence_minutes"])),
        ("link", result["link"] or "-"), ("opened", ago(result["created_at"], now)),
        ("last receipt", ago(result["last_receipt_at"], now)),
        ("reminder", result["reminder"] or "-"),
    ):
        click.echo(f"  {label + ':':14}{value}")
    click.echo(f"receipts ({result['receipts']}):")
    for receipt in result["receipts_shown"]:
        click.echo(f"  {receipt['n']}. {ago(receipt['created_at'], now)}  {one_line(receipt['text'], 100)}")
