"""`agora down`: stop the hub of a home, as SIGTERM does (it answers what it handled first).

Which process gets the signal matters more than anything else here. It is the one at the other
end of the home's socket, as the kernel names it (SO_PEERCRED), held by a pidfd opened while the
connection stands and the hub answers on it, so a pid reused later cannot be signalled. Where the
platform has neither, the pid the hub reports, when its pidfile agrees. A hub the kernel cannot
name (another PID namespace), a socket that answers for another home, or a URL in effect: refused.
"""

from __future__ import annotations

import os
import socket

import click

from agorad.cli.common import (DURATION, EXIT_ERROR, EXIT_UNAVAILABLE, handles_errors, home_option, hub_url,
                               json_option, print_json, refuse_in_turn)
from agorad.surface.durations import format_duration
from agorad.surface.paths import Home
from agorad.surface.pidfiles import open_pidfd

STOP_WAIT = 30.0  # seconds --timeout waits by default: a clean stop commits and stores its marks first


class Refused(Exception):
    """Nothing was signalled; the message says why, and `status` is the exit status."""

    def __init__(self, message: str, status: int = EXIT_ERROR):
        super().__init__(message)
        self.status = status


@click.command("down")
@click.option("--timeout", type=DURATION, default=format_duration(STOP_WAIT), show_default=True,
              help="How long to wait for the hub to answer and then to exit; it is never killed.")
@home_option
@json_option
@handles_errors
def down(timeout, home, as_json):
    """Stop the hub on the home: SIGTERM to the process answering on its socket, then wait until it exits.

    The hub answers what it had handled, stores its marks and removes its socket, as on any SIGTERM.
    Exits 3 when no hub answers there. Local operator only.
    """
    refuse_in_turn()
    where = Home.resolve(home)
    try:
        pid, stop, wait = _hub(where, timeout)
        stop()
        if not wait(timeout):
            raise Refused(f"the hub (pid {pid}) has not exited after {format_duration(timeout)}: it ends once it "
                          f"has answered what it handled; see its log, or `kill -9 {pid}` (an acknowledged send "
                          "survives that)")
    except Refused as refused:
        if as_json:
            gone = {"running": False} if refused.status == EXIT_UNAVAILABLE else {}
            print_json({"stopped": False, "home": str(where.root), "error": str(refused), **gone})
        click.echo(f"agora: {refused}", err=True)
        raise SystemExit(refused.status)
    if as_json:
        print_json({"stopped": True, "pid": pid, "home": str(where.root)})
    else:
        click.echo(f"stopped the hub on {where.root} (pid {pid})")


def _hub(where: Home, timeout: float):
    """(pid, stop(), wait(seconds) -> exited) for the hub answering on the home's socket; Refused otherwise."""
    from agorad.surface.client import Client
    from agorad.surface.errors import Unavailable

    url = hub_url(where)
    if url is not None:
        raise Refused(f"{url} names a hub on another host; `agora down` stops only a hub on this host's socket "
                      "(run it there)")
    path = str(where.socket)
    if os.path.islink(path):
        raise Refused(f"{path} is a symbolic link; stop the hub at the home it points into")
    if not _answering(path):
        raise Refused(f"no hub is answering on {path}: nothing to stop", EXIT_UNAVAILABLE)
    client = Client(where, timeout=min(timeout, STOP_WAIT))
    try:
        client.connect()
        peer = client.peer_pid()
        if peer == 0:
            raise Refused(f"the hub on {where.root} runs where this host cannot name its process (another PID "
                          "namespace, such as a container); stop it where it runs")
        handle = open_pidfd(peer) if peer else None  # while the connection stands: it names the hub
        try:
            pid = _confirmed(client, peer, where)
        except BaseException:
            if handle is not None:
                os.close(handle)
            raise
    except Unavailable as exc:
        raise Refused(exc.message) from None
    finally:
        client.close()
    if handle is not None:
        return pid, lambda: _pidfd_signal(handle, pid), lambda seconds: _pidfd_exited(handle, seconds)
    return pid, lambda: _signal(pid), lambda seconds: _exited(pid, seconds)


def _confirmed(client, peer: int | None, where: Home) -> int:
    """The hub's pid, once it has answered hub.status on this connection for this home: the socket's peer
    (alive while it answers, so a pidfd opened before names it), else the pid it reports, checked."""
    from agorad.surface.errors import Unavailable

    path = str(where.socket)
    try:
        status = client.call("hub.status")
    except Unavailable as exc:
        raise Refused(f"a process is listening on {path}{f' (pid {peer})' if peer else ''} but did not answer "
                      f"hub.status: {exc.message}; if it is a hung agorad, stop it with kill") from None
    if os.path.realpath(status["home"]) != os.path.realpath(where.root):
        raise Refused(f"the hub answering on {path} is the hub of {status['home']}; stop that one "
                      f"(`agora down --home {status['home']}`)")
    return peer if peer else _reported(status["pid"], where)


def _answering(path: str) -> bool:
    """Whether anything accepts a connection at `path` (a socket left by a killed hub refuses)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
        return True
    except (FileNotFoundError, ConnectionRefusedError):
        return False
    except OSError as exc:  # permission, and the like: something is there, and this user cannot reach it
        raise Refused(f"connecting to {path}: {exc.strerror or exc}") from None
    finally:
        probe.close()


def _reported(pid: int, where: Home) -> int:
    """The pid the hub reports, where the kernel names no socket peer: only when its pidfile agrees."""
    from agorad.surface.pidfiles import read_pidfile

    written = read_pidfile(where.pidfile)
    if written is None or written[0] != pid:
        raise Refused(f"the hub on {where.root} reports pid {pid}, which its pidfile does not confirm; stop it "
                      "where it runs (its supervisor, or SIGTERM to its process)")
    return pid


def _pidfd_signal(handle: int, pid: int) -> None:
    import signal

    try:
        signal.pidfd_send_signal(handle, signal.SIGTERM)
    except ProcessLookupError:
        pass  # it ended between the answer and the signal: nothing left to stop
    except PermissionError:
        raise Refused(f"not allowed to signal the hub (pid {pid})") from None


def _pidfd_exited(handle: int, seconds: float) -> bool:
    import select

    try:
        poller = select.poll()
        poller.register(handle, select.POLLIN)  # readable once the process has exited
        return bool(poller.poll(seconds * 1000))
    finally:
        os.close(handle)


def _signal(pid: int) -> None:
    import signal

    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    except PermissionError:
        raise Refused(f"not allowed to signal the hub (pid {pid}): it runs as another user") from None


def _exited(pid: int, seconds: float) -> bool:
    """Whether the process is gone (or a zombie its parent has yet to reap) within `seconds`."""
    import time

    from agorad.surface.pidfiles import process_alive

    deadline = time.monotonic() + seconds
    while process_alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True
