"""Load held: 200 agents, 50 persistent listeners, 20 --once loops, 8 senders; and 10,000 connections.

No error, no wake missed, and the hub's memory and descriptors stay bounded.
"""

from __future__ import annotations

import random
import subprocess
import threading
import time

import apsw
import pytest
import psutil

from tests.hubproc import AGORA, Hub, wait_for
from tests.listenproc import Listener, fields
from tests.reliability.scale import report, scaled

AGENTS, PERSISTENT, LOOPS, SENDERS = 200, 50, 20, 8


def once_loop(hub, agent: str, stop: threading.Event, wakes: list, errors: list) -> None:
    """`while true; do agora listen --once ...; done`, until stopped and then until quiet."""
    quiet_after_stop = False
    while not quiet_after_stop:
        stopping = stop.is_set()
        done = subprocess.run([AGORA, "listen", "--home", str(hub.home), "--once", "--as", agent, "--debounce", "0.2",
                               "--max-wait", "1"], capture_output=True, text=True, env=hub.env, timeout=60)
        if done.returncode not in (0, 2):
            errors.append(f"{agent}: exit {done.returncode}: {done.stdout[-300:]} {done.stderr[-300:]}")
            return
        wakes += [line for line in done.stdout.splitlines() if line.startswith("AGORA_WAKE")]
        quiet_after_stop = stopping and done.returncode == 0


def sender(hub, agent: str, key: str, targets: list[str], stop: threading.Event, counts: list, errors: list) -> None:
    rng = random.Random(agent)
    sent = 0
    try:
        with hub.client(agent, key) as client:
            while not stop.is_set():
                client.call("messages.send", target=f"@{rng.choice(targets)}", title=f"{agent} {sent}", body="load")
                sent += 1
    except Exception as exc:  # collected and asserted on below
        errors.append(f"{agent}: {exc!r}")
    counts.append(sent)


@pytest.mark.timeout(600)
def test_load_is_held_without_errors_or_missed_wakes(home):
    seconds = scaled(8, 60)
    hub = Hub(home).start()
    keys = {f"a{i:03d}": hub.add_agent(f"a{i:03d}", liveness_mode="always-on") for i in range(AGENTS)}
    names = sorted(keys)
    listening, looping = names[:PERSISTENT], names[PERSISTENT:PERSISTENT + LOOPS]
    senders = names[-SENDERS:]
    with hub.client(senders[0], keys[senders[0]]) as warm:  # notify files exist before the listeners arm
        for target in listening + looping:
            warm.call("messages.send", target=f"@{target}", title="warm up", body="")
    process = psutil.Process(hub.proc.pid)
    fds_before, rss_before = process.num_fds(), process.memory_info().rss

    for agent in looping:  # each loop's first arm saves its place before any load arrives
        assert subprocess.run([AGORA, "listen", "--home", str(home), "--once", "--as", agent, "--max-wait", "1"],
                              capture_output=True, env=hub.env, timeout=60).returncode == 0
    ears = {agent: Listener(hub, "--as", agent, "--debounce", "0.5") for agent in listening}
    for ear in ears.values():
        assert ear.next_line(timeout=60).startswith("AGORA_LISTEN armed")
    stop, errors, counts = threading.Event(), [], []
    loop_wakes = {agent: [] for agent in looping}
    threads = [threading.Thread(target=once_loop, args=(hub, a, stop, loop_wakes[a], errors)) for a in looping]
    threads += [threading.Thread(target=sender, args=(hub, a, keys[a], listening + looping, stop, counts, errors))
                for a in senders]
    for thread in threads:
        thread.start()
    peak_rss, peak_fds, deadline = 0, 0, time.monotonic() + seconds
    while time.monotonic() < deadline:
        peak_rss, peak_fds = max(peak_rss, process.memory_info().rss), max(peak_fds, process.num_fds())
        time.sleep(0.2)
    stop.set()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors[:5]

    db = apsw.Connection(str(home / "agora.db"), flags=apsw.SQLITE_OPEN_READONLY)
    delivered = dict(db.execute("SELECT a.id, COUNT(*) FROM deliveries d JOIN agents a ON a.pk = d.agent_pk "
                                "GROUP BY a.id"))
    for agent, ear in ears.items():
        wakes, rung = [], 0
        while rung < delivered[agent] - 1:  # minus the warm-up line, sent before arming
            line = ear.next_line(timeout=30)
            if line.startswith("AGORA_WAKE"):
                rung += int(fields(line)["n"])
        assert rung == delivered[agent] - 1, f"{agent}: {rung} rung of {delivered[agent] - 1}"
        ear.stop()
    for agent, wakes in loop_wakes.items():
        rung = sum(int(fields(line)["n"]) for line in wakes)
        assert rung == delivered[agent] - 1, f"{agent} (--once loop): {rung} rung of {delivered[agent] - 1}"

    fds_after = process.num_fds()
    assert fds_after <= fds_before + 5, f"descriptors grew from {fds_before} to {fds_after}"
    # The page cache (settings.DB_CACHE_MIB, 32 MiB) fills as the load reads; growth past twice that is a leak.
    assert peak_rss < rss_before + 64 * 2**20, f"RSS grew from {rss_before >> 20} MiB to {peak_rss >> 20} MiB"
    report("load", seconds=seconds, sends=sum(counts), sends_per_s=round(sum(counts) / seconds),
           persistent_listeners=PERSISTENT, once_loops=LOOPS, loop_wakes=sum(map(len, loop_wakes.values())),
           rss_mib_before=rss_before >> 20, rss_mib_peak=peak_rss >> 20, fds_before=fds_before,
           fds_peak=peak_fds, fds_after=fds_after)
    hub.stop()


@pytest.mark.timeout(600)
def test_ten_thousand_connections_leak_no_descriptor(hub):
    connections = scaled(10_000, 100_000)
    key = hub.add_agent("seat")
    process = psutil.Process(hub.proc.pid)
    # Warm up: the checkpoint thread opens its WAL descriptor on its first round.
    wait_for(lambda: sum(f.path.endswith("-wal") for f in process.open_files()) == 2, what="the checkpointer's WAL fd")
    before = process.num_fds()
    for i in range(connections):
        client = hub.client()
        if i % 2:
            client.hello("seat", key)
        client.close()
    hub.call("hub.hello")  # the hub has seen every close by the time this is answered
    after = process.num_fds()
    report("connections", opened_and_closed=connections, fds_before=before, fds_after=after)
    assert after <= before + 1
