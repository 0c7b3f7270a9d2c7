"""Kill the hub with SIGKILL at random moments under 8 concurrent senders, and count what survived.

Promises checked: every send whose reply reached its client is stored exactly
once; seqs are gapless and unique per channel; every delivery has exactly one
notify line, ids strictly increasing with none missing; cursors never move back.
"""

from __future__ import annotations

import json
import multiprocessing
import random
import time

import apsw
import pytest

from agorad.surface.client import Client
from agorad.surface.errors import AgoraError
from tests.hubproc import Hub
from tests.reliability.scale import report, scaled

SENDERS = 8
RECIPIENTS = ("r1", "r2", "r3")


def sender(home, agent: str, key: str, stop, results) -> None:
    """Send as fast as possible, reconnecting after every crash; report the titles acknowledged."""
    acked, unknown, n = [], 0, 0
    rng = random.Random(agent)
    deadline = time.monotonic() + 120  # a bound even if the parent dies
    while not stop.is_set() and time.monotonic() < deadline:
        try:
            with Client(home, timeout=5) as hub:
                hub.hello(agent, key)
                while not stop.is_set() and time.monotonic() < deadline:
                    n += 1
                    title = f"{agent}-{n}"
                    target = "commons" if rng.random() < 0.3 else f"@{rng.choice(RECIPIENTS)}"
                    try:
                        hub.call("messages.send", target=target, title=title, body="x" * rng.randrange(200),
                                 ask=target != "commons" and rng.random() < 0.2)
                    except AgoraError as exc:
                        if exc.reason == "unavailable":
                            unknown += 1
                            raise
                        raise AssertionError(f"{title}: unexpected {exc.reason}: {exc.message}")
                    acked.append(title)
        except AgoraError:
            time.sleep(0.005)  # the hub is restarting; try again shortly
    results.put((agent, acked, unknown))


def reader(home, agent: str, key: str, stop, results) -> None:
    """Ack everything now and then and record each cursor the hub reports."""
    seen: dict[str, list[int]] = {}
    deadline = time.monotonic() + 120
    while not stop.is_set() and time.monotonic() < deadline:
        try:
            with Client(home, timeout=5) as hub:
                hub.hello(agent, key)
                while not stop.is_set() and time.monotonic() < deadline:
                    for channel in hub.call("inbox.check", limit=5)["channels"]:
                        last = channel["messages"][-1]["ref"] if channel["messages"] else None
                        if last:
                            cursor = hub.call("inbox.ack", upto=last)["cursors"][last]
                            seen.setdefault(cursor["channel"], []).append(cursor["cursor"])
        except AgoraError:
            time.sleep(0.005)
    results.put((agent, seen))


@pytest.mark.timeout(1800)
def is_torn(line: str, lines: list[str]) -> bool:
    """A fragment a kill left: a SIGKILL during a write(2) that spans a page boundary may land only its
    first part (the kernel stops a write between pages for a fatal signal). The next hub ends it with a
    newline and writes that delivery's line again whole (notify_reconcile.py), and a listener skips it.
    So a line that does not parse counts as torn only when it is the start of a whole line later on."""
    try:
        json.loads(line)
        return False
    except ValueError:
        index = lines.index(line)
        assert any(whole.startswith(line) for whole in lines[index + 1:]), f"a broken line no whole line repeats: {line!r}"
        return True


def test_sigkill_under_load_loses_and_duplicates_nothing(home):
    kills = scaled(20, 200)
    hub = Hub(home).start()
    keys = {a: hub.add_agent(a, liveness_mode="always-on") for a in [f"s{i}" for i in range(SENDERS)] + list(RECIPIENTS)}
    ctx = multiprocessing.get_context("fork")
    stop, results = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=sender, args=(str(home), a, keys[a], stop, results)) for a in keys if a.startswith("s")]
    procs.append(ctx.Process(target=reader, args=(str(home), "r1", keys["r1"], stop, results)))
    for proc in procs:
        proc.start()
    rng = random.Random(5)
    try:
        for _ in range(kills):
            time.sleep(rng.uniform(0.02, 0.25))  # a random moment, not a synchronisation
            hub.kill9()
            hub = Hub(home).start()
        time.sleep(0.2)
        stop.set()
        outcomes = [results.get(timeout=60) for _ in procs]
    finally:
        stop.set()
        for proc in procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.kill()
        hub.stop()

    acked = {title for o in outcomes if len(o) == 3 for title in o[1]}
    unknown = sum(o[2] for o in outcomes if len(o) == 3)
    cursors = next(o[1] for o in outcomes if len(o) == 2)
    db = apsw.Connection(str(home / "agora.db"), flags=apsw.SQLITE_OPEN_READONLY)
    stored = [row[0] for row in db.execute("SELECT title FROM messages")]
    assert len(stored) == len(set(stored)), "a message was stored twice"
    missing = acked - set(stored)
    assert not missing, f"{len(missing)} acknowledged sends are gone, e.g. {sorted(missing)[:5]}"

    for channel_pk, head in db.execute("SELECT pk, head FROM channels"):
        seqs = [r[0] for r in db.execute("SELECT seq FROM messages WHERE channel_pk = ? ORDER BY seq", (channel_pk,))]
        assert seqs == list(range(1, head + 1)), f"channel {channel_pk}: seqs not gapless 1..{head}"

    lines_checked = torn = 0
    for pk, agent in db.execute("SELECT pk, id FROM agents"):
        ids = []
        for name in (f"{agent}-inbox.log.1", f"{agent}-inbox.log"):
            path = home / name
            if path.exists():
                lines = [line for line in path.read_text().splitlines() if line]
                ids += [json.loads(line)["id"] for line in lines if not is_torn(line, lines)]
                torn += sum(is_torn(line, lines) for line in lines)
        stored_ids = [r[0] for r in db.execute("SELECT id FROM deliveries WHERE agent_pk = ? ORDER BY id", (pk,))]
        assert stored_ids == list(range(1, len(stored_ids) + 1)), f"{agent}: delivery ids have a gap"
        assert ids == stored_ids, f"{agent}: notify ids differ from its deliveries"
        lines_checked += len(ids)

    for channel, observed in cursors.items():
        assert observed == sorted(observed), f"cursor of r1 on {channel} moved backwards"
    report("crash-durability", kills=kills, acked=len(acked), unacknowledged=unknown, stored=len(stored),
           channels=db.execute("SELECT COUNT(*) FROM channels").fetchone()[0], notify_lines_checked=lines_checked,
           torn_lines=torn,
           cursor_observations=sum(map(len, cursors.values())))
    assert len(acked) > kills * 5, "the senders hardly got through: the test proved little"
