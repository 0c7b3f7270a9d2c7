"""`agora agents`, `agora agent add|show|set|rename|rm`, `agora heartbeat`."""

from __future__ import annotations

import json

import click

from agorad.cli.common import (
    DURATION, Duration, ago, as_option, connect, for_terminal, handles_errors, home_option, json_option,
    hub_url, print_json, print_table, report_redirect, seat_hosts_hub,
)
from agorad.cli.shared import SharedOption
from agorad.surface.paths import Home
from agorad.surface import settings
from agorad.surface.durations import format_duration
from agorad.surface.pages import every_agent
from agorad.surface.vocab import DEFAULT_MODE, LIVENESS_MODES, REPORTED_STATUSES
from agorad.surface.vocab import INTERVAL_UNSET



def agent_rows(agents: list[dict], now: float) -> list[list[str]]:
    return [
        [a["id"], a["liveness_mode"] or "-", a["status"], a["task"] or "-", ago(a["last_seen"], now)]
        for a in agents
    ]


AGENT_HEADERS = ["ID", "MODE", "STATUS", "TASK", "LAST SEEN"]


def _asking_as():
    """--as for a command that lists or shows: the operator on the hub's host, a seat on a seat's host (not the
    seat record's: on the hub's host such a command is the operator, whatever workspace it runs in)."""
    return click.option("--as", "as_id", metavar="ID", cls=SharedOption, from_record=False,
                        help="On a seat's host whose home names a hub on another host (its hub.url): ask as this "
                             "seat (default: the one seat whose key the home keeps). Ignored on the hub's own host.")


def _asking_seat(home: str | None, as_id: str | None) -> str | None:
    """The seat that asks, on a seat's host; None (the operator) on the hub's; as_id over $AGORA_URL (without
    it the operator, refused there in words)."""
    where = Home.resolve(home)
    url, seat = seat_hosts_hub(where, as_id)
    if url:
        return seat
    return as_id if hub_url(where) else None


@click.command("agents")
@_asking_as()
@home_option
@json_option
@click.option("--all", "include_expired", is_flag=True, help="Include ephemeral agents past their TTL.")
@handles_errors
def agents(as_id, home, as_json, include_expired):
    """List every agent: registry rows merged with KB profiles."""
    with connect(home, _asking_seat(home, as_id)) as hub:
        result = every_agent(hub, include_expired=include_expired)
    if as_json:
        print_json(result["agents"])
    elif result["agents"]:
        print_table(agent_rows(result["agents"], result["now"]), AGENT_HEADERS)
    else:
        click.echo("no agents yet; register one with `agora agent add ID`", err=True)


@click.group("agent")
def agent():
    """Register, inspect, change, rename and remove agents (the local operator; `show` also from a seat's host)."""


@agent.command("add")
@click.argument("agent_id", metavar="ID")
@home_option
@json_option
@click.option("--mode", type=click.Choice(LIVENESS_MODES), default=DEFAULT_MODE, show_default=True,
              help="Liveness mode: ephemeral (listed until the TTL), async (dormant when silent), always-on.")
@click.option("--interval", type=DURATION,
              help="Expected heartbeat interval; an async agent turns dormant after twice this. "
                   f"Default: what the agent declares, else {format_duration(settings.AGENT_INTERVAL)}.")
@click.option("--meta", metavar="JSON", default="{}", help="A JSON object of free-form facts about the agent.")
@handles_errors
def agent_add(agent_id, home, as_json, mode, interval, meta):
    """Register agent ID and print its key (shown only this once)."""
    try:
        meta_obj = json.loads(meta)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested past the parser's depth
        raise click.BadParameter(f"not JSON: {exc}", param_hint="--meta") from None
    chosen = {} if interval is None else {"interval": interval}
    with connect(home) as hub:
        result = hub.call("agents.add", agent=agent_id, liveness_mode=mode, meta=meta_obj, **chosen)
    if as_json:
        print_json(result)
        return
    added = result["agent"]
    cadence = f", dormant after {format_duration(2 * added['interval'])} of silence" if mode == "async" else ""
    click.echo(f"registered {added['id']} ({added['liveness_mode']}{cadence})")
    _print_key(result)


def _print_key(result: dict, after: str = "") -> None:
    """A new key, the one time it is shown (stdout), and where it is kept (stderr)."""
    click.echo(f"key: {result['key']}")
    click.echo(f"the key is saved in {result['key_file']} (0600) and is not shown again{after}", err=True)


@agent.command("show")
@click.argument("agent_id", metavar="ID")
@_asking_as()
@home_option
@json_option
@handles_errors
def agent_show(agent_id, as_id, home, as_json):
    """Show one agent: mode, status, task, last seen, interval, aliases, profile."""
    with connect(home, _asking_seat(home, as_id)) as hub:
        result = hub.call("agents.get", agent=agent_id)
    report_redirect(result["redirected"])
    if as_json:
        print_json(result["agent"])
    else:
        print_agent(result["agent"], result["now"])


def print_agent(shown: dict, now: float) -> None:
    for label, value in (
        ("id", shown["id"]), ("mode", shown["liveness_mode"] or "-"), ("status", shown["status"]),
        ("task", shown["task"] or "-"), ("last seen", ago(shown["last_seen"], now)),
        ("interval", interval_text(shown)), ("expired", "yes" if shown["expired"] else "no"),
        ("aliases", ", ".join(f"{a['old_id']} ({a['reason']})" for a in shown["aliases"]) or "-"),
        ("meta", json.dumps(shown["meta"])), ("profile", for_terminal(shown["profile"] or "-")),
    ):
        click.echo(f"{label + ':':<11}{value}")


