"""Fan-out figures (`--only fanout`): a post to `commons` at 10 to 5,000 members, beside the bare loop.

Every seat is a member of `commons`, so a post there writes one delivery row
and one notify line per member. One hub grows through the sizes; at each, its
members are given `history` posts first (each member's deliveries then fill
b-tree pages of their own, as on a hub that has run for a while: a post then
dirties one page per member, which a fresh hub does not), then the timed
posts (one client, one at a time, send to reply; the reply waits for every
notify line) alternate round by round with the bare loop: one line appended
to each of N open files (`bare_appends`), with the hub's own line length.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

from bench.figures import Figure, alternate, progress
from bench.servers import BenchError, Hub

GOAL_MEMBERS, GOAL_MS = 1000, 5.0  # a post to 1,000 members within 5 ms
LINEAR_GOAL = 1.5                  # ... and per member at 5,000 within this factor of per member at 1,000
SENDER = "poster"
POST = {"target": "commons", "title": "status",
        "body": "Build 4812 is green on main; the flaky socket test passed 50 times in a row."}


def figures(work: Path, s) -> list[Figure]:
    rows: list[Figure] = []
    per_member: dict[int, float] = {}
    with Hub(work / "fan", work / "fan.log", *os.environ.get("FANOPTS", "").split()) as hub:
        hub.start()
        from agorad.surface.client import Client

        (_, key), = hub.add_agents([SENDER], "always-on")
        members = 0
        with Client(hub.home, timeout=60) as poster:
            poster.hello(SENDER, key)
            for size in s.fanout_sizes:
                progress(f"fan-out: {size:,} members in commons; {s.fanout_history} posts of history, then "
                         f"{s.rounds} rounds of {s.fanout_posts} posts alternating with the bare loop")
                hub.add_agents([f"m-{i:05d}" for i in range(members, size)], "always-on")
                members = size
                for _ in range(s.fanout_history):
                    _post(poster, size)
                files = _open_files(work / f"bare-{size}", size)
                line = _line_of(hub.home)
                try:
                    hub_runs, bare_runs = alternate(s.rounds, lambda: [_post(poster, size) for _ in range(s.fanout_posts)],
                                                    lambda: [bare_appends(files, line) for _ in range(s.fanout_posts)])
                finally:
                    for fd in files:
                        os.close(fd)
                h_ms = statistics.median(t for run in hub_runs for t in run) * 1000
                b_ms = statistics.median(t for run in bare_runs for t in run) * 1000
                per_member[size] = h_ms / size
                goal = f"<= {GOAL_MS:g} ms" if size == GOAL_MEMBERS else ""
                rows.append(Figure(f"post to commons, {size:,} members", "ms", h_ms, b_ms,
                                   f"one line appended to each of {size:,} open files", goal,
                                   h_ms <= GOAL_MS if goal else None))
    top = max(per_member)
    if GOAL_MEMBERS in per_member and top > GOAL_MEMBERS:
        rows.append(Figure(f"per member at {top:,} members", "us", per_member[top] * 1000, per_member[GOAL_MEMBERS] * 1000,
                           f"per member at {GOAL_MEMBERS:,} members", f"<= {LINEAR_GOAL:g}x",
                           per_member[top] <= LINEAR_GOAL * per_member[GOAL_MEMBERS]))
    return rows


def _post(poster, members: int) -> float:
    started = time.perf_counter()
    receipt = poster.call("messages.send", **POST)
    elapsed = time.perf_counter() - started
    if receipt["delivered"] != members:
        raise BenchError(f"a post to commons reached {receipt['delivered']} members, not {members}")
    return elapsed


def _open_files(directory: Path, count: int) -> list[int]:
    directory.mkdir()
    return [os.open(directory / f"m-{i:05d}-inbox.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            for i in range(count)]


def _line_of(home: Path) -> bytes:
    """The newest line of a member's notify file: the bare loop appends lines of the same length."""
    with open(home / "m-00000-inbox.log", "rb") as f:
        return f.read().splitlines()[-1] + b"\n"


def bare_appends(files: list[int], line: bytes) -> float:
    """One line appended to each open file, one write(2) each; seconds."""
    started = time.perf_counter()
    for fd in files:
        os.write(fd, line)
    return time.perf_counter() - started
