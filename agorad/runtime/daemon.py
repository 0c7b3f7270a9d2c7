"""The hub as a library function: `run(home, ...)` is what `agorad` does.

Start-up order: home 0700, the lock (one hub per home), stale socket and
pidfile recovery, the database and its migrations, the socket, the sweeper.
Shutdown removes the socket and pidfile only if this hub created them.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal
import socket
import stat
import sys

import apsw

from agorad import __version__
from agorad.domain import cadence
from agorad.domain import obligations
from agorad.domain import registry
from agorad.runtime import homelock, log_file, loop_errors, notify_lost
from agorad.runtime.checkpoint import Checkpointer
from agorad.runtime.clock import Clock
from agorad.runtime.hub import HubState, Settings
from agorad.runtime.log import log
from agorad.runtime.notify_dir import raise_descriptor_limit, shared_dir_problem
from agorad.runtime.renames import finish_cut_renames
from agorad.runtime.server import serve
from agorad.store import connect, write
from agorad.store import messages as messages_sql
from agorad.store.migrations import migrate
from agorad.surface.paths import Home, write_private
from agorad.surface.settings import DB_CACHE_MIB, LOG_KEEP_MIB

SOCKET_PATH_MAX = 107  # sun_path is 108 bytes on Linux, one for the NUL (unix(7))


class StartupError(Exception):
    """The hub cannot start; the message says why and what to do."""


def preflight(home: Home, settings: Settings) -> None:
    """The refusals made before anything is touched (StartupError): a --listen it would not bind, TLS files
    that do not load, a socket path too long to bind, and a home that holds the seats of a hub elsewhere.
    `agora up --detach` makes them before it forks (and before it makes the home)."""
    if check_listen(settings) is not None:
        tls_of(settings)  # files that do not load are refused here, before the home is made
    _check_socket_path(home)
    if settings.notify_dir:  # the home itself is made and tightened by Home.ensure
        problem = shared_dir_problem(Home.resolve(settings.notify_dir).root)
        if problem:
            raise StartupError(problem)
    if home.hub_url is not None:
        raise StartupError(f"the home {home.root} holds seats of the hub at {home.hub_url} (its "
                           f"{home.hub_url_file.name}, written by `agora setup --url`): every command there speaks "
                           "to that hub. Run this hub on a home of its own (--home DIR)")


def run(home: Home, settings: Settings | None = None) -> int:
    """Run the hub in the foreground until SIGTERM or SIGINT; return the exit status."""
    settings = settings or Settings()
    preflight(home, settings)
    home.ensure()
    lock_fd = _take_lock(home)
    try:
        if settings.log_file:  # only now: a hub refused for another's lock must not rotate that one's log
            log_file.keep_under(settings.log_file, LOG_KEEP_MIB << 20)
        _recover_socket(home)
        return asyncio.run(_serve(home, settings))
    finally:
        _remove_if_ours(home)
        os.close(lock_fd)


def _take_lock(home: Home) -> int:
    fd = homelock.take(home)
    if fd is None:
        pid = homelock.running_hub(home)
        raise StartupError(f"another hub is already running on {home.root} (pid {pid})" if pid else
                           homelock.held_elsewhere(home))
    return fd


_read_pid = homelock.holder


def _check_socket_path(home: Home) -> None:
    path = home.socket
    if len(os.fsencode(path)) > SOCKET_PATH_MAX:
        raise StartupError(
            f"the socket path {path} is {len(os.fsencode(path))} bytes, over the {SOCKET_PATH_MAX}-byte "
            "limit of Unix sockets; choose a shorter AGORA_HOME"
        )


def _recover_socket(home: Home) -> None:
    """Remove a dead hub's socket; refuse to touch anything that is not one or that answers."""
    path = home.socket  # (its length: preflight, which run() calls first)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise StartupError(f"{path} exists and is not a socket; move it away, agorad will not delete it")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except OSError as exc:
        if exc.errno not in (errno.ECONNREFUSED, errno.ENOENT):
            raise StartupError(f"probing the old socket {path}: {exc.strerror}") from None
        os.unlink(path)
        log("recovered", what="stale-socket", path=path)
        return
    finally:
        probe.close()
    raise StartupError(f"a hub without a lock answers on {path}; stop it before starting another")


