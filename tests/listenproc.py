"""Run real `agora listen` processes and read their sentinel lines with deadlines.

`WATCHER`, when set (by the `watcher` fixture in conftest.py), is passed as
`--watcher` to every listener started here, so one test runs under each; `SOURCE`
likewise runs the contract over the remote port (tests/test_listen_ws.py).
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time

from tests.hubproc import AGORA

WATCHER: str | None = None
SOURCE: list[str] = []  # e.g. ["--source", "ws", "--url", URL]: set by tests/test_listen_ws.py's hub fixture
_STARTED: list["Listener"] = []


def command(hub, *args: str, agora: list[str] | None = None) -> list[str]:
    """`agora listen` on the hub's home, with the chosen watcher; `agora` replaces the `agora` script."""
    watcher = ["--watcher", WATCHER] if WATCHER else []
    return [*(agora or [AGORA]), "listen", "--home", str(hub.home), *watcher, *SOURCE, *args]


class Listener:
    def __init__(self, hub, *args: str, env: dict | None = None, agora: list[str] | None = None):
        self.proc = subprocess.Popen(
            command(hub, *args, agora=agora), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**hub.env, **(env or {})},
        )
        self._buffer = b""
        self.lines: list[str] = []
        _STARTED.append(self)

    def next_line(self, timeout: float = 10.0) -> str:
        """The next stdout line; fails the test if none comes within `timeout`."""
        deadline = time.monotonic() + timeout
        selector = selectors.DefaultSelector()
        selector.register(self.proc.stdout, selectors.EVENT_READ)
        try:
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    raise AssertionError(f"no line from agora listen within {timeout}s; got {self.lines}; "
                                         f"stderr so far {self.stderr_so_far()!r}")
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk:
                    raise AssertionError(f"agora listen closed stdout; lines {self.lines}; stderr {self.stderr()}")
                self._buffer += chunk
        finally:
            selector.close()
        line, self._buffer = self._buffer.split(b"\n", 1)
        self.lines.append(line.decode())
        return self.lines[-1]

    def wait_for(self, prefix: str, timeout: float = 10.0) -> str:
        while True:
            line = self.next_line(timeout)
            if line.startswith(prefix):
                return line

    def finish(self, timeout: float = 15.0) -> tuple[int, list[str], str]:
        """Exit status, every stdout line, and stderr, once the process ends."""
        out, err = self.proc.communicate(timeout=timeout)
        self._buffer += out
        self.lines += [line.decode() for line in self._buffer.splitlines()]
        self._buffer = b""
        self._stderr = err.decode()
        return self.proc.returncode, self.lines, self._stderr

    def stderr(self) -> str:
        return getattr(self, "_stderr", "")

    def stderr_so_far(self) -> str:
        """What the listener has written to stderr until now, without waiting (for a failure's message)."""
        fd = self.proc.stderr.fileno()
        os.set_blocking(fd, False)
        try:
            return os.read(fd, 65536).decode(errors="replace")
        except BlockingIOError:
            return ""
        finally:
            os.set_blocking(fd, True)

    def stop(self, sig: int = signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.finish()


def started() -> int:
    """A mark for reap(): how many listeners were started so far."""
    return len(_STARTED)


def reap(since: int = 0) -> None:
    """Kill every listener started after the mark `since` that is still running.

    A test that fails before its stop() would otherwise leave a persistent
    listener running for good (it needs no hub), holding an inotify instance.
    """
    while len(_STARTED) > since:
        proc = _STARTED.pop().proc
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def listen_once(hub, *args: str, timeout: float = 15.0) -> tuple[int, list[str], str]:
    done = subprocess.run(command(hub, "--once", *args), capture_output=True, text=True, env=hub.env, timeout=timeout)
    return done.returncode, done.stdout.splitlines(), done.stderr


def fields(wake_line: str) -> dict:
    """`AGORA_WAKE a=1 b=2 backlog` -> {"a": "1", "b": "2", "backlog": True}."""
    out = {}
    for part in wake_line.split()[1:]:
        key, sep, value = part.partition("=")
        out[key] = value if sep else True
    return out
