"""Fan-out figures (`--only fanout`): a post to `commons` at 10 to 5,000 members, beside the bare loop.

Every seat is a member of `commons`, so a post there writes one delivery row
and one notify line per member. Two hubs (the default `--synchronous full`)
grow through the sizes: on the young one each member has had only a few posts;
on the aged one each member has had `fanout_history` posts more, as on a hub
that has run for a while. Keyed by agent, the deliveries of an aged hub filled
a page per member and a post dirtied each (one WAL frame each at COMMIT); in
the log of migration 0009 a post appends to a few pages whatever the age, and
the two rows show it. The timed posts (one client, one at
a time, send to reply; the reply waits for every notify line) alternate round
by round with the bare loop: one line appended to each of N open files
(`bare_appends`), with the hub's own line length. At 1,000 members a third
bare loop spaces its passes a coarse clock tick apart, as the hub's posts come:
back to back, most writes fall in the tick of the one before and skip the
mtime update that every hub post pays for (bench/README.md, "what an append
costs").
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from pathlib import Path

from bench.figures import Figure, alternate, progress
from bench.servers import BenchError, Hub

GOAL_MEMBERS, GOAL_MS = 1000, 5.0  # a post to 1,000 members within 5 ms
LINEAR_GOAL = 1.5                  # ... and per member at 5,000 within this factor of per member at 1,000
SENDER = "poster"
AGES = ("young", "aged")
_OPTIONS = tuple(os.environ.get("AGORA_BENCH_FANOUT_OPTIONS", "").split())  # e.g. "--synchronous normal", by hand
POST = {"target": "commons", "title": "status",
        "body": "Build 4812 is green on main; the flaky socket test passed 50 times in a row."}


def _coarse_tick() -> float:
    """The kernel's coarse clock tick (CLOCK_REALTIME_COARSE, 5 on Linux): a write updates a file's mtime only
    once it has moved, so passes this far apart pay that on every file, as the hub's posts do (bench/README.md).
    4 ms (HZ=250) where the clock cannot be asked."""
    try:
        return time.clock_getres(getattr(time, "CLOCK_REALTIME_COARSE", 5))
    except (OSError, AttributeError):
        return 0.004


TICK = _coarse_tick()


def figures(work: Path, s) -> list[Figure]:
    """Two hubs grow through the sizes side by side: a young one (each member has had only the warm-up
    posts) and an aged one (`fanout_history` posts more per member first; see the module docstring)."""
    from agorad.surface.client import Client

    rows: list[Figure] = []
    per_member: dict[tuple[str, int], float] = {}
    with contextlib.ExitStack() as stack:
        hubs = {age: stack.enter_context(Hub(work / f"fan-{age}", work / f"fan-{age}.log", *_OPTIONS)).start()
                for age in AGES}
        posters = {}
        for age, hub in hubs.items():
            (_, key), = hub.add_agents([SENDER], "always-on")
            posters[age] = stack.enter_context(Client(hub.home, timeout=60))
            posters[age].hello(SENDER, key)
        members = 0
        for size in s.fanout_sizes:
            progress(f"fan-out: {size:,} members in commons; {s.fanout_warm} warm-up posts, {s.fanout_history} more "
                     f"on the aged hub, then {s.rounds} rounds of {s.fanout_posts} posts on each, alternating with "
                     "the bare loop")
            for age, hub in hubs.items():
                hub.add_agents([f"m-{i:05d}" for i in range(members, size)], "always-on")
                for _ in range(s.fanout_warm + (s.fanout_history if age == "aged" else 0)):
                    _post(posters[age], size)
            members = size
            files = _open_files(work / f"bare-{size}", size)
            line = _line_of(hubs["young"].home)
            try:
                young, aged, bare, ticked = alternate(
                    s.rounds, *(lambda age=age: [_post(posters[age], size) for _ in range(s.fanout_posts)] for age in AGES),
                    lambda: [bare_appends(files, line) for _ in range(s.fanout_posts)],
                    lambda: [bare_appends(files, line, TICK) for _ in range(s.fanout_posts)] if size == GOAL_MEMBERS else [])
            finally:
                for fd in files:
                    os.close(fd)
            b_ms = _median_ms(bare)
            bare_is = f"one line appended to each of {size:,} open files"
            for age, runs in (("young", young), ("aged", aged)):
                h_ms = _median_ms(runs)
                per_member[age, size] = h_ms / size
                graded = size == GOAL_MEMBERS and age == "young"
                name = f"post to commons, {size:,} members" + ("" if age == "young" else f", aged ({s.fanout_history} more each)")
                rows.append(Figure(name, "ms", h_ms, b_ms, bare_is, f"<= {GOAL_MS:g} ms" if graded else "",
                                   h_ms <= GOAL_MS if graded else None))
                if graded:  # the same appends a clock tick apart, as the hub's posts come: each updates an mtime
                    rows.append(Figure(f"{name}, beside appends a clock tick apart", "ms", h_ms, _median_ms(ticked),
                                       f"one line appended to each of {size:,} open files, a pass every "
                                       f"{TICK * 1000:g} ms"))
    top = max(s.fanout_sizes)
    if GOAL_MEMBERS in s.fanout_sizes and top > GOAL_MEMBERS:
        for age in AGES:
            suffix = "" if age == "young" else ", aged hub"
            rows.append(Figure(f"per member at {top:,} members{suffix}", "us", per_member[age, top] * 1000,
                               per_member[age, GOAL_MEMBERS] * 1000, f"per member at {GOAL_MEMBERS:,} members{suffix}",
                               f"<= {LINEAR_GOAL:g}x", per_member[age, top] <= LINEAR_GOAL * per_member[age, GOAL_MEMBERS]))
    return rows


def _median_ms(runs: list[list[float]]) -> float:
    return statistics.median(t for run in runs for t in run) * 1000


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


def bare_appends(files: list[int], line: bytes, after: float = 0.0) -> float:
    """One line appended to each open file, one write(2) each, `after` seconds from the call; seconds."""
    if after:
        time.sleep(after)
    started = time.perf_counter()
    for fd in files:
        os.write(fd, line)
    return time.perf_counter() - started
