"""One harness turn as a bounded, supervised process tree.

`run_turn` starts the harness in a session and process group of its own, reads its stdout as lines and
keeps the tail of its stderr (both bounded, on one thread, with a selector), and ends when the whole
tree has gone. Three things end it early, each ending every process of the tree (tree.py), so no
turn outlives its bounds:

- the wall-clock limit, or a byte on `stop_fd` (the driver's signal handler writes one): SIGTERM to
  the group and to each descendant found, `grace` seconds to go, then SIGKILL;
- the harness exiting while something it started lives on: `pipe_grace` seconds, then SIGKILL. A
  grandchild holding the stdout pipe once made a 3,600 s cap last 5,069 s; one that holds no pipe
  is a leftover (a server the model started) that would pile up over days of turns.

Nothing the harness does raises: a command that cannot start is a Finished with `spawn_error`.
"""

from __future__ import annotations

import os
import secrets
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from agora_drive.tree import TURN_TOKEN, Tree, prctl, reap_strays
from agorad.surface import settings
from agorad.surface.pidfiles import open_pidfd

LINE_LIMIT = 1 << 20  # a stdout line keeps its first MiB: a harness's event line is far shorter
READ_SIZE = 1 << 16
COLLECT_EVERY = 1.0  # list the leader's descendants this often (a few ms of /proc reading each time)
TICK = 0.1  # how often a change no fd reports is looked for (a leader without a pidfd, leftovers)
STOP_READ = 4096

# Secrets of the hub's own that a harness must not inherit (scrubbed_environment).
SECRET_WORDS = ("KEY", "TOKEN", "SECRET")


@dataclass
class Finished:
    """How one turn's process tree ended."""
    status: int | None  # exit status; None if it never started or was killed by a signal
    signal: int | None  # the signal that ended it, if any
    timed_out: bool  # the wall-clock limit ran out and the tree was killed
    stopped: bool  # the driver was asked to stop (see `stop_fd`) and the tree was ended
    spawn_error: str | None  # why it could not start (e.g. "No such file or directory: 'claude'")
    duration: float  # seconds from spawn to the end of the tree
    stderr_tail: str  # the last settings.DRIVE_STDERR_TAIL bytes of stderr, decoded with errors="replace"
    pid: int | None


def scrubbed_environment(env: Mapping[str, str]) -> dict:
    """`env` without the hub's secrets: AGORA_KEY and every AGORA_ variable naming a key, token or secret.

    The driver's environment is whoever started it: an operator's shell may hold AGORA_KEY for a seat
    of their own. A harness inheriting it would act as that seat (the MCP server and the CLI take
    AGORA_KEY before the seat's key file), and every tool the model runs would see it. The seat's own
    commands need none of it: `agora setup` writes them with --home and --as, and the key is read from
    <home>/keys/<id>.key. AGORA_HOME stays, so an `agora` command the model types reaches the same hub.
    Other programs' keys (the model provider's) stay: the harness needs them.
    """
    return {name: value for name, value in env.items() if not _hub_secret(name)}


def _hub_secret(name: str) -> bool:
    upper = name.upper()
    return upper.startswith("AGORA_") and any(word in upper for word in SECRET_WORDS)


def run_turn(argv: list[str], *, cwd, env: dict, limit: float, grace: float = settings.DRIVE_GRACE,
             pipe_grace: float = settings.DRIVE_PIPE_GRACE, on_line: Callable[[str], None] = lambda line: None,
             stop_fd: int | None = None, on_spawn: Callable[[int], None] = lambda pid: None,
             token: str | None = None) -> Finished:
    """Run `argv` in `cwd` with `env` (plus the turn's token, tree.py: `token`, else a new one) for at most
    `limit` seconds. The leader is killed if the driver dies (see `_dies_with_parent`).

    `on_line` gets each line of stdout as it comes; `on_spawn` the pid right after the spawn. Returns
    once the leader is reaped and its tree has gone. An exception from a callback ends the tree
    (SIGKILL) before it propagates.
    """
    started = time.monotonic()
    token = token or new_token()
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env={**env, TURN_TOKEN: token}, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                                close_fds=True, preexec_fn=_dies_with_parent())
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in an argument the user gave
        return Finished(status=None, signal=None, timed_out=False, stopped=False, spawn_error=_why(exc),
                        duration=time.monotonic() - started, stderr_tail="", pid=None)
    turn = _Turn(proc, Tree(proc.pid, token), grace, pipe_grace, on_line, stop_fd)
    failed = True
    try:
        on_spawn(proc.pid)
        turn.run(started + limit)
        failed = False
    finally:
        turn.close(failed)
    return turn.finished(time.monotonic() - started)


