"""Reception figures: send-to-wake latency, spawn-to-armed time and idle CPU of `agora listen`.

Wake: one persistent `agora listen --as sink --debounce 0` (stdout a pipe), and
a sender seat on a raw socket sending DMs to `sink` one at a time, each awaited
until its wake. A wake's latency runs from the moment the send's reply line is
received to the moment its AGORA_WAKE line is read from the pipe (the hub
appends the notify line after COMMIT and before replying, so the listener may
already be on it). Beside it, in alternating rounds, the bare inotify reader
(bench/bare_inotify.py): the bench appends a line of the same size with
os.write and reads it back from the reader's stdout, timed from just before
the write. Both are measured two ways: back to back (the next send as soon as
the wake is read, so whatever a reader does after a wake delays the next one)
and a short gap apart (each wake finds its reader asleep in poll, as a real
listener between deliveries is).

Spawn: `agora listen --once --as sink --max-wait 30` from spawn to its armed
line (it asks the hub for the seat and its debt first, as it always does),
then SIGTERM; beside `python -c 'import click'` from spawn to exit, alternating.

Idle: the persistent listener's CPU (psutil user+system) over an idle window
after its last wake, beside the bare reader's over the same window.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.figures import Figure, alternate, progress
from bench.load import _percentile
from bench.messaging import SEND_FRAME, SINK, hello_frame
from bench.servers import BenchError, Hub, script_path

WAKE_P50_GOAL_MS = 1.0
WAKE_P99_GOAL_MS = 5.0
SPAWN_GOAL_RATIO = 2.0
IDLE_GOAL_CPU = 0.001     # CPU seconds per idle second: a clock tick in the window is already a miss
SENDER = "sender"
BARE_SCRIPT = Path(__file__).with_name("bare_inotify.py")
LINE_TIMEOUT = 10.0       # for any one expected line
SETTLE = 0.2              # after the last wake, before the idle window: the listener's own bookkeeping
WARMUP_WAKES = 5          # per side, unmeasured, before the first round


class Lines:
    """Complete lines from a pipe, read with os.read and select, each within a deadline."""

    def __init__(self, proc: subprocess.Popen, what: str, log: Path | None = None):
        self.proc, self.what, self.log = proc, what, log
        self.fd = proc.stdout.fileno()
        self.buffer = b""

    def next(self, timeout: float = LINE_TIMEOUT) -> tuple[bytes, float]:
        """The next line (without its newline) and the perf_counter time the read returned it."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                raise BenchError(f"no line from {self.what} within {timeout:g} s{self._tail()}")
            chunk = os.read(self.fd, 65536)
            if not chunk:
                raise BenchError(f"{self.what} closed its stdout{self._tail()}")
            self.buffer += chunk
        at = time.perf_counter()
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line, at

    def _tail(self) -> str:
        if self.log is None:
            return ""
        try:
            return ":\n" + "\n".join(self.log.read_text(errors="replace").splitlines()[-20:])
        except OSError:
            return ""


def _stop(proc: subprocess.Popen | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@contextlib.contextmanager
def _process(command: list[str], log: Path):
    with open(log, "ab") as err:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, close_fds=True)
    try:
        yield proc
    finally:
        _stop(proc)
        proc.stdout.close()


class Sender:
    """A seat on a raw socket: one DM to `sink` per call, timed at the reply's arrival."""

    def __init__(self, socket_path: Path, agent: str, key: str):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(LINE_TIMEOUT)
        self.sock.connect(str(socket_path))
        self.buffer = b""
        self.request_id = 1
        self.sock.sendall(hello_frame(agent, key))
        reply = json.loads(self._line()[0])
        if "result" not in reply:
            raise BenchError(f"hello refused: {reply}")

    def _line(self) -> tuple[bytes, float]:
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise BenchError("the hub closed the sender's connection")
            self.buffer += chunk
        at = time.perf_counter()
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line, at

    def send(self) -> tuple[int, float]:
        """Send one DM; return its seq and the time its reply arrived."""
        self.request_id += 1
        self.sock.sendall(SEND_FRAME % self.request_id)
        line, at = self._line()
        reply = json.loads(line)
        if reply.get("id") != self.request_id or "result" not in reply:
            raise BenchError(f"unexpected reply to send {self.request_id}: {line[:200]!r}")
        return reply["result"]["seq"], at

    def close(self) -> None:
        self.sock.close()


