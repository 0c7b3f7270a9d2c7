"""`agora status`: the hub and every seat."""

from __future__ import annotations

import click

from agorad.cli.agents import AGENT_HEADERS, agent_rows
from agorad.cli.common import (EXIT_UNAVAILABLE, ago, connect, fail, handles_errors, home_option,
                               hub_url, json_option, print_json, print_table, seat_hosts_hub)
from agorad.cli.shared import SharedOption
from agorad.surface.durations import format_span
from agorad.surface.errors import Unavailable
from agorad.surface.pages import every_agent
from agorad.surface.paths import Home, drive_file, listen_file
from pathlib import Path


@click.command("status")
# Not the seat record's (from_record=False): on the hub's host `agora status` is the operator, whatever
# workspace it runs in. `agora --as ID status` gives it as `agora status --as ID` does.
@click.option("--as", "as_id", metavar="ID", cls=SharedOption, from_record=False,
              help="On a seat's host whose home names a hub on another host (its hub.url): ask as this seat "
                   "(default: the one seat whose key the home keeps). Ignored on the hub's own host.")
@home_option
@json_option
@handles_errors
def status(as_id, home, as_json):
    """Show the hub (pid, home, uptime, database size, counts) and every seat.

    On a seat's host whose home names a hub on another host, the hub is asked over its remote port as one
    of the home's seats, and the LISTENER, DRIVER and HOOK columns are this host's.
    """
    where = Home.resolve(home)
    url, seat = seat_hosts_hub(where, as_id)
    elsewhere = hub_url(where) if url is None else None
    if elsewhere is not None and as_id:  # $AGORA_URL or the seat record, with the seat that asks given
        url, seat, elsewhere = elsewhere, as_id, None
    if elsewhere is not None:
        fail(f"`agora status` here is the local operator, who is only ever a same-user peer on the hub's own "
             f"socket; {elsewhere} (from $AGORA_URL or the seat record) does not make it a seat. Run it on "
             "the hub's host without AGORA_URL, or ask as a seat: `agora --url URL status --as ID` (or with a "
             "home whose hub.url names the hub: agora setup --url)")
    try:
        with connect(home, seat) as hub:
            info = hub.call("hub.status")
            info["agents"] = every_agent(hub, counts=True)["agents"]
    except Unavailable as exc:
        hung = bool(exc.data.get("unresponsive"))  # something holds the socket and does not answer
        if as_json:
            print_json({"running": False, "answering": False if hung else None, "home": str(where.root),
                        "error": exc.message})
        elif hung:
            click.echo(f"hub: not answering ({exc.message}): a process holds its socket but does not answer; "
                       "if it is a hung or stopped agorad, stop it with kill (`agora down` asks the hub first)",
                       err=True)
        else:
            click.echo(f"hub: not running ({exc.message})", err=True)
        raise SystemExit(EXIT_UNAVAILABLE)
    info["running"] = True
    # The seats' listeners, drivers and hooks keep their files in the home they run with: the hub's own,
    # or on a seat's host this home (the hub's, on the other host, is not here to read).
    root = where.root if url else Path(info["home"])
    if url:
        info.update(remote=url, asked_as=seat, local_home=str(where.root))
    for agent in info["agents"]:
        agent["listener"] = _seat_state(listen_file(root, agent["id"], "pid"), "armed")
        agent["driver"], agent["driver_facts"] = _driver(drive_file(root, agent["id"], "pid"))
        agent["hook"] = _hook(root, agent["id"])
    if as_json:
        print_json(info)
        return
    counts = info["counts"]
    click.echo(f"hub: running, pid {info['pid']}, version {info['hub_version']}, up {format_span(info['uptime'])}")
    if info["paused"]:
        _print_paused(info["paused"])
    click.echo(f"home: {info['home']}" + (f" (on the hub's host; this host's: {where.root})" if url else ""))
    if url:
        click.echo(f"remote: {url}, asked as {seat}; LISTENER, DRIVER and HOOK are this host's")
    elif info["remote"]:  # the hub's own port (`agora up --listen`; port 0 picked one only this names)
        click.echo(f"remote port: {info['remote']} (seats on other hosts: agora setup --url)")
    click.echo(f"database: {_bytes(info['db_bytes'])}; {counts['agents']} agents registered, "
               f"{counts['listed']} listed, {counts['kb']} KB entries")
    click.echo(f"messages: {counts['messages']} in {counts['channels']} channels, {counts['open_debts']} open debts; "
               f"notify files: {info['notify_dir'] or 'off'}")
    if info["agents"]:
        click.echo("")
        rows = [row + [_shown(a["listener"]), _driver_shown(a["driver"], a["driver_facts"]), _hook_shown(a["hook"]), str(a["unread"]),
                       str(a["owed"])]
                for row, a in zip(agent_rows(info["agents"], info["now"]), info["agents"])]
        print_table(rows, AGENT_HEADERS + ["LISTENER", "DRIVER", "HOOK", "UNREAD", "OWED"])


def _print_paused(paused: dict) -> None:
    """The pause at a glance: since when (the hub's clock), how long, why, the operator's seats."""
    import time

    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(paused["since"]))
    why = f": {paused['reason']}" if paused["reason"] else ""
    seats = f"; operator seats: {', '.join(paused['operator_seats'])}" if paused["operator_seats"] else ""
    click.echo(f"PAUSED since {since} ({format_span(paused['paused_for'])}){why}{seats}; `agora resume` to go on")


def _seat_state(pidfile: Path, live_word: str) -> str | None:
    """`live_word` for a live pidfile, "stale" for a dead or silent one, None for none."""
    from agorad.surface.pidfiles import LIVE, pidfile_state

    state = pidfile_state(pidfile)
    return None if state is None else (live_word if state == LIVE else "stale")


def _driver(pidfile: Path) -> tuple[str | None, dict | None]:
    """A live driver's state word and the facts its pidfile holds; "stale" for a dead one; None for none."""
    from agorad.surface.pidfiles import read_pidfile

    state = _seat_state(pidfile, "live")
    if state != "live":
        return state, None
    found = read_pidfile(pidfile)
    facts = found[1] if found else {}
    return facts.get("state", "running"), {"pid": found[0] if found else None, **facts}


def _driver_shown(state: str | None, facts: dict | None) -> str:
    """E.g. `armed 2/12`, `held 14:05 2/12` (a wait shows when it ends), `STALE`, `-`."""
    if not facts:
        return _shown(state)
    import time

    until = facts.get("until", "-")
    when = time.strftime(" %H:%M", time.localtime(float(until))) if until.replace(".", "", 1).isdigit() else ""
    return f"{state}{when} {facts.get('turns', '?')}/{facts.get('budget', '?')}"


def _hook(root: Path, agent: str) -> dict | None:
    """The stop hook's stamp: {"wired": ts|None, "fired": ts|None}, or None when there is none (not wired;
    a corrupt stamp counts as none, as it does for the hook, agora-files(5))."""
    from agorad.surface import hook_stamps

    stamp = hook_stamps.read(root, agent, "stop")
    if not stamp:
        return None
    return {"wired": stamp.get("wired"), "fired": stamp.get("fired")}


def _hook_shown(hook: dict | None) -> str:
    # Stamps hold wall-clock times (the hook writes time.time()), so "ago" is against this host's clock.
    if hook is None:
        return "-"
    return "NEVER FIRED" if hook["fired"] is None else ago(hook["fired"])


def _shown(state: str | None) -> str:
    return "-" if state is None else "STALE" if state == "stale" else state


def _bytes(size: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
