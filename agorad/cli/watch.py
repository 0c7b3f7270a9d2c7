"""`agora watch --notify-file F`: a remote seat's deliveries, written as notify lines on this host.

For tools that tail a file rather than hold a connection: the seat on another host gets the
same `<id>-inbox.log` lines (agora-files(5)) the hub writes on its own, from the remote port.
It resumes after the last id the file holds, so a restart neither skips nor repeats a line.
It never writes into a hub's own notify directory, where the hub's writer owns the files.
"""

from __future__ import annotations

import os
import select
import signal
import stat
import sys
from pathlib import Path

import click

from agorad.cli.common import as_option, fail, handles_errors, home_option
from agorad.surface.filenames import DB_NAME, LOCKFILE_NAME, PIDFILE_NAME, SOCKET_NAME, open_regular

HUB_MARKS = (DB_NAME, SOCKET_NAME, PIDFILE_NAME, LOCKFILE_NAME)  # a directory holding one is a hub's home


@click.command("watch")
@as_option()
@click.option("--notify-file", "notify_file", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Append the seat's deliveries to this file, one notify line each (agora-files(5)).")
@click.option("--url", metavar="URL", help="The hub's remote port, ws://HOST:PORT/ or wss://HOST:PORT/ "
              "(default: the home's hub.url, else $AGORA_URL).")
@home_option
@handles_errors
def watch(as_id, notify_file, url, home):
    """Write seat ID's deliveries from the hub's remote port to a notify file on this host, until stopped.

    The key comes from $AGORA_KEY or <home>/keys/ID.key on this host. Runs in
    the foreground; SIGTERM, SIGINT or SIGHUP ends it (exit 0).
    """
    from agorad.cli.common import hub_url, refuse_in_turn
    from agorad.surface import keys
    from agorad.surface.paths import Home

    refuse_in_turn(does="appends to any file --notify-file names")  # ~/.bashrc: a title's $(...) would run
    url = url or hub_url(Home.resolve(home))
    if not url:
        fail("agora watch speaks to the hub's remote port: give --url ws://HOST:PORT/ or set AGORA_URL")
    from agorad.surface.wsclient import check_url

    check_url(url)  # a malformed URL is an error now, not a reconnection loop
    path = notify_file.absolute()
    _refuse_hub_directory(path.parent)
    key = keys.read_key(Home.resolve(home), as_id)
    if key is None:
        where = Home.resolve(home)
        fail(keys.no_key(where, as_id, f"set AGORA_KEY or put the seat's key in {where.key_file(as_id)}"))
    try:  # as `mkdir -p`: a file named in a directory not made yet (~/inbox/ID-inbox.log) is the usual case
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"cannot make {path.parent}, the notify file's directory: {exc.strerror or exc}; choose a file "
             "where you can write")
    lock = _lock(path)
    try:
        _follow(url, as_id, key, path, Home.resolve(home).root_text)
    finally:
        os.close(lock)


def _refuse_no_regular_file(path: Path) -> None:
    """A FIFO, a socket or a symbolic link under the name is refused at the start (each append also refuses one
    put there later): the file is never written through a link (O_NOFOLLOW), so one would end the watch at
    its first delivery."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISLNK(mode):
        fail(f"{path} is a symbolic link, which agora watch never writes through; give the file it names, "
             f"{os.path.realpath(path)}, or another --notify-file")
    if not stat.S_ISREG(mode):
        fail(f"{path} is not a regular file; remove it, or choose another --notify-file")


def _refuse_hub_directory(directory: Path, notify_dir: str | None = None) -> None:
    """A hub's home, or the directory this hub writes its notify files to, is the hub's own."""
    if notify_dir is not None and os.path.realpath(directory) == os.path.realpath(notify_dir):
        fail(f"{directory} is the hub's own notify directory, where its writer owns the files; "
             "choose a file elsewhere")
    for name in HUB_MARKS:
        if (directory / name).exists():
            fail(f"{directory} is a hub's home ({name} is there), where the hub writes its own notify files; "
                 "choose a file elsewhere")


def _lock(path: Path) -> int:
    """One watcher per file: two would write every line twice."""
    import fcntl

    try:
        fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        fail(f"cannot open {path}.lock, the lock kept beside the notify file: {exc.strerror or exc}; choose a "
             "file where you can write")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        fail(f"another agora watch is writing {path} (it holds {path}.lock)")
    return fd


def _follow(url: str, agent: str, key: str, path: Path, home: str) -> None:
    from agora_listen.wsource import Fatal, WsSource
    from agora_listen.watchers import wake_pipe
    from agorad.surface.errors import AgoraError
    from agorad.surface.notifyfile import last_id_in

    _refuse_no_regular_file(path)
    source = WsSource(url, agent, key, last_id_in(path), home=home)  # home: its key file, read at each connect
    stop_fd, stop_write = wake_pipe()
    signal.set_wakeup_fd(stop_write)
    stopping = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, frame: stopping.append(signum))
    try:
        try:
            source.open()
            _refuse_hub_directory(path.parent, source.notify_dir)
        except Fatal as exc:
            fail(str(exc))
        except AgoraError as exc:
            click.echo(f"agora watch: {exc.message}; retrying", err=True)
        source.start()
        click.echo(f"agora watch: writing {agent}'s deliveries from {url} to {path}", err=True)
        poller = select.poll()
        poller.register(source.fd, select.POLLIN)
        poller.register(stop_fd, select.POLLIN)
        while not stopping:
            poller.poll()
            source.drain()
            try:
                lines = source.read_new()
            except Fatal as exc:
                fail(str(exc))
            if lines:
                _refuse_hub_directory(path.parent, source.notify_dir)  # said again at each connection's hello
                _append(path, lines)
    finally:
        source.close()
        os.close(stop_fd)
        os.close(stop_write)


def _append(path: Path, lines: list[dict]) -> None:
    """Whole lines in one write on O_APPEND, opened by name each time, so a file moved away by a
    log rotator is simply created again."""
    from agorad.surface.protocol import encode

    data = b"".join(encode(line) for line in lines)
    try:
        fd = open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)  # never a FIFO
    except OSError as exc:
        sys.stderr.write(f"agora watch: opening {path}: {exc.strerror or exc}\n")
        raise
    try:
        os.write(fd, data)
    except OSError as exc:
        sys.stderr.write(f"agora watch: writing {path}: {exc.strerror or exc}\n")
        raise
    finally:
        os.close(fd)
