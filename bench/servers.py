"""Start, probe and stop the two servers under test: the hub (`agorad`) and the bare echo server."""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ECHO_SCRIPT = Path(__file__).with_name("echo.py")
BARE_SCRIPT = Path(__file__).with_name("bare.py")
HELLO_FRAME = b'{"jsonrpc":"2.0","id":1,"method":"hub.hello"}\n'
PROBE_SLEEP = 0.001  # between connection attempts while a server starts


class BenchError(Exception):
    """The benchmark cannot go on; the message says why."""


def script_path(name: str) -> Path:
    """The project's console script `name` (agorad, agora) beside the interpreter running the bench."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        raise BenchError(f"no {name} script at {path}; run the bench with the project's venv (make bench)")
    return path


class Server:
    """One server process on a Unix socket; a context manager that always stops it."""

    name = "server"

    def __init__(self, socket_path: Path, log_path: Path):
        self.socket_path = socket_path
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None

    def command(self) -> list[str]:
        raise NotImplementedError

    def spawn(self) -> None:
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                self.command(), stdin=subprocess.DEVNULL, stdout=log, stderr=log, close_fds=True,
            )

    def wait_ready(self, timeout: float = 15.0, probe: bytes | None = None) -> None:
        """Return once the socket answers (`probe`, if given, gets a reply line); raise if it never does."""
        deadline = time.monotonic() + timeout
        path = str(self.socket_path)
        while True:
            if self.proc.poll() is not None:
                raise BenchError(f"{self.name} exited with status {self.proc.returncode} while starting:\n{self.log_tail()}")
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                sock.connect(path)
                if probe is None:
                    return
                sock.sendall(probe)
                reply = _read_line(sock)
                message = json.loads(reply)
                if "result" not in message:
                    raise BenchError(f"{self.name} answered the probe with {reply[:200]!r}")
                return
            except OSError as exc:
                if exc.errno not in (errno.ENOENT, errno.ECONNREFUSED):
                    raise BenchError(f"probing {path}: {exc}") from None
            finally:
                sock.close()
            if time.monotonic() > deadline:
                raise BenchError(f"{self.name} did not answer on {path} within {timeout:.0f} s:\n{self.log_tail()}")
            time.sleep(PROBE_SLEEP)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:]) or "(empty log)"

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class Hub(Server):
    """`agorad --home HOME`; HOME is created by the hub itself (0700)."""

    name = "agorad"

    def __init__(self, home: Path, log_path: Path, *options: str):
        super().__init__(home / "agorad.sock", log_path)
        self.home = home
        self.options = options  # extra `agorad` options

    def command(self) -> list[str]:
        return [str(script_path("agorad")), "--home", str(self.home), *self.options]

    def start(self) -> "Hub":
        self.spawn()
        self.wait_ready(probe=HELLO_FRAME)
        return self

    def register(self, count: int, prefix: str = "bench", mode: str = "async") -> list[tuple[str, str]]:
        """Add `count` seats (`mode`) as the operator; return their (id, key) pairs."""
        return self.add_agents([f"{prefix}-{i}" for i in range(count)], mode)

    def add_agents(self, agents: list[str], mode: str = "async") -> list[tuple[str, str]]:
        """Add the named seats as the operator; return their (id, key) pairs."""
        from agorad.surface.client import Client

        seats = []
        with Client(self.home, timeout=10) as operator:
            for agent in agents:
                params = {"interval": 1800} if mode == "async" else {}
                reply = operator.call("agents.add", agent=agent, liveness_mode=mode, **params)
                seats.append((agent, reply["key"]))
        return seats


class Echo(Server):
    """`python bench/echo.py SOCKET` with the interpreter running the bench."""

    name = "echo server"

    def command(self) -> list[str]:
        return [sys.executable, str(ECHO_SCRIPT), str(self.socket_path)]

    def start(self) -> "Echo":
        self.spawn()
        self.wait_ready()
        return self


class Bare(Server):
    """`python bench/bare.py SOCKET DB NOTIFY LEVEL`: the bare combined loop (socket, json, apsw, O_APPEND)."""

    name = "bare combined server"

    def __init__(self, socket_path: Path, log_path: Path, db_path: Path, notify_path: Path, synchronous: str = "FULL"):
        super().__init__(socket_path, log_path)
        self.db_path = db_path
        self.notify_path = notify_path
        self.synchronous = synchronous

    def command(self) -> list[str]:
        return [sys.executable, str(BARE_SCRIPT), str(self.socket_path), str(self.db_path), str(self.notify_path),
                self.synchronous]

    def start(self) -> "Bare":
        self.spawn()
        self.wait_ready()
        return self


def _read_line(sock: socket.socket, limit: int = 1 << 20) -> bytes:
    data = bytearray()
    while not data.endswith(b"\n"):
        chunk = sock.recv(65536)
        if not chunk:
            raise BenchError(f"the server closed the connection after {len(data)} bytes")
        data += chunk
        if len(data) > limit:
            raise BenchError("a reply line over 1 MiB")
    return bytes(data)


def cold_start(home: Path, log_path: Path) -> float:
    """Seconds from spawning agorad on a fresh home to its first answer to `hub.hello`."""
    hub = Hub(home, log_path)
    try:
        t0 = time.perf_counter()
        hub.spawn()
        hub.wait_ready(probe=HELLO_FRAME)
        return time.perf_counter() - t0
    finally:
        hub.stop()


def python_pass() -> float:
    """Seconds from spawning `python -c pass` (same interpreter) to its exit."""
    # Waited for as the hook and the bare client are (bench/hook.py `_timed`): through its pipes. Not
    # `Popen.wait(timeout=...)`, which polls with sleeps doubling from 0.5 ms, so that a child done in
    # 17 ms was seen done at 31.5 ms (0.5 + 1 + 2 + 4 + 8 + 16), the "32 ms" python -c pass of earlier runs.
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", "pass"], stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        raise BenchError(f"`{sys.executable} -c pass` exited with status {done.returncode}")
    return elapsed


def rss(pid: int) -> int:
    import psutil

    return psutil.Process(pid).memory_info().rss


def environment() -> dict:
    from agorad.runtime.helper import APPENDS  # the hubs run from the same venv: the same build

    return {"python": sys.version.split()[0], "executable": sys.executable, "cpus": os.cpu_count(),
            "appends": APPENDS}