def new_token() -> str:
    return secrets.token_hex(16)


def _dies_with_parent() -> Callable[[], None] | None:
    """For the spawned leader: SIGKILL when the driver dies (prctl PR_SET_PDEATHSIG, Linux). A driver killed by
    SIGKILL or the OOM killer ended nothing, and its turn ran on past its limit (a review saw it at 33 s of
    20), beside the turn a restarted driver then started for the same wake. What the leader started is
    ended by the next driver (tree.end_marked). The function runs in the child between fork and exec, so it
    is a bound C call only; the driver's other threads (a watcher's) hold no lock it needs. None off Linux."""
    call = prctl()
    if call is None:
        return None
    parent = os.getpid()

    def set_death_signal() -> None:
        call(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the driver died before the call: nobody would send it
            os._exit(1)

    return set_death_signal


_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _why(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename!r}" if exc.filename else exc.strerror
    return str(exc)


class _Lines:
    """Stdout as lines for `on_line`: utf-8 (errors replaced), without the newline, each at most LINE_LIMIT."""

    def __init__(self, on_line: Callable[[str], None]):
        self.on_line = on_line
        self.line = bytearray()

    def feed(self, data: bytes) -> None:
        *whole, rest = data.split(b"\n")
        for piece in whole:
            self._keep(piece)
            self._emit()
        self._keep(rest)

    def flush(self) -> None:
        """At EOF: the last line, if it had no newline."""
        if self.line:
            self._emit()

    def _keep(self, piece: bytes) -> None:
        room = LINE_LIMIT - len(self.line)
        if room > 0:
            self.line += piece[:room]

    def _emit(self) -> None:
        text = self.line.decode("utf-8", errors="replace")
        self.line.clear()
        self.on_line(text)


class _Tail:
    """The last `size` bytes of a stream."""

    def __init__(self, size: int):
        self.size = size
        self.kept = bytearray()

    def feed(self, data: bytes) -> None:
        self.kept += data
        excess = len(self.kept) - self.size
        if excess > 0:
            del self.kept[:excess]

    def text(self) -> str:
        return self.kept.decode("utf-8", errors="replace")


class _Turn:
    """The running turn: its pipes, its tree, and the moments that end it."""

    def __init__(self, proc: subprocess.Popen, tree: Tree, grace: float, pipe_grace: float,
                 on_line: Callable[[str], None], stop_fd: int | None):
        self.proc, self.tree = proc, tree
        self.grace, self.pipe_grace = grace, pipe_grace
        self.lines = _Lines(on_line)
        self.stderr = _Tail(settings.DRIVE_STDERR_TAIL)
        self.selector = selectors.DefaultSelector()
        self.streams = {proc.stdout.fileno(): self.lines, proc.stderr.fileno(): self.stderr}
        for fd in self.streams:
            os.set_blocking(fd, False)
            self.selector.register(fd, selectors.EVENT_READ)
        self.stop_fd = stop_fd
        if stop_fd is not None:
            self.selector.register(stop_fd, selectors.EVENT_READ)
        self.exit_fd = open_pidfd(proc.pid)  # None: a TICK poll instead
        if self.exit_fd is not None:
            self.selector.register(self.exit_fd, selectors.EVENT_READ)
        self.exit_seen = False  # the pidfd said the leader exited
        self.leader_gone_at: float | None = None
        self.kill_at: float | None = None  # set once SIGTERM went out: SIGKILL follows at this moment
        self.timed_out = self.stopped = False

    def run(self, deadline: float) -> None:
        next_collect = 0.0
        while True:
            now = time.monotonic()
            if self.leader_gone_at is None:
                if self._leader_exited():
                    self.leader_gone_at = now
                    self.tree.sweep()  # what it left behind, now re-parented
                elif now >= next_collect:
                    self.tree.collect()
                    next_collect = now + COLLECT_EVERY
            if self.kill_at is None:
                self.timed_out = now >= deadline
                if self.timed_out or self.stopped:
                    self.tree.end(signal.SIGTERM)
                    self.kill_at = now + self.grace
            if self._over(now):
                return
            self._wait(self._timeout(now, deadline, next_collect))

    def _leader_exited(self) -> bool:
        return self.exit_seen if self.exit_fd is not None else self.tree.leader_exited()

    def _over(self, now: float) -> bool:
        """The tree has gone, or the time it had is up (and then it is killed)."""
        if self.kill_at is not None and now >= self.kill_at:
            self.tree.end(signal.SIGKILL)
            return True
        if self.leader_gone_at is None:
            return False
        if not self.streams and not self.tree.descendants_alive():
            return True
        if now >= self.leader_gone_at + self.pipe_grace:
            self.tree.end(signal.SIGKILL)
            return True
        return False

    def _timeout(self, now: float, deadline: float, next_collect: float) -> float:
        moments = [self.kill_at if self.kill_at is not None else deadline]
        if self.leader_gone_at is None:
            moments.append(next_collect)
            if self.exit_fd is None:
                moments.append(now + TICK)
        else:
            moments.append(self.leader_gone_at + self.pipe_grace)
            if not self.streams:  # leftovers holding no pipe: nothing to wait on but the clock
                moments.append(now + TICK)
        return max(0.0, min(moments) - now)

    def _wait(self, timeout: float) -> None:
        for key, _ in self.selector.select(timeout):
            if key.fd == self.exit_fd:
                self.exit_seen = True
                self.selector.unregister(key.fd)  # it stays readable from now on
            elif key.fd == self.stop_fd:
                self._take_stop()
            else:
                self._read(key.fd)

    def _take_stop(self) -> None:
        try:
            asked = os.read(self.stop_fd, STOP_READ)
        except BlockingIOError:
            return
        except OSError:
            asked = b""
        if asked:
            self.stopped = True
        else:  # the driver closed its end: nobody can ask any more
            self.selector.unregister(self.stop_fd)

    def _read(self, fd: int) -> None:
        try:
            data = os.read(fd, READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            self.streams[fd].feed(data)
        else:
            self._end_stream(fd)

    def _end_stream(self, fd: int) -> None:
        self.selector.unregister(fd)
        if self.streams.pop(fd) is self.lines:
            self.lines.flush()

    def close(self, failed: bool) -> None:
        """Stop reading (taking what the pipes already hold), and reap the leader."""
        if failed:
            self.tree.end(signal.SIGKILL)
        # Whatever is still in the turn's process group is its leftover, found by psutil or not (a child
        # spawned just before the leader exited): killed while the leader is an unreaped zombie, so the
        # group id cannot name anyone else yet.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for fd in list(self.streams):
            self._drain(fd)
        self.lines.flush()
        self.selector.close()
        if self.exit_fd is not None:
            os.close(self.exit_fd)
        self.proc.stdout.close()
        self.proc.stderr.close()
        try:
            self.proc.wait(timeout=self.grace)
        except subprocess.TimeoutExpired:  # a SIGKILLed leader stuck in the kernel: leave it, never hang
            pass
        reap_strays(self.proc.pid)

    def _drain(self, fd: int) -> None:
        """What a pipe holds now, without waiting; bounded, as a writer we could not kill may keep writing."""
        for _ in range(64):
            try:
                data = os.read(fd, READ_SIZE)
            except OSError:
                return
            if not data:
                return
            self.streams[fd].feed(data)

    def finished(self, duration: float) -> Finished:
        code = self.proc.returncode
        return Finished(status=code if code is not None and code >= 0 else None,
                        signal=-code if code is not None and code < 0 else None,
                        timed_out=self.timed_out, stopped=self.stopped, spawn_error=None,
                        duration=duration, stderr_tail=self.stderr.text(), pid=self.proc.pid)
