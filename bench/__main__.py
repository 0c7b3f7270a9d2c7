"""`python -m bench`: measure, then print one line per figure (or --json)."""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from bench import load
from bench.servers import BenchError, Echo, Hub, cold_start, environment, python_pass, rss

MIB = 1024 * 1024
CALLS_GOAL = 0.60      # hub calls/s at least this share of the bare echo server's
COLD_GOAL_S = 0.25     # spawn to the first hub.hello answer
RSS_GOAL_MIB = 35.0    # idle hub


@dataclass
class Figure:
    name: str
    unit: str
    project: float
    bare: float
    bare_is: str
    goal: str = ""
    passed: bool | None = None  # None: no goal for this figure

    @property
    def ratio(self) -> float:
        return self.project / self.bare if self.bare else float("nan")

    @property
    def verdict(self) -> str:
        return "-" if self.passed is None else ("PASS" if self.passed else "MISS")


@dataclass
class Settings:
    warmup: float = 0.3
    duration: float = 1.0  # per round
    rounds: int = 5
    cold_runs: int = 5
    idle: float = 1.0
    clients: tuple = (1, 8)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON instead of a table")
    parser.add_argument("--quick", action="store_true", help="short durations: a smoke test, not a measurement")
    args = parser.parse_args(argv)
    settings = Settings(warmup=0.1, duration=0.4, rounds=1, cold_runs=3, idle=0.5) if args.quick else Settings()

    work = Path(tempfile.mkdtemp(prefix="agb", dir="/tmp"))  # short: socket paths are at most 107 bytes
    try:
        figures = measure(work, settings)
    except BenchError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)

    if args.json:
        print(json.dumps({
            "environment": environment(), "settings": asdict(settings), "quick": args.quick,
            "figures": [{**asdict(f), "ratio": f.ratio, "verdict": f.verdict} for f in figures],
        }, indent=2))
    else:
        print(table(figures, settings, args.quick))
    return 0


def progress(text: str) -> None:
    print(f"bench: {text}", file=sys.stderr, flush=True)


def measure(work: Path, s: Settings) -> list[Figure]:
    figures: list[Figure] = []
    figures += throughput(work, s)
    figures += startup(work, s)
    figures += memory(work, s)
    return figures


def throughput(work: Path, s: Settings) -> list[Figure]:
    """Heartbeats against the hub, the identical frame against the echo server, same client code."""
    most = max(s.clients)
    with Hub(work / "load", work / "load.log") as hub, Echo(work / "echo.sock", work / "echo.log") as echo:
        hub.start()
        echo.start()
        hellos = [
            (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "hub.hello", "params": {"agent": a, "key": k}}) + "\n").encode()
            for a, k in hub.register(most)
        ]
        figures = []
        for n in s.clients:
            plural = "s" * (n > 1)
            progress(f"heartbeats, {n} client{plural}: {s.rounds} rounds of {s.duration:g} s, echo and hub alternating")
            sides = _rounds(s, lambda: _cpu(hub, lambda: load.run(str(hub.socket_path), n, s.warmup, s.duration, hellos[:n])),
                        lambda: _cpu(echo, lambda: load.run(str(echo.socket_path), n, s.warmup, s.duration)))
            (h_rate, h_p50, h_p99, h_cpu), (e_rate, e_p50, e_p99, e_cpu) = sides
            figures += [
                Figure(f"heartbeat calls/s, {n} client{plural}", "calls/s", h_rate, e_rate,
                       "echo", f">= {CALLS_GOAL:.2f}x", h_rate >= CALLS_GOAL * e_rate),
                Figure(f"p50 latency, {n} client{plural}", "ms", h_p50, e_p50, "echo"),
                Figure(f"p99 latency, {n} client{plural}", "ms", h_p99, e_p99, "echo"),
                Figure(f"server CPU per call, {n} client{plural}", "us", h_cpu, e_cpu, "echo"),
            ]
    return figures


