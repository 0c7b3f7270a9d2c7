"""Reception figures: send-to-wake latency, spawn-to-armed time and idle CPU of `agora listen`.

Each figure is measured for both watchers: `--watcher inotify` (the Linux
default, the one the goals are for) and `--watcher watchdog` (the watchdog
package's observer, the default where there is no inotify; no goal of its own).

Wake: one persistent `agora listen --as SEAT --debounce 0 --watcher W` per
watcher, each on its own seat (stdout a pipe), and a sender seat on a raw
socket sending DMs to one seat at a time, each awaited until its wake. A
wake's latency runs from the moment the send's reply line is received to the
moment its AGORA_WAKE line is read from the pipe (the hub appends the notify
line after COMMIT and before replying, so the listener may already be on it).
Beside them, in alternating rounds, the bare inotify reader
(bench/bare_inotify.py): the bench appends a line of the same size with
os.write and reads it back from the reader's stdout, timed from just before
the write. All are measured two ways: back to back (the next send as soon as
the wake is read, so whatever a reader does after a wake delays the next one)
and a short gap apart (each wake finds its reader asleep in poll, as a real
listener between deliveries is).

Spawn: `agora listen --once --as sink --max-wait 30 --watcher W` from spawn to
its armed line (it asks the hub for the seat and its debt first, as it always
does), then SIGTERM; beside `python -c 'import click'` from spawn to exit, all
alternating.

Idle: each persistent listener's CPU (psutil user+system) over an idle window
after its last wake, beside the bare reader's over the same window.

Footprint: a persistent `agora listen` (the default watcher) once armed, RSS,
beside a bare `python -c` that sleeps, both with their bytecode (as installed).
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
from bench.messaging import SEND_PARAMS, SINK, hello_frame
from bench.servers import BenchError, Hub, script_path

WAKE_P50_GOAL_MS = 1.0
WAKE_P99_GOAL_MS = 5.0
SPAWN_GOAL_RATIO = 2.0
ARMED_RSS_GOAL_MIB = 12.0  # an armed `agora listen` (a host with 50 seats runs 50)
MIB = 1024 * 1024
# As installed: pip compiles the bytecode, and a listener that compiles its modules from source
# (PYTHONDONTWRITEBYTECODE, which this workplace sets) holds the compiler's leftovers too.
INSTALLED_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
IDLE_GOAL_CPU = 0.001     # CPU seconds per idle second: a clock tick in the window is already a miss
SENDER = "sender"
WATCHERS = ("inotify", "watchdog")  # the first is the default on Linux: the goals are for it
SEATS = {"inotify": SINK, "watchdog": "sink-watchdog"}  # one seat per persistent listener (each holds its lock)
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

    def send(self, frame: bytes) -> tuple[int, float]:
        """Send one DM (`frame`, from send_frame); return its seq and the time its reply arrived."""
        self.request_id += 1
        self.sock.sendall(frame % self.request_id)
        line, at = self._line()
        reply = json.loads(line)
        if reply.get("id") != self.request_id or "result" not in reply:
            raise BenchError(f"unexpected reply to send {self.request_id}: {line[:200]!r}")
        return reply["result"]["seq"], at

    def close(self) -> None:
        self.sock.close()


def timed_wake(sender: Sender, ear: Lines, seat: str):
    """One DM to `seat` and its wake from `ear`: the seconds from the send's reply to the AGORA_WAKE line."""
    frame = send_frame(seat)

    def wake() -> float:
        seq, replied = sender.send(frame)
        line, woke = ear.next()
        if not line.startswith(b"AGORA_WAKE ") or f" n=1 channels=dm:{SENDER}--{seat}#{seq} ".encode() not in line:
            raise BenchError(f"expected the wake for dm:{SENDER}--{seat}#{seq}, read {line[:200]!r}")
        return woke - replied
    return wake