async def _serve(home: Home, settings: Settings) -> int:
    clock = Clock(controllable=settings.test_clock)
    loop_errors.install(asyncio.get_running_loop())
    try:
        db = connect(home.db, settings.synchronous)
        db.execute("PRAGMA wal_autocheckpoint=0")  # the Checkpointer thread does it, off the request path
        # SQLite's 2 MiB default held too few pages: a post to 1,000 members read most of its delivery
        # pages back (bench/README.md "Fan-out"; measured before the delivery log of migration 0009).
        db.execute(f"PRAGMA cache_size=-{DB_CACHE_MIB * 1024}")
        applied = migrate(db)
    except (apsw.Error, RuntimeError) as exc:  # RuntimeError: a schema newer than this agorad
        raise StartupError(f"opening the database {home.db}: {exc}; move it away (or restore a backup) "
                           "and start again") from None
    checkpointer = Checkpointer(home.db)
    try:
        if applied:
            log("migrated", versions=",".join(map(str, applied)))
        raise_descriptor_limit()  # before the notifier sizes its open files by it
        hub = HubState(home, db, clock, settings, started_at=clock.now())
        for former, current, moved in finish_cut_renames(hub):
            log("rename-settled", agent=current, former=former, files=moved)
        for agent_id, installed in registry.settle_staged_keys(db, home):
            log("rekey-settled", agent=agent_id, outcome="installed" if installed else "dropped")
        hub.notifier.start(db)
        _watch_notify_names(hub)
        stop = asyncio.Event()
        _install_signals(stop, hub)
        remote = await _serve_remote(hub, settings)  # first: a port it cannot take leaves no socket behind
        server = await serve(hub, str(home.socket))
        stale = _read_pid(home)
        write_private(home.pidfile, f"{os.getpid()}\nversion={__version__}\nsocket={home.socket}\n")
        if stale and stale != os.getpid():
            log("recovered", what="stale-pidfile", pid=stale)
        log("ready", home=home.root, pid=os.getpid(), version=__version__)
        sweeper = asyncio.create_task(_sweep_forever(hub))
        checkpointer.start()
        await stop.wait()
        log("stopping", reason="signal")
        sweeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sweeper  # gone before the database closes
        server.close()
        await server.wait_closed()
        if remote is not None:
            from agorad.runtime.remote import close as close_remote

            await close_remote(remote)
        hub.liveness.close()  # late heartbeats take the transaction path, so none is answered unstored
        hub.batch.commit()  # answer what was handled before the signal
        with write(db):
            hub.liveness.flush(db)
            messages_sql.set_notified_upto(db, hub.notifier.written)
        return 0
    finally:
        if checkpointer.is_alive():
            checkpointer.stop()
        if "hub" in locals():
            _unwatch_notify_names(hub)
            hub.notifier.close()
        db.close()


def _watch_notify_names(hub: HubState) -> None:
    """Watch the notify directory for files deleted or moved away under the hub (notify_lost.py)."""
    hub.notify_names = notify_lost.watch(hub.notifier.directory)
    if hub.notify_names is not None:
        loop = asyncio.get_running_loop()
        loop.add_reader(hub.notify_names.fd, hub.notify_names_changed)
        # Made again by the writer: the watch moves on the loop's next turn, not inside the write.
        hub.notifier.on_directory_made = lambda: loop.call_soon_threadsafe(hub.watch_notify_dir_again)


def _unwatch_notify_names(hub: HubState) -> None:
    hub.notifier.on_directory_made = None
    if hub.notify_names is not None:
        asyncio.get_running_loop().remove_reader(hub.notify_names.fd)
        hub.notify_names.close()
        hub.notify_names = None


def check_listen(settings: Settings) -> tuple[str, int] | None:
    """The remote port's (host, port), or None; StartupError for a bind it refuses: a plain ws://
    port beyond loopback needs --insecure (anyone on the path reads the keys), and TLS needs both files."""
    if settings.listen is None:
        return None
    from agorad.runtime.remote import is_loopback, parse_listen

    try:
        host, port = parse_listen(settings.listen)
    except ValueError as exc:
        raise StartupError(f"--listen: {exc}") from None
    if (settings.tls_cert is None) != (settings.tls_key is None):
        raise StartupError("--tls-cert and --tls-key go together: give both for wss://, neither for ws://")
    if settings.tls_cert is None and not is_loopback(host) and not settings.insecure:
        raise StartupError(f"--listen {settings.listen} is beyond loopback without TLS: agent keys would cross the "
                           "network in clear. Give --tls-cert and --tls-key, or --insecure if the network is yours")
    return host, port


def tls_of(settings: Settings):
    """The remote port's TLS context (None: ws://); StartupError for a certificate or key that does not load."""
    if settings.tls_cert is None:
        return None
    from agorad.runtime import remote

    try:
        return remote.tls_context(settings.tls_cert, settings.tls_key)
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
        raise StartupError(f"loading --tls-cert {settings.tls_cert} and --tls-key {settings.tls_key}: {exc}") from None