def figures(work: Path, s, notes: list[str]) -> list[Figure]:
    home = work / "recv"
    with Hub(home, work / "recv.log") as hub:
        hub.start()
        keys = dict(hub.add_agents([SINK, SENDER], "always-on"))
        result = wakes(work, hub, keys, s, notes)
        result += spawns(work, hub, s)
    return result


# --- wake latency and idle CPU ------------------------------------------------------

def wakes(work: Path, hub: Hub, keys: dict[str, str], s, notes: list[str]) -> list[Figure]:
    import psutil

    bare_dir = work / "bare-inotify"
    bare_dir.mkdir()
    bare_file = bare_dir / "sink-inbox.log"
    bare_file.touch()
    listen_cmd = [str(script_path("agora")), "listen", "--home", str(hub.home), "--as", SINK, "--debounce", "0"]
    bare_cmd = [sys.executable, str(BARE_SCRIPT), str(bare_dir), str(bare_file)]
    with contextlib.ExitStack() as stack:
        ear_proc = stack.enter_context(_process(listen_cmd, work / "listen.log"))
        bare_proc = stack.enter_context(_process(bare_cmd, work / "bare-inotify.log"))
        ear = Lines(ear_proc, "agora listen", work / "listen.log")
        bare = Lines(bare_proc, "the bare inotify reader", work / "bare-inotify.log")
        armed = ear.next()[0]
        if not armed.startswith(b"AGORA_LISTEN armed"):
            raise BenchError(f"agora listen said {armed[:200]!r} instead of arming")
        if bare.next()[0] != b"ready":
            raise BenchError("the bare inotify reader did not say ready")
        sender = Sender(hub.socket_path, SENDER, keys[SENDER])
        stack.callback(sender.close)
        append = os.open(bare_file, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        stack.callback(os.close, append)
        notify_file = hub.home / f"{SINK}-inbox.log"
        bare_line = b""  # set after the warm-up: a line the size of the hub's notify line for these DMs

        def hub_wake() -> float:
            seq, replied = sender.send()
            line, woke = ear.next()
            if not line.startswith(b"AGORA_WAKE ") or f" n=1 channels=dm:{SENDER}--{SINK}#{seq} ".encode() not in line:
                raise BenchError(f"expected the wake for dm:{SENDER}--{SINK}#{seq}, read {line[:200]!r}")
            return woke - replied

        counter = [0]

        def bare_wake() -> float:
            counter[0] += 1
            data = bare_line % counter[0]
            start = time.perf_counter()
            os.write(append, data)
            line, woke = bare.next()
            if line + b"\n" != data:
                raise BenchError(f"the bare inotify reader printed {line[:200]!r}, not the line appended")
            return woke - start

        def run(wake, count: int, gap: float):
            def go() -> list[float]:
                found = []
                for _ in range(count):
                    if gap:
                        time.sleep(gap)
                    found.append(wake())
                return found
            return go

        procs = [psutil.Process(ear_proc.pid), psutil.Process(bare_proc.pid)]
        per_round = max(1, s.wakes // s.rounds)
        progress(f"send-to-wake, --debounce 0: {s.rounds} rounds of {per_round} wakes back to back and "
                 f"{per_round} wakes {s.wake_gap * 1000:g} ms apart; bare inotify reader and agora listen alternating")
        run(hub_wake, WARMUP_WAKES, s.wake_gap)()
        sample = notify_file.read_bytes().splitlines()[-1]  # a real notify line, to size the bare one
        bare_line = (json.dumps({"id": 0, "line": "x" * max(0, len(sample) - 30)}).replace('"id": 0', '"id": %d')
                     + "\n").encode()
        run(bare_wake, WARMUP_WAKES, s.wake_gap)()
        switches = [p.num_ctx_switches() for p in procs]
        runs = alternate(s.rounds, run(bare_wake, per_round, 0.0), run(hub_wake, per_round, 0.0),
                         run(bare_wake, per_round, s.wake_gap), run(hub_wake, per_round, s.wake_gap))
        switches = [sum(a) - sum(b) for a, b in zip((p.num_ctx_switches() for p in procs), switches)]
        bare_b2b, hub_b2b, bare_apart, hub_apart = [sorted(x for r in side for x in r) for side in runs]

        progress(f"idle CPU over {s.reception_idle:g} s: agora listen and the bare inotify reader, both armed")
        time.sleep(SETTLE)
        before = [(p.cpu_times(), p.num_ctx_switches()) for p in procs]
        time.sleep(s.reception_idle)
        after = [(p.cpu_times(), p.num_ctx_switches()) for p in procs]
        (ear_cpu, ear_idle_switches), (bare_cpu, bare_idle_switches) = [
            ((a.user - b.user + a.system - b.system) / s.reception_idle, sum(sa) - sum(sb))
            for (b, sb), (a, sa) in zip(before, after)]

    n = len(hub_b2b)
    figures = []
    for how, hub_lat, bare_lat in (("back to back", hub_b2b, bare_b2b), (f"{s.wake_gap * 1000:g} ms apart", hub_apart, bare_apart)):
        h50, h99 = _percentile(hub_lat, 0.50) * 1e3, _percentile(hub_lat, 0.99) * 1e3
        b50, b99 = _percentile(bare_lat, 0.50) * 1e3, _percentile(bare_lat, 0.99) * 1e3
        figures += [
            Figure(f"send-to-wake p50, {how}", "ms", h50, b50, "bare inotify reader",
                   f"< {WAKE_P50_GOAL_MS:g} ms", h50 < WAKE_P50_GOAL_MS),
            Figure(f"send-to-wake p99, {how}", "ms", h99, b99, "bare inotify reader",
                   f"< {WAKE_P99_GOAL_MS:g} ms", h99 < WAKE_P99_GOAL_MS),
        ]
        notes.append(f"send-to-wake, {how}: max {hub_lat[-1] * 1e3:.3f} ms (listener), {bare_lat[-1] * 1e3:.3f} ms (bare)")
    figures.append(Figure(f"idle listener CPU, {s.reception_idle:g} s", "cpu", ear_cpu, bare_cpu,
                          "bare inotify reader (same window)", "~0", ear_cpu < IDLE_GOAL_CPU))
    notes[-2:-2] = [
        f"send-to-wake: agora listen --debounce 0; {n} wakes per side and way, {s.rounds} alternating rounds, "
        f"after {WARMUP_WAKES} unmeasured; listener: from the send's reply arriving to its AGORA_WAKE line read "
        "(the hub appends the notify line before it replies); bare: from just before its os.write append to the line read back; "
        f"context switches per wake: listener {switches[0] / (2 * n):.1f}, bare reader {switches[1] / (2 * n):.1f}"]
    notes.append(f"idle CPU: psutil user+system over {s.reception_idle:g} s, {SETTLE:g} s after the last wake "
                 f"(clock-tick resolution); context switches in the window: listener {ear_idle_switches}, "
                 f"bare reader {bare_idle_switches}")
    return figures


# --- spawn to armed ----------------------------------------------------------------

def spawn_to_armed(work: Path, hub: Hub) -> float:
    command = [str(script_path("agora")), "listen", "--home", str(hub.home), "--once", "--as", SINK, "--max-wait", "30"]
    log = work / "listen-once.log"
    t0 = time.perf_counter()
    with _process(command, log) as proc:
        line, at = Lines(proc, "agora listen --once", log).next()
        if not line.startswith(b"AGORA_LISTEN armed"):
            raise BenchError(f"agora listen --once said {line[:200]!r} instead of arming")
        return at - t0


def click_import() -> float:
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", "import click"], stdin=subprocess.DEVNULL)
    status = proc.wait(timeout=30)
    elapsed = time.perf_counter() - t0
    if status != 0:
        raise BenchError(f"`{sys.executable} -c 'import click'` exited with status {status}")
    return elapsed


def spawns(work: Path, hub: Hub, s) -> list[Figure]:
    progress(f"spawn to armed, {s.spawn_runs} runs: agora listen --once beside python -c 'import click', alternating")
    spawn_to_armed(work, hub), click_import()  # warm the page cache and the bytecode caches, unmeasured
    armed, bare = alternate(s.spawn_runs, lambda: spawn_to_armed(work, hub), click_import)
    a, b = statistics.median(armed), statistics.median(bare)
    return [Figure(f"listen --once spawn to armed, median of {s.spawn_runs}", "s", a, b, "python -c 'import click'",
                   f"<= {SPAWN_GOAL_RATIO:g}x", a <= SPAWN_GOAL_RATIO * b)]
