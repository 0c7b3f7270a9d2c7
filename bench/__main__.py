"""`python -m bench`: measure, then print one line per figure (or --json)."""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench import drive, fanout, harness, hook, load, mcp, messaging, reception, registry, remote, sdk
from bench.figures import Figure, alternate, medians, progress, with_cpu
from bench.servers import BenchError, Echo, Hub, cold_start, environment, python_pass, rss

MIB = 1024 * 1024
CALLS_GOAL = 0.60      # hub calls/s at least this share of the bare echo server's
COLD_GOAL_S = 0.25     # spawn to the first hub.hello answer
RSS_GOAL_MIB = 35.0    # idle hub
SUB_ROWS = ("p50 latency", "p99 latency", "server CPU")  # indented under the calls/s row above them
PARTS = ("heartbeats", "sends", "inbox", "fanout", "registry", "reception", "remote", "sdk", "hook", "drive",
         "startup", "memory", "mcp", "harness")  # --only


@dataclass
class Settings:
    warmup: float = 0.3
    duration: float = 1.0  # per round
    rounds: int = 5
    cold_runs: int = 5
    idle: float = 1.0
    clients: tuple = (1, 8)
    inbox_duration: float = 0.5  # per round, per hub and method
    population: messaging.Population = field(default_factory=messaging.Population)
    wakes: int = 200              # send-to-wake, per side, split over the rounds
    wake_gap: float = 0.01        # between wakes, both sides: each wake finds its reader asleep
    spawn_runs: int = 10          # listen --once spawn to armed, and the bare click import
    reception_idle: float = 3.0   # idle listener CPU window
    hook_runs: int = 21           # agora hook stop, python -c pass and the bare client, each
    drive_turns: int = 15         # agora drive send-to-exec turns, each beside a listener's wake
    harness_wakes: int = 5        # wakes of a real Claude Code session (each a model turn), when installed
    fanout_sizes: tuple = (10, 100, 1000, 5000)  # members of commons, one hub growing through them
    fanout_warm: int = 5          # posts before the timed ones at each size, on both hubs
    fanout_history: int = 150     # ... and this many more on the aged hub: a page's worth of deliveries per member
    fanout_posts: int = 20        # timed posts per round, alternating with as many bare loops
    registry_population: messaging.Population = field(default_factory=lambda: messaging.Population(
        agents=10_000, messages=1_000_000, modes=("always-on", "async", "ephemeral", "async"), silence=2 * 86400))
    registry_calls: int = 50      # of each operator call per round, per hub


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON instead of a table")
    parser.add_argument("--quick", action="store_true", help="short durations: a smoke test, not a measurement")
    parser.add_argument("--only", action="append", choices=PARTS, metavar="PART",
                        help=f"measure only this part (repeatable): {', '.join(PARTS)}")
    args = parser.parse_args(argv)
    settings = Settings(warmup=0.1, duration=0.4, rounds=1, cold_runs=3, idle=0.5, inbox_duration=0.3,
                        population=messaging.Population(agents=100, messages=20_000),
                        wakes=40, spawn_runs=3, reception_idle=1.0, hook_runs=5, drive_turns=3, harness_wakes=2,
                        fanout_sizes=(10, 100, 1000), fanout_warm=2, fanout_history=20, fanout_posts=5,
                        registry_population=messaging.Population(agents=1000, messages=20_000, modes=(
                            "always-on", "async", "ephemeral", "async"), silence=2 * 86400), registry_calls=10) if args.quick else Settings()

    work = Path(tempfile.mkdtemp(prefix="agb", dir="/tmp"))  # short: socket paths are at most 107 bytes
    notes: list[str] = []
    try:
        figures = measure(work, settings, notes, args.only or PARTS)
    except BenchError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)

    if args.json:
        print(json.dumps({
            "environment": environment(), "settings": asdict(settings), "quick": args.quick,
            "figures": [{**asdict(f), "ratio": f.ratio if f.bare else None, "verdict": f.verdict} for f in figures], "notes": notes,
        }, indent=2))
    else:
        print(table(figures, settings, args.quick, notes))
    return 0


def measure(work: Path, s: Settings, notes: list[str], parts=None) -> list[Figure]:
    """Every part of the bench in `parts` (all by default), in the order of PARTS."""
    steps = {
        "heartbeats": lambda: throughput(work, s),
        "sends": lambda: messaging.sends(work, s),
        "inbox": lambda: messaging.inbox(work, s, notes),
        "fanout": lambda: fanout.figures(work, s),
        "registry": lambda: registry.figures(work, s),
        "reception": lambda: reception.figures(work, s, notes),
        "remote": lambda: remote.figures(work, s, notes),
        "sdk": lambda: sdk.figures(work, s),
        "hook": lambda: hook.figures(work, s),
        "drive": lambda: drive.figures(work, s),
        "startup": lambda: startup(work, s),
        "memory": lambda: memory(work, s),
        "mcp": lambda: mcp.figures(work, s),
        "harness": lambda: harness.figures(work, s.harness_wakes, notes),
    }
    figures: list[Figure] = []
    for part in PARTS:
        if parts is None or part in parts:
            figures += steps[part]()
    return figures


