"""`agora up --detach`: the hub in the background, returned from once it answers.

The hub is this process, forked once the options are parsed and the refusals that need nothing
touched are made (nothing to parse again, the same code). The child starts a session of its own, so
no terminal's hangup reaches it; it works from `/`, so it pins no directory; it reads /dev/null,
appends its log to `<home>/agorad.log` (0600; the hub rotates it, runtime/log_file.py) and keeps no
other descriptor of its caller's (a pipe held open would keep the caller's reader waiting), then runs
the hub. The parent waits until
the hub answers `hub.status` with the child's pid and prints what the hub logged while starting (a
`--insecure` warning among it); or, when the child exits first, why it did not start: a refusal
comes back through a pipe, anything else is in the log. Either way the parent never kills the child.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time
from collections.abc import Callable

import click

from agorad.cli.common import fail
from agorad.runtime import log_file
from agorad.surface.paths import Home

READY_WAIT = 30.0  # seconds for the hub to answer: a home of 10,000 seats starts in about half a second
_POLL = 0.02
_REFUSAL_FD = 3  # the child's end of the refusal pipe, below every descriptor it closes


def detach(home: Home, run_hub: Callable[[], int], startup_error: type[Exception]) -> None:
    """Run `run_hub()` in a detached child; return once it answers, or fail (exit 1) saying why not."""
    _standard_streams_open()
    log_path = home.log
    try:
        home.ensure()
        log_fd = log_file.open_append(log_path)
    except OSError as exc:
        fail(f"cannot start the hub: {exc}")
    opened = os.fstat(log_fd)
    started_at = (opened.st_dev, opened.st_ino, opened.st_size)
    refusal_read, refusal_write = os.pipe()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # an inherited SIG_IGN would reap the child before waitpid
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
    pid = os.fork()
    if pid == 0:
        os.close(refusal_read)
        _run_child(log_fd, refusal_write, run_hub, startup_error)
    os.close(log_fd)
    os.close(refusal_write)
    try:
        _await_hub(home, pid, refusal_read, log_path, started_at)
    finally:
        os.close(refusal_read)


def _standard_streams_open() -> None:
    """Put /dev/null on a closed descriptor 0, 1 or 2: a file opened next would take its number, and the
    child's dup2 onto 0-2 would then close it (the log, opened as 0, overwritten with /dev/null)."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            os.open(os.devnull, os.O_RDWR)  # the lowest free descriptor: this one


def _run_child(log_fd: int, refusal_write: int, run_hub: Callable[[], int], startup_error: type[Exception]):
    """The hub's side of the fork: never returns into the command (os._exit), whatever happens."""
    status = 1
    try:
        os.setsid()
        os.chdir("/")
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.dup2(refusal_write, _REFUSAL_FD, inheritable=False)
        os.closerange(_REFUSAL_FD + 1, _max_fd())
        status = run_hub()
    except startup_error as exc:
        _tell(str(exc))
    except OSError as exc:
        _tell(f"cannot start the hub: {exc}")
    except BaseException as exc:  # anything else: its traceback in the log, as a foreground hub would show it
        import traceback

        traceback.print_exc()
        _tell(f"the hub failed: {type(exc).__name__}: {exc}")
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (AttributeError, OSError, ValueError):
                pass
        os._exit(status)


def _max_fd() -> int:
    try:
        return os.sysconf("SC_OPEN_MAX")
    except (OSError, ValueError):
        return 65_536


def _tell(message: str) -> None:
    """The reason the hub did not start: to the waiting parent, and in the log's own form."""
    from agorad.runtime.log import log

    try:
        os.write(_REFUSAL_FD, message.encode("utf-8", "replace")[:4096])
    except OSError:
        pass  # the parent is gone: the log says it all the same
    log("not-started", reason=message)


def _await_hub(home: Home, pid: int, refusal_read: int, log_path, started_at: tuple[int, int, int]) -> None:
    deadline = time.monotonic() + READY_WAIT
    while True:
        exited, status = os.waitpid(pid, os.WNOHANG)
        if exited:
            said = _drain(refusal_read)
            code = os.waitstatus_to_exitcode(status)
            fail(said or f"the hub exited with status {code} while starting; see {log_path}")
        if _answers(home, pid):
            _echo_log(log_path, started_at)
            stop = "agora down" if home == Home.resolve() else f"agora down --home {home.root_text}"
            click.echo(f"the hub runs on {home.root} (pid {pid}); its log: {log_path}; stop it with `{stop}`")
            return
        if time.monotonic() >= deadline:
            fail(f"the hub (pid {pid}) has not answered within {READY_WAIT:g} s; it may still be starting: see "
                 f"{log_path}, and `agora status`")
        select.select([refusal_read], [], [], _POLL)  # a refusal wakes this at once


def _answers(home: Home, pid: int) -> bool:
    """Whether the hub answering on the home's socket is the child (not another hub that got there first)."""
    from agorad.surface.client import Client
    from agorad.surface.errors import AgoraError

    try:
        with Client(home, timeout=2) as client:
            return client.call("hub.status")["pid"] == pid
    except (AgoraError, OSError):
        return False


def _drain(fd: int) -> str:
    chunks = []
    while select.select([fd], [], [], 0)[0]:
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace").strip()


def _echo_log(log_path, started_at: tuple[int, int, int]) -> None:
    """The log lines the hub wrote while starting, on stderr: a warning must reach whoever started it. A log
    found past its limit was set aside as `.1` as the hub started (log_file.keep_under): its lines are then
    in a new file, from the start."""
    device, inode, start = started_at
    try:
        with open(log_path, "rb") as log:
            found = os.fstat(log.fileno())
            log.seek(start if (found.st_dev, found.st_ino) == (device, inode) else 0)
            text = log.read(64 << 10).decode("utf-8", "replace")
    except OSError:
        return
    if text:
        click.echo(text.rstrip("\n"), err=True)