def interval_text(shown: dict) -> str:
    """`10m (operator)`, and what the agent declared when the operator's setting overrides it; for an agent
    known from its profile alone, that it is not registered."""
    if not shown.get("registered", True):
        return "- (not registered: known from its profile alone; `agora agent add` registers it)"
    text = f"{format_duration(shown['interval'])} ({shown['interval_source']}"
    declared = shown.get("declared_interval")
    if declared is not None and declared != shown["interval"]:
        text += f"; the agent declared {format_duration(declared)}"
    return text + ")"


class IntervalSetting(Duration):
    """A duration, or `unset` to drop the operator's setting."""

    name = f"duration|{INTERVAL_UNSET}"

    def convert(self, value, param, ctx):
        return INTERVAL_UNSET if value == INTERVAL_UNSET else super().convert(value, param, ctx)


def meta_patch(pairs: tuple[str, ...]) -> dict | None:
    """`K=V` pairs as agents.update's meta: `K=` removes K (null on the wire)."""
    if not pairs:
        return None
    patch = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key:
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE (KEY= removes KEY)", param_hint="--meta")
        patch[key] = value or None
    return patch


@agent.command("set")
@click.argument("agent_id", metavar="ID")
@home_option
@json_option
@click.option("--mode", type=click.Choice(LIVENESS_MODES), help="New liveness mode (nothing else is reset).")
@click.option("--interval", type=IntervalSetting(), metavar=f"DURATION|{INTERVAL_UNSET}",
              help=f"Expected heartbeat interval, overriding what the agent declares; "
                   f"{INTERVAL_UNSET!r} lets the agent's declaration (else {format_duration(settings.AGENT_INTERVAL)}) apply again.")
@click.option("--meta", "meta_pairs", metavar="KEY=VALUE", multiple=True,
              help="Set one meta key (repeatable); KEY= removes it. Other keys are kept.")
@handles_errors
def agent_set(agent_id, home, as_json, mode, interval, meta_pairs):
    """Change agent ID's mode, interval or meta; its key, status and history stay."""
    changes = {k: v for k, v in (("liveness_mode", mode), ("interval", interval),
                                 ("meta", meta_patch(meta_pairs))) if v is not None}
    if not changes:
        raise click.UsageError("nothing to change: give --mode, --interval or --meta")
    with connect(home) as hub:
        result = hub.call("agents.update", agent=agent_id, **changes)
    report_redirect(result["redirected"])
    if as_json:
        print_json(result["agent"])
    else:
        print_agent(result["agent"], result["now"])


@agent.command("rename")
@click.argument("old")
@click.argument("new")
@click.option("--reason", required=True, help="Why; every call naming OLD is told this.")
@home_option
@json_option
@handles_errors
def agent_rename(old, new, reason, home, as_json):
    """Rename agent OLD to NEW; OLD stays as an alias that redirects."""
    with connect(home) as hub:
        result = hub.call("agents.rename", old=old, new=new, reason=reason)["renamed"]
    if as_json:
        print_json(result)
    else:
        click.echo(f"renamed {result['from']} -> {result['to']} ({result['reason']})")


@agent.command("rekey")
@click.argument("agent_id", metavar="ID")
@home_option
@json_option
@handles_errors
def agent_rekey(agent_id, home, as_json):
    """Give agent ID a new key and print it (shown only this once): the old key stops working at once,
    and connections acting as ID hang up. The agent keeps everything else."""
    with connect(home) as hub:
        result = hub.call("agents.rekey", agent=agent_id)
    report_redirect(result["redirected"])
    if as_json:
        print_json(result)
        return
    click.echo(f"new key for {result['agent']}")
    _print_key(result, "; the old key no longer works, and connections acting as the agent were closed (a seat "
                       f"on another host needs the new key: `agora setup {result['agent']} --url URL --key-stdin` "
                       "there, URL its hub.url)")


@agent.command("rm")
@click.argument("agent_id", metavar="ID")
@home_option
@json_option
@handles_errors
def agent_rm(agent_id, home, as_json):
    """Remove agent ID, its aliases, its KB profile and its key file; release the replies owed to it."""
    with connect(home) as hub:
        result = hub.call("agents.remove", agent=agent_id)
    report_redirect(result["redirected"])
    if as_json:
        print_json(result)
    else:
        released = result.get("released", 0)  # a hub before it did not say
        click.echo(f"removed {result['removed']}" + (f"; released {released} repl{'y' if released == 1 else 'ies'} "
                                                   "owed to it" if released else ""))


@click.command("heartbeat")
@as_option()
@home_option
@json_option
@click.option("--status", "status_word", type=click.Choice(REPORTED_STATUSES),
              help="What the agent is doing (default: unchanged; dormant comes back idle).")
@click.option("--task", help="What it is working on (implies --status working), or with --status error what went wrong.")
@click.option("--interval", type=DURATION,
              help="Declare how often the agent heartbeats (async: dormant after twice this silent). "
                   "An interval the operator set wins.")
@handles_errors
def heartbeat(as_id, home, as_json, status_word, task, interval):
    """Tell the hub agent ID is alive, and what it is doing."""
    params = {k: v for k, v in (("status", status_word), ("task", task), ("interval", interval)) if v is not None}
    with connect(home, as_id) as hub:
        result = hub.call("agents.heartbeat", **params)
    if as_json:
        print_json(result)
        return
    task_text = f" ({result['task']})" if result["task"] else ""
    click.echo(f"{result['agent']}: {result['status']}{task_text}")
    if interval is not None and result["interval"] != interval:
        click.echo(f"the operator's interval {format_duration(result['interval'])} applies; "
                   f"{format_duration(interval)} is kept as the agent's declaration", err=True)