def send_frame(seat: str) -> bytes:
    """The bench's DM to `seat`, with %d for the request id."""
    params = json.dumps({**SEND_PARAMS, "target": "@" + seat}, separators=(",", ":")).replace("%", "%%")
    return b'{"jsonrpc":"2.0","id":%d,"method":"messages.send","params":' + params.encode() + b"}\n"


def figures(work: Path, s, notes: list[str]) -> list[Figure]:
    home = work / "recv"
    with Hub(home, work / "recv.log") as hub:
        hub.start()
        keys = dict(hub.add_agents([*SEATS.values(), SENDER], "always-on"))
        result = wakes(work, hub, keys, s, notes)
        result += spawns(work, hub, s)
        result += footprint(work, hub, s)
    return result


# --- wake latency and idle CPU ------------------------------------------------------

def wakes(work: Path, hub: Hub, keys: dict[str, str], s, notes: list[str]) -> list[Figure]:
    import psutil

    bare_dir = work / "bare-inotify"
    bare_dir.mkdir()
    bare_file = bare_dir / "sink-inbox.log"
    bare_file.touch()
    bare_cmd = [sys.executable, str(BARE_SCRIPT), str(bare_dir), str(bare_file)]
    with contextlib.ExitStack() as stack:
        ears, procs = {}, {}
        for watcher, seat in SEATS.items():
            log = work / f"listen-{watcher}.log"
            command = [str(script_path("agora")), "listen", "--home", str(hub.home), "--as", seat, "--debounce", "0",
                       "--watcher", watcher]
            procs[watcher] = stack.enter_context(_process(command, log))
            ears[watcher] = Lines(procs[watcher], f"agora listen --watcher {watcher}", log)
        procs["bare"] = stack.enter_context(_process(bare_cmd, work / "bare-inotify.log"))
        bare = Lines(procs["bare"], "the bare inotify reader", work / "bare-inotify.log")
        for watcher, ear in ears.items():
            armed = ear.next()[0]
            if not armed.startswith(b"AGORA_LISTEN armed"):
                raise BenchError(f"agora listen --watcher {watcher} said {armed[:200]!r} instead of arming")
        if bare.next()[0] != b"ready":
            raise BenchError("the bare inotify reader did not say ready")
        sender = Sender(hub.socket_path, SENDER, keys[SENDER])
        stack.callback(sender.close)
        append = os.open(bare_file, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        stack.callback(os.close, append)
        bare_line = b""  # set after the warm-up: a line the size of the hub's notify line for these DMs

        def hub_wake(watcher: str):
            return timed_wake(sender, ears[watcher], SEATS[watcher])

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

        watched = {name: psutil.Process(proc.pid) for name, proc in procs.items()}
        per_round = max(1, s.wakes // s.rounds)
        progress(f"send-to-wake, --debounce 0: {s.rounds} rounds of {per_round} wakes back to back and "
                 f"{per_round} wakes {s.wake_gap * 1000:g} ms apart; the bare inotify reader and agora listen "
                 f"with each watcher ({', '.join(WATCHERS)}) alternating")
        for watcher in WATCHERS:
            run(hub_wake(watcher), WARMUP_WAKES, s.wake_gap)()
        sample = (hub.home / f"{SINK}-inbox.log").read_bytes().splitlines()[-1]  # a real notify line, to size the bare one
        bare_line = (json.dumps({"id": 0, "line": "x" * max(0, len(sample) - 30)}).replace('"id": 0', '"id": %d')
                     + "\n").encode()
        run(bare_wake, WARMUP_WAKES, s.wake_gap)()
        switches = {name: p.num_ctx_switches() for name, p in watched.items()}
        sides = [("bare", 0.0), *((w, 0.0) for w in WATCHERS), ("bare", s.wake_gap), *((w, s.wake_gap) for w in WATCHERS)]
        runs = alternate(s.rounds, *(run(bare_wake if name == "bare" else hub_wake(name), per_round, gap)
                                     for name, gap in sides))
        switches = {name: sum(p.num_ctx_switches()) - sum(switches[name]) for name, p in watched.items()}
        latencies = {side: sorted(x for r in found for x in r) for side, found in zip(sides, runs)}

        progress(f"idle CPU over {s.reception_idle:g} s: agora listen with each watcher and the bare inotify "
                 "reader, all armed")
        time.sleep(SETTLE)
        before = {name: (p.cpu_times(), p.num_ctx_switches()) for name, p in watched.items()}
        time.sleep(s.reception_idle)
        after = {name: (p.cpu_times(), p.num_ctx_switches()) for name, p in watched.items()}
        idle = {}  # name -> (CPU seconds per second, context switches) over the window
        for name in watched:
            (b, sb), (a, sa) = before[name], after[name]
            idle[name] = ((a.user - b.user + a.system - b.system) / s.reception_idle, sum(sa) - sum(sb))

    n = len(latencies[("bare", 0.0)])
    figures = []
    for how, gap in (("back to back", 0.0), (f"{s.wake_gap * 1000:g} ms apart", s.wake_gap)):
        bare_lat = latencies[("bare", gap)]
        b50, b99 = _percentile(bare_lat, 0.50) * 1e3, _percentile(bare_lat, 0.99) * 1e3
        for watcher in WATCHERS:
            lat = latencies[(watcher, gap)]
            h50, h99 = _percentile(lat, 0.50) * 1e3, _percentile(lat, 0.99) * 1e3
            graded = watcher == WATCHERS[0]
            figures += [
                Figure(f"send-to-wake p50, {how}{_tag(watcher)}", "ms", h50, b50, "bare inotify reader",
                       f"< {WAKE_P50_GOAL_MS:g} ms" if graded else "", h50 < WAKE_P50_GOAL_MS if graded else None),
                Figure(f"send-to-wake p99, {how}{_tag(watcher)}", "ms", h99, b99, "bare inotify reader",
                       f"< {WAKE_P99_GOAL_MS:g} ms" if graded else "", h99 < WAKE_P99_GOAL_MS if graded else None),
            ]
        notes.append(f"send-to-wake, {how}: max " + ", ".join(
            f"{latencies[(w, gap)][-1] * 1e3:.3f} ms ({w})" for w in WATCHERS) + f", {bare_lat[-1] * 1e3:.3f} ms (bare)")
    for watcher in WATCHERS:
        cpu = idle[watcher][0]
        graded = watcher == WATCHERS[0]
        figures.append(Figure(f"idle listener CPU, {s.reception_idle:g} s{_tag(watcher)}", "cpu", cpu, idle["bare"][0],
                              "bare inotify reader (same window)", "~0" if graded else "",
                              cpu < IDLE_GOAL_CPU if graded else None))
    notes[-2:-2] = [
        f"send-to-wake: agora listen --debounce 0, one persistent listener per watcher on its own seat; {n} wakes "
        f"per side and way, {s.rounds} alternating rounds, after {WARMUP_WAKES} unmeasured; listener: from the "
        "send's reply arriving to its AGORA_WAKE line read (the hub appends the notify line before it replies); "
        "bare: from just before its os.write append to the line read back; context switches per wake: "
        + ", ".join(f"{name} {switches[name] / (2 * n):.1f}" for name in (*WATCHERS, "bare"))]
    notes.append(f"idle CPU: psutil user+system over {s.reception_idle:g} s, {SETTLE:g} s after the last wake "
                 "(clock-tick resolution); context switches in the window: "
                 + ", ".join(f"{name} {idle[name][1]}" for name in (*WATCHERS, "bare")))
    return figures


def _tag(watcher: str) -> str:
    """The suffix naming a figure's watcher: none for the default, whose figures the goals are for."""
    return "" if watcher == WATCHERS[0] else f", --watcher {watcher}"


# --- spawn to armed ----------------------------------------------------------------

def spawn_to_armed(work: Path, hub: Hub, watcher: str) -> float:
    command = [str(script_path("agora")), "listen", "--home", str(hub.home), "--once", "--as", SINK, "--max-wait", "30",
               "--watcher", watcher]
    log = work / "listen-once.log"
    t0 = time.perf_counter()
    with _process(command, log) as proc:
        line, at = Lines(proc, f"agora listen --once --watcher {watcher}", log).next()
        if not line.startswith(b"AGORA_LISTEN armed"):
            raise BenchError(f"agora listen --once --watcher {watcher} said {line[:200]!r} instead of arming")
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
    progress(f"spawn to armed, {s.spawn_runs} runs: agora listen --once with each watcher ({', '.join(WATCHERS)}) "
             "beside python -c 'import click', alternating")
    for watcher in WATCHERS:  # warm the page cache and the bytecode caches, unmeasured
        spawn_to_armed(work, hub, watcher)
    click_import()
    *armed, bare = alternate(s.spawn_runs, *(lambda w=w: spawn_to_armed(work, hub, w) for w in WATCHERS), click_import)
    b = statistics.median(bare)
    figures = []
    for watcher, times in zip(WATCHERS, armed):
        a = statistics.median(times)
        graded = watcher == WATCHERS[0]
        figures.append(Figure(f"listen --once spawn to armed, median of {s.spawn_runs}{_tag(watcher)}", "s", a, b,
                              "python -c 'import click'", f"<= {SPAWN_GOAL_RATIO:g}x" if graded else "",
                              a <= SPAWN_GOAL_RATIO * b if graded else None))
    return figures


# --- armed footprint ------------------------------------------------------------------

def armed_rss(work: Path, hub: Hub) -> float:
    """RSS (bytes) of a persistent `agora listen` (the default watcher) once armed and settled."""
    import psutil

    command = [str(script_path("agora")), "listen", "--home", str(hub.home), "--as", SINK]
    log = work / "listen-footprint.log"
    with open(log, "ab") as err:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                                close_fds=True, env=INSTALLED_ENV)
    try:
        line, _ = Lines(proc, "agora listen (footprint)", log).next()
        if not line.startswith(b"AGORA_LISTEN armed"):
            raise BenchError(f"agora listen said {line[:200]!r} instead of arming")
        time.sleep(0.3)
        return psutil.Process(proc.pid).memory_info().rss
    finally:
        _stop(proc)
        proc.stdout.close()


def sleeper_rss() -> float:
    """RSS (bytes) of a bare `python -c` that sleeps: the interpreter's own floor."""
    import psutil

    proc = subprocess.Popen([sys.executable, "-c", "import sys, time; print('ready', flush=True); time.sleep(60)"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, env=INSTALLED_ENV)
    try:
        if proc.stdout.readline() != b"ready\n":
            raise BenchError("the bare sleeper did not start")
        time.sleep(0.3)
        return psutil.Process(proc.pid).memory_info().rss
    finally:
        proc.kill()
        proc.wait(timeout=10)
        proc.stdout.close()


def footprint(work: Path, hub: Hub, s) -> list[Figure]:
    progress(f"armed footprint, {s.spawn_runs} runs: a persistent agora listen beside python -c that sleeps, alternating")
    armed_rss(work, hub)  # writes the bytecode, as an install would have (unmeasured)
    armed, bare = alternate(s.spawn_runs, lambda: armed_rss(work, hub), sleeper_rss)
    a, b = statistics.median(armed) / MIB, statistics.median(bare) / MIB
    return [Figure(f"armed listener RSS, median of {s.spawn_runs}", "MiB", a, b, "python -c 'time.sleep(60)'",
                   f"<= {ARMED_RSS_GOAL_MIB:g} MiB", a <= ARMED_RSS_GOAL_MIB)]