async def _serve_remote(hub: HubState, settings: Settings):
    """The remote port (remote.py), when --listen asks for one; None otherwise."""
    where = check_listen(settings)
    if where is None:
        return None
    from agorad.runtime import remote

    host, port = where
    tls = tls_of(settings)
    try:
        server = await remote.serve(hub, host, port, tls, settings.listen_idle)
    except OSError as exc:
        raise StartupError(f"listening on {host}:{port}: {exc.strerror or exc}") from None
    scheme = "wss" if tls else "ws"
    bound = server.sockets[0].getsockname()[1] if server.sockets else port
    if tls is None and not remote.is_loopback(host):
        _warn_insecure(host, bound)
    hub.remote_url = f"{scheme}://{_url_host(host)}:{bound}/"
    log("listening", url=hub.remote_url)
    return server


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _warn_insecure(host: str, port: int) -> None:
    log("WARNING", what="insecure-listen", host=host, port=port)
    sys.stderr.write(
        "\n*** WARNING: the remote port ws://{0}:{1}/ is plain text beyond loopback (--insecure). ***\n"
        "*** Agent keys and every message cross the network unencrypted: anyone on the path can  ***\n"
        "*** read them and act as your seats. Use --tls-cert and --tls-key instead.               ***\n\n"
        .format(_url_host(host), port))
    sys.stderr.flush()


def _install_signals(stop: asyncio.Event, hub: HubState) -> None:
    # Signals only set flags or schedule work on the loop: nothing runs inside a signal handler.
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGHUP, lambda: log("sighup", action="nothing to reload"))
    loop.add_signal_handler(signal.SIGUSR2, hub.reopen_notify_files)  # logs `sigusr2` once it has reopened


async def _sweep_forever(hub: HubState) -> None:
    """A sweep every --sweep-interval; in between, each escalation and cadence reminder as it falls due."""
    loop = asyncio.get_running_loop()
    while True:
        swept = _guarded(hub.sweep, "sweep-failed")
        if swept and (swept["dormant"] or swept["expired"] or swept["escalated"] or swept["reminded"]):
            log("swept", dormant=swept["dormant"], expired=swept["expired"], escalated=swept["escalated"],
                reminded=swept["reminded"])
        deadline = loop.time() + hub.sweep_interval
        while swept is not None and await _escalation_due_before(hub, deadline):
            if _guarded(hub.escalate, "escalation-failed") is None:
                break  # failing: leave it to the next sweep rather than retry at once
        await asyncio.sleep(max(0.0, deadline - loop.time()))


def _guarded(step, failure: str):
    try:
        return step()
    except Exception as exc:  # a failed sweep must not stop the hub; the next one retries
        log(failure, error=type(exc).__name__, detail=str(exc)[:200])
        return None


async def _escalation_due_before(hub: HubState, deadline: float) -> bool:
    """Wait until the soonest escalation or cadence reminder after the last pass falls due (True),
    or the deadline passes (False). A committed ask, a pause or a resume (hub.debts_opened) makes
    the wait look again."""
    loop = asyncio.get_running_loop()
    while True:
        hub.debts_opened.clear()
        left = deadline - loop.time()
        try:  # a paused hub escalates and reminds nothing: only its resume (which sets debts_opened) makes it look again
            now = hub.clock.now()
            due_in = None if hub.pause else _soonest(obligations.escalation_due_in(hub.db, hub.escalated_upto, now),
                                                     cadence.reminder_due_in(hub.db, hub.reminded_upto, now))
        except apsw.Error as exc:  # cannot read the debts: the interval still holds
            log("sweep-schedule-failed", error=type(exc).__name__, detail=str(exc)[:200])
            due_in = None
        if due_in is not None and due_in < left:
            await asyncio.sleep(due_in)
            return True
        try:
            await asyncio.wait_for(hub.debts_opened.wait(), timeout=max(0.0, left))
        except TimeoutError:
            return False


def _soonest(*delays: float | None) -> float | None:
    known = [delay for delay in delays if delay is not None]
    return min(known) if known else None


def _remove_if_ours(home: Home) -> None:
    """Remove the pidfile and socket, but only while the pidfile still names this process."""
    if _read_pid(home) != os.getpid():
        return
    for path in (home.socket, home.pidfile):
        try:
            path.unlink()
        except FileNotFoundError:
            pass
    log("stopped", pid=os.getpid())
