"""`agora up` / `agorad`: run the hub in the foreground."""

from __future__ import annotations

import click

from agorad.cli.common import DURATION, DURATION_OR_ZERO, fail, home_option, refuse_in_turn
from agorad.surface import settings
from agorad.surface.durations import format_duration
from agorad.surface.paths import Home
from agorad.surface.vocab import SYNCHRONOUS_LEVELS


@click.command("up", context_settings={"help_option_names": ["-h", "--help"]})
@home_option
@click.option("--sweep-interval", type=DURATION, default=format_duration(settings.SWEEP_INTERVAL), show_default=True,
              help="How often the sweeper writes dormant and expired transitions.")
@click.option("--ephemeral-ttl", type=DURATION, default=format_duration(settings.EPHEMERAL_TTL), show_default=True,
              help="How long an ephemeral agent stays listed without a heartbeat.")
@click.option("--synchronous", type=click.Choice(SYNCHRONOUS_LEVELS), default=settings.SYNCHRONOUS, show_default=True,
              help="SQLite durability: normal survives a hub crash; full also survives power loss, slower.")
@click.option("--notify-dir", metavar="DIR",
              help="Where the <id>-inbox.log notify files go (default: the home; '' turns them off).")
@click.option("--notify-rotate-mb", type=click.FloatRange(min=0), default=settings.NOTIFY_ROTATE_MB, show_default=True,
              help="Rotate a notify file to .1 above this size in MiB; 0 never rotates.")
@click.option("--max-body-kib", type=click.IntRange(1, settings.MAX_BODY_KIB_LIMIT), default=settings.MAX_BODY_KIB, show_default=True,
              help="The largest message body accepted, in KiB (at most 128, so any body fits a 1 MiB frame).")
@click.option("--escalate", "escalation", default=",".join(format_duration(s) for s in settings.ESCALATION), show_default=True,
              help="When an unanswered ask re-notifies its debtors: offsets from the ask ('' never).")
@click.option("--liveness-flush", type=DURATION_OR_ZERO, default=format_duration(settings.LIVENESS_FLUSH), show_default=True,
              help="How long a heartbeat that only restates its status may wait to be written "
                   "(a hub crash can lose that much of last_seen); 0 commits every heartbeat.")
@click.option("--listen", metavar="HOST:PORT",
              help="Also serve the JSON-RPC methods over WebSocket here, for seats on other hosts "
                   "(a bare PORT is loopback; port 0 picks a free one). Agents only: the operator stays local.")
@click.option("--tls-cert", type=click.Path(dir_okay=False), help="With --listen: serve wss:// with this certificate (PEM).")
@click.option("--tls-key", type=click.Path(dir_okay=False), help="With --listen: the certificate's private key (PEM).")
@click.option("--insecure", is_flag=True,
              help="With --listen beyond loopback: allow plain ws:// (keys cross the network in clear); warns loudly.")
@click.option("--listen-idle", type=DURATION, default=format_duration(settings.REMOTE_IDLE), show_default=True,
              help="With --listen: close a remote connection silent this long (a subscriber is kept alive by pings).")
@click.option("--detach", is_flag=True,
              help="Run in the background: return once the hub answers, its log appended to <home>/agorad.log.")
def up(home, sweep_interval, ephemeral_ttl, synchronous, notify_dir, notify_rotate_mb, max_body_kib, escalation,
       liveness_flush, listen, tls_cert, tls_key, insecure, listen_idle, detach):
    """Run the hub in the foreground on the home directory (--detach: in the background).

    Creates the home (0700), the database and the socket (0600). Stops
    cleanly on SIGTERM or SIGINT (or `agora down`); SIGUSR2 reopens the notify
    files. Logs one line per event on stderr.
    """
    from agorad.cli import up_run
    from agorad.runtime.daemon import StartupError, preflight, run

    refuse_in_turn()  # the operator of the hub it starts, whose files go where --home and --notify-dir say
    _check_remote_usage(listen, tls_cert, tls_key)
    try:
        settings = up_run.hub_settings(sweep_interval, ephemeral_ttl, synchronous, notify_dir, notify_rotate_mb,
                                       max_body_kib, escalation, liveness_flush, listen, tls_cert, tls_key,
                                       insecure, listen_idle)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--escalate") from None
    where = Home.resolve(home)
    if detach:
        from agorad.cli.detach import detach as in_background

        try:
            preflight(where, settings)  # refused before the home is touched, as in the foreground
        except StartupError as exc:
            fail(str(exc))
        settings.log_file = str(where.log)  # the hub keeps it under its limit (runtime/log_file.py)
        in_background(where, lambda: run(where, settings), StartupError)
        return
    up_run.serve(where, settings, click.get_current_context().find_root().info_name)


def _check_remote_usage(listen: str | None, tls_cert: str | None, tls_key: str | None) -> None:
    """What is wrong with the command line itself is a usage error (exit 2, agora-up(1)), as click's own are:
    a --listen that is no HOST:PORT, one TLS file without the other. A bind the hub refuses stays exit 1."""
    if (tls_cert is None) != (tls_key is None):
        raise click.UsageError("--tls-cert and --tls-key go together: give both for wss://, neither for ws://")
    if listen is not None:
        from agorad.runtime.remote import parse_listen  # (loads websockets, which --listen needs anyway)

        try:
            parse_listen(listen)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--listen") from None


def agorad_main():
    """The `agorad` console script of an install made before up_fast.main took its place."""
    from agorad.cli.up_fast import main

    main()
