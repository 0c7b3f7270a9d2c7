"""`agora down`: stop the hub of a home, as SIGTERM does (it answers what it handled first)."""

from __future__ import annotations

import click

from agorad.cli.common import DURATION, EXIT_UNAVAILABLE, fail, handles_errors, home_option, json_option, print_json
from agorad.surface.durations import format_duration
from agorad.surface.paths import Home

STOP_WAIT = 30.0  # seconds --timeout waits by default: a clean stop commits and stores its marks first


@click.command("down")
@click.option("--timeout", type=DURATION, default=format_duration(STOP_WAIT), show_default=True,
              help="How long to wait for the hub to exit; it is never killed.")
@home_option
@json_option
@handles_errors
def down(timeout, home, as_json):
    """Stop the hub on the home: SIGTERM to the process answering on its socket, then wait until it exits.

    The hub answers what it had handled, stores its marks and removes its socket, as on any SIGTERM.
    Exits 3 when no hub answers there. Local operator only.
    """
    import signal

    from agorad.surface.client import Client
    from agorad.surface.errors import Unavailable

    where = Home.resolve(home)
    try:
        with Client(where).connect() as hub:
            pid = _hub_pid(hub, hub.call("hub.status")["pid"], where)
    except Unavailable as exc:
        said = f"no hub is answering on {where.socket}: nothing to stop ({exc.message})"
        if as_json:
            print_json({"stopped": False, "running": False, "home": str(where.root), "error": said})
        else:
            click.echo(f"agora: {said}", err=True)
        raise SystemExit(EXIT_UNAVAILABLE)
    _signal(pid, signal.SIGTERM)
    if not _exited(pid, timeout):
        fail(f"the hub (pid {pid}) has not exited after {format_duration(timeout)}: it ends once it has answered "
             f"what it handled; see its log, or stop it with `kill -9 {pid}` (an acknowledged send survives that)")
    if as_json:
        print_json({"stopped": True, "pid": pid, "home": str(where.root)})
    else:
        click.echo(f"stopped the hub on {where.root} (pid {pid})")


def _hub_pid(hub, reported: int, where: Home) -> int:
    """The hub's pid as this host names it: the socket peer's (the kernel's word), else the pid the hub
    reports, when its pidfile agrees; a hub in another PID namespace (a container) gets no signal from here."""
    from agorad.surface.pidfiles import read_pidfile

    peer = hub.peer_pid()
    if peer is not None:
        return peer
    written = read_pidfile(where.pidfile)
    if written is None or written[0] != reported:
        fail(f"the hub on {where.root} reports pid {reported}, which its pidfile does not confirm; stop it where "
             "it runs (its supervisor, or SIGTERM to its process)")
    return reported


def _signal(pid: int, sig: int) -> None:
    import os

    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass  # it ended between the answer and the signal: nothing left to stop
    except PermissionError:
        fail(f"not allowed to signal the hub (pid {pid}): it runs as another user")


def _exited(pid: int, timeout: float) -> bool:
    """Whether the process is gone (or a zombie its parent has yet to reap) within `timeout` seconds."""
    import time

    from agorad.surface.pidfiles import process_alive

    deadline = time.monotonic() + timeout
    while process_alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True