def _rounds(s: Settings, hub_run, echo_run):
    """Alternate echo and hub runs; per side: the medians of the rounds' calls/s, p50, p99 and server CPU per call.

    On a small VM the scheduler's placement of client and server (same CPU or
    not) moves one-client round trips by 3x; alternating rounds and taking the
    median keeps that noise from landing on one side only.
    """
    hub_results, echo_results = [], []  # (LoadResult, server CPU seconds per call)
    for _ in range(s.rounds):
        echo_results.append(echo_run())
        hub_results.append(hub_run())
    return [
        (statistics.median(r.calls_per_s for r, _ in results),
         statistics.median(r.p50_ms for r, _ in results),
         statistics.median(r.p99_ms for r, _ in results),
         statistics.median(cpu for _, cpu in results) * 1e6)
        for results in (hub_results, echo_results)
    ]


def _cpu(server, run):
    """Run the load; return its result and the server's CPU seconds (user + system) per answered call."""
    import psutil

    proc = psutil.Process(server.proc.pid)
    before = proc.cpu_times()
    result = run()
    after = proc.cpu_times()
    used = (after.user - before.user) + (after.system - before.system)
    return result, used / max(1, result.all_calls)


def startup(work: Path, s: Settings) -> list[Figure]:
    progress(f"cold start, {s.cold_runs} runs: agorad to first hub.hello, and python -c pass")
    hub_times, bare_times = [], []
    for i in range(s.cold_runs):
        hub_times.append(cold_start(work / f"c{i}", work / f"c{i}.log"))
        bare_times.append(python_pass())
    hub_s, bare_s = statistics.median(hub_times), statistics.median(bare_times)
    return [Figure(f"cold start to hub.hello, median of {s.cold_runs}", "s", hub_s, bare_s, "python -c pass",
                   f"< {COLD_GOAL_S:g} s", hub_s < COLD_GOAL_S)]


def memory(work: Path, s: Settings) -> list[Figure]:
    progress(f"idle RSS after {s.idle:g} s: agorad (one seat, a few calls) and the echo server")
    with Hub(work / "idle", work / "idle.log") as hub, Echo(work / "idle.sock", work / "idle-echo.log") as echo:
        hub.start()
        echo.start()
        (agent, key), = hub.register(1)
        from agorad.client import Client

        with Client(hub.home, timeout=10) as seat:
            seat.hello(agent, key)
            for _ in range(5):
                seat.call("agents.heartbeat", status="working", task="bench")
            seat.call("agents.list")
        load.run(str(echo.socket_path), 1, 0.0, 0.01)  # a few echoed lines, like the hub's few calls
        time.sleep(s.idle)
        hub_mib, bare_mib = rss(hub.proc.pid) / MIB, rss(echo.proc.pid) / MIB
    return [Figure("RSS idle", "MiB", hub_mib, bare_mib, "idle echo server",
                   f"< {RSS_GOAL_MIB:g} MiB", hub_mib < RSS_GOAL_MIB)]


def _fmt(value: float, unit: str) -> str:
    if unit == "calls/s":
        return f"{value:,.0f}"
    if unit == "s":
        return f"{value * 1000:.0f} ms"
    if unit == "ms":
        return f"{value:.3f} ms"
    if unit == "us":
        return f"{value:.1f} us"
    if unit == "MiB":
        return f"{value:.1f} MiB"
    return f"{value:g}"


def table(figures: list[Figure], s: Settings, quick: bool) -> str:
    head = ("figure", "agorad", "bare", "ratio", "goal", "", "bare is")
    rows = [(("  " if f.unit in ("ms", "us") else "") + f.name, _fmt(f.project, f.unit), _fmt(f.bare, f.unit), f"{f.ratio:.2f}x", f.goal or "-", f.verdict, f.bare_is)
            for f in figures]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    align = ["<", ">", ">", ">", "<", "<", "<"]
    lines = []
    for r in [head, *rows]:
        lines.append("  ".join(f"{c:{a}{w}}" for c, a, w in zip(r, align, widths)).rstrip())
        if r is head:
            lines.append("-" * len(lines[0]))
    env = environment()
    note = (f"python {env['python']}, {env['cpus']} cpus\n"
            f"calls/s: median of {s.rounds} alternating rounds of {s.duration:g} s after {s.warmup:g} s warm-up, "
            "one client process per connection, one request in flight each;\n"
            "latency and server CPU per call (psutil user+system / calls answered): median of the rounds")
    if quick:
        note += "\n--quick: a smoke test; these figures are not measurements"
    return "\n".join([*lines, "", note])


if __name__ == "__main__":
    raise SystemExit(main())
