"""What every measurement shares: the Figure row, progress lines, alternating rounds, server CPU."""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass


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


def progress(text: str) -> None:
    print(f"bench: {text}", file=sys.stderr, flush=True)


def alternate(rounds: int, *runs):
    """Call each run once per round, in turn; return each run's results, a list per run.

    On a small VM the scheduler's placement of client and server (same CPU or
    not) moves one-client round trips by 3x; alternating rounds and taking the
    median keeps that noise from landing on one side only.
    """
    results = [[] for _ in runs]
    for _ in range(rounds):
        for run, found in zip(runs, results):
            found.append(run())
    return results


def medians(results) -> tuple[float, float, float, float]:
    """(calls/s, p50 ms, p99 ms, server CPU us per call): medians over rounds of (LoadResult, CPU s per call)."""
    return (statistics.median(r.calls_per_s for r, _ in results),
            statistics.median(r.p50_ms for r, _ in results),
            statistics.median(r.p99_ms for r, _ in results),
            statistics.median(cpu for _, cpu in results) * 1e6)


def with_cpu(server, run):
    """Run the load; return its result and the server's CPU seconds (user + system) per answered call."""
    import psutil

    proc = psutil.Process(server.proc.pid)
    before = proc.cpu_times()
    result = run()
    after = proc.cpu_times()
    used = (after.user - before.user) + (after.system - before.system)
    return result, used / max(1, result.all_calls)
