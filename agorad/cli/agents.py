"""`agora agents`, `agora agent add|show|rename|rm`, `agora heartbeat`."""

from __future__ import annotations

import json

import click

from agorad.cli.common import (
    DURATION, ago, as_option, connect, handles_errors, home_option, json_option, print_json,
    print_table, report_redirect,
)
from agorad.surface.durations import format_duration
from agorad.surface import settings
from agorad.surface.vocab import DEFAULT_MODE, LIVENESS_MODES, REPORTED_STATUSES



def agent_rows(agents: list[dict], now: float) -> list[list[str]]:
    return [
        [a["id"], a["liveness_mode"] or "-", a["status"], a["task"] or "-", ago(a["last_seen"], now)]
        for a in agents
    ]


AGENT_HEADERS = ["ID", "MODE", "STATUS", "TASK", "LAST SEEN"]


@click.command("agents")
@home_option
@json_option
@click.option("--all", "include_expired", is_flag=True, help="Include ephemeral agents past their TTL.")
@handles_errors
def agents(home, as_json, include_expired):
    """List every agent: registry rows merged with KB profiles."""
    with connect(home) as hub:
        result = hub.call("agents.list", include_expired=include_expired)
    if as_json:
        print_json(result["agents"])
    elif result["agents"]:
        print_table(agent_rows(result["agents"], result["now"]), AGENT_HEADERS)
    else:
        click.echo("no agents yet; register one with `agora agent add ID`", err=True)


@click.group("agent")
def agent():
    """Register, inspect, rename and remove agents (local operator only)."""


@agent.command("add")
@click.argument("agent_id", metavar="ID")
@home_option
@json_option
@click.option("--mode", type=click.Choice(LIVENESS_MODES), default=DEFAULT_MODE, show_default=True,
              help="Liveness mode: ephemeral (listed until the TTL), async (dormant when silent), always-on.")
@click.option("--interval", type=DURATION, default=format_duration(settings.ASYNC_INTERVAL), show_default=True,
              help="Expected heartbeat interval; an async agent turns dormant after twice this.")
@click.option("--meta", metavar="JSON", default="{}", help="A JSON object of free-form facts about the agent.")
@handles_errors
def agent_add(agent_id, home, as_json, mode, interval, meta):
    """Register agent ID and print its key (shown only this once)."""
    try:
        meta_obj = json.loads(meta)
    except ValueError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="--meta") from None
    with connect(home) as hub:
        result = hub.call("agents.add", agent=agent_id, liveness_mode=mode, interval=interval, meta=meta_obj)
    if as_json:
        print_json(result)
        return
    added = result["agent"]
    cadence = f", dormant after {format_duration(2 * interval)} of silence" if mode == "async" else ""
    click.echo(f"registered {added['id']} ({added['liveness_mode']}{cadence})")
    click.echo(f"key: {result['key']}")
    click.echo(f"the key is saved in {result['key_file']} (0600) and is not shown again", err=True)


@agent.command("show")
@click.argument("agent_id", metavar="ID")
@home_option
@json_option
@handles_errors
def agent_show(agent_id, home, as_json):
    """Show one agent: mode, status, task, last seen, aliases, profile."""
    with connect(home) as hub:
        result = hub.call("agents.get", agent=agent_id)
    now = result["now"]
    report_redirect(result["redirected"])
    shown = result["agent"]
    if as_json:
        print_json(shown)
        return
    for label, value in (
        ("id", shown["id"]), ("mode", shown["liveness_mode"]), ("status", shown["status"]),
        ("task", shown["task"] or "-"), ("last seen", ago(shown["last_seen"], now)),
        ("interval", format_duration(shown["interval"])), ("expired", "yes" if shown["expired"] else "no"),
        ("aliases", ", ".join(f"{a['old_id']} ({a['reason']})" for a in shown["aliases"]) or "-"),
        ("meta", json.dumps(shown["meta"])), ("profile", shown["profile"] or "-"),
    ):
        click.echo(f"{label + ':':<11}{value}")


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


@agent.command("rm")
@click.argument("agent_id", metavar="ID")
@home_option
@json_option
@handles_errors
def agent_rm(agent_id, home, as_json):
    """Remove agent ID, its aliases, its KB profile and its key file."""
    with connect(home) as hub:
        result = hub.call("agents.remove", agent=agent_id)
    report_redirect(result["redirected"])
    if as_json:
        print_json(result)
    else:
        click.echo(f"removed {result['removed']}")


@click.command("heartbeat")
@as_option()
@home_option
@json_option
@click.option("--status", "status_word", type=click.Choice(REPORTED_STATUSES),
              help="What the agent is doing (default: unchanged; dormant comes back idle).")
@click.option("--task", help="What it is working on (implies --status working).")
@handles_errors
def heartbeat(as_id, home, as_json, status_word, task):
    """Tell the hub agent ID is alive, and what it is doing."""
    params = {k: v for k, v in (("status", status_word), ("task", task)) if v is not None}
    with connect(home, as_id) as hub:
        result = hub.call("agents.heartbeat", **params)
    if as_json:
        print_json(result)
    else:
        task_text = f" ({result['task']})" if result["task"] else ""
        click.echo(f"{result['agent']}: {result['status']}{task_text}")