def throughput(work: Path, s: Settings) -> list[Figure]:
    """Heartbeats against the hub, the identical frame against the echo server, same client code.

    The hub answers a heartbeat that restates its status from memory and writes
    it within a second (agorad/runtime/liveness.py); the bench's heartbeats do, so a
    second hub started with `--liveness-flush 0`, which commits each one, is
    measured in the same rounds and shown without a goal.
    """
    most = max(s.clients)
    with Hub(work / "load", work / "load.log") as hub, Echo(work / "echo.sock", work / "echo.log") as echo, \
            Hub(work / "commit", work / "commit.log", "--liveness-flush", "0") as committing:
        for server in (hub, echo, committing):
            server.start()
        hellos = {server: [messaging.hello_frame(a, k) for a, k in server.register(most)] for server in (hub, committing)}
        figures = []
        for n in s.clients:
            plural = "s" * (n > 1)
            progress(f"heartbeats, {n} client{plural}: {s.rounds} rounds of {s.duration:g} s; echo, hub and "
                     "the hub committing each heartbeat alternating")

            def beats(server):
                return lambda: with_cpu(server, lambda: load.run(str(server.socket_path), n, s.warmup, s.duration,
                                                                  hellos.get(server, [None] * n)[:n]))

            echo_side, hub_side, commit_side = alternate(s.rounds, beats(echo), beats(hub), beats(committing))
            (h_rate, h_p50, h_p99, h_cpu), (e_rate, e_p50, e_p99, e_cpu) = medians(hub_side), medians(echo_side)
            c_rate, _, _, c_cpu = medians(commit_side)
            figures += [
                Figure(f"heartbeat calls/s, {n} client{plural}", "calls/s", h_rate, e_rate,
                       "echo", f">= {CALLS_GOAL:.2f}x", h_rate >= CALLS_GOAL * e_rate),
                Figure(f"p50 latency, {n} client{plural}", "ms", h_p50, e_p50, "echo"),
                Figure(f"p99 latency, {n} client{plural}", "ms", h_p99, e_p99, "echo"),
                Figure(f"server CPU per call, {n} client{plural}", "us", h_cpu, e_cpu, "echo"),
                Figure(f"heartbeat calls/s, {n} client{plural}, each committed", "calls/s", c_rate, e_rate, "echo"),
                Figure(f"server CPU per committed call, {n} client{plural}", "us", c_cpu, e_cpu, "echo"),
            ]
    return figures


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
        from agorad.surface.client import Client

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
    if unit == "cpu":
        return f"{value * 1000:.2f} ms/s"
    if unit == "tokens":
        return f"{value:,.0f}"
    if unit == "MiB":
        return f"{value:.1f} MiB"
    return f"{value:g}"


def _ratio(f: Figure) -> str:
    return f"{f.ratio:.2f}x" if f.bare else "-"


def table(figures: list[Figure], s: Settings, quick: bool, notes: list[str] = ()) -> str:
    head = ("figure", "agorad", "bare", "ratio", "goal", "", "bare is")
    rows = [(("  " if f.name.startswith(SUB_ROWS) else "") + f.name, _fmt(f.project, f.unit), _fmt(f.bare, f.unit), _ratio(f), f.goal or "-", f.verdict, f.bare_is)
            for f in figures]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    align = ["<", ">", ">", ">", "<", "<", "<"]
    lines = []
    for r in [head, *rows]:
        lines.append("  ".join(f"{c:{a}{w}}" for c, a, w in zip(r, align, widths)).rstrip())
        if r is head:
            lines.append("-" * len(lines[0]))
    env = environment()
    note = (f"python {env['python']}, {env['cpus']} cpus, the notify appends in {env['appends']}\n"
            f"calls/s: median of {s.rounds} alternating rounds of {s.duration:g} s after {s.warmup:g} s warm-up, "
            "one client process per connection, one request in flight each;\n"
            "latency and server CPU per call (psutil user+system / calls answered): median of the rounds")
    for line in notes:
        note += "\n" + line
    if quick:
        note += "\n--quick: a smoke test; these figures are not measurements"
    return "\n".join([*lines, "", note])


if __name__ == "__main__":
    raise SystemExit(main())
