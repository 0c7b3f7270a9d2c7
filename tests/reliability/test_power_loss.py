"""Power cuts at random points of the hub's own store and domain code (tests/reliability/powercut.py).

Each cycle opens the database through the power-cut VFS, starts the notify
files as the hub does (`Notifier.start`: reconcile, replay), arms a real
listener `Follower` from its saved offset, and runs group-committed batches of
sends, asks, replies, acks and agent changes until the power fails at a random
write or sync. A batch is acknowledged only if its COMMIT returned with the
power on; its notify lines are written after that, as the hub does. Then the
files go back to what a disk may hold (notify files keep a random part of what
was appended since the cycle began) and the database is reopened normally.

At FULL every acknowledged batch must survive and `integrity_check` pass; at
NORMAL the lost ones are counted (RELIABILITY.md quotes the figures). Either
way, after reconciliation no notify line names a delivery the database lacks,
every delivery it holds is in the files, and the listener, reading through
every cut from its saved offsets, rang every delivery the database holds.
"""

from __future__ import annotations

import json
import os
import random
import time

import pytest

from agora_listen.follow import Follower
from agorad.domain import inbox, obligations, registry
from agorad.domain.messages import Draft, send
from agorad.domain.policy import Actor
from agorad.runtime.notify import Notifier
from agorad.runtime.notify_lost import keep_unread_for
from agorad.store import connect, write
from agorad.store import agents as agents_sql
from agorad.store.migrations import migrate
from agorad.surface import settings
from agorad.surface.errors import AgoraError
from agorad.surface.paths import Home, listen_file, notify_file, rotated
from tests.reliability.powercut import PowerCutVFS
from tests.reliability.scale import report, scaled

AGENTS = ("a", "b", "c", "d")
LISTENER = "b"
ROTATE = 6 << 10  # small, so cuts land around rotations too

# The cuts follow a seeded random sequence: one seed in `make test`, five in `make soak` (one seed alone
# passed while 9 of 30 failed: tests/test_follow.py's inode-reuse tests); AGORA_POWER_SEED=N runs that one.
SEEDS = ([int(os.environ["AGORA_POWER_SEED"])] if os.environ.get("AGORA_POWER_SEED")
         else scaled([0], [0, 1, 2, 3, 4]))


class Workload:
    """Batches of operations through the domain code; what each acknowledged batch promised."""

    def __init__(self, db, home: Home, rng: random.Random, counter):
        self.db, self.home, self.rng, self.counter = db, home, rng, counter
        self.actors = {a: Actor(agents_sql.by_id(db, a)["pk"], a, "always-on") for a in AGENTS}

    def batch(self) -> tuple[list, list]:
        """One group commit: (facts promised, delivery rows to notify). Raises nothing on refusals."""
        facts, events = [], []
        self.db.step("BEGIN IMMEDIATE")
        for _ in range(self.rng.randrange(1, 5)):
            try:
                fact, rows = self._operation()
            except AgoraError:
                continue  # refused before writing, or rolled back to its savepoint: promised nothing
            facts.append(fact)
            events += rows
        self.db.step("COMMIT")
        return facts, events

    def _operation(self):
        n = next(self.counter)
        who, peer = self.rng.sample(AGENTS, 2)
        actor, now, kind = self.actors[who], time.time(), self.rng.random()
        if kind < 0.15:
            owed = obligations.i_owe(self.db, actor, now)
            if owed:
                ref = owed[0]["ref"]
                receipt, rows = send(self.db, actor, Draft(f"@{owed[0]['asker']}", f"t{n}", "reply", reply_to=ref),
                                     now, settings.ESCALATION)
                return ("discharged", ref, who, receipt["channel"], receipt["seq"], f"t{n}"), rows
        if kind < 0.3:
            checked = inbox.check(self.db, actor, now, 5)["channels"]
            if checked and checked[0]["messages"]:
                ref = checked[0]["messages"][-1]["ref"]
                cursor = inbox.ack(self.db, actor, upto=ref)["cursors"][ref]
                return ("acked", who, cursor["channel"], cursor["cursor"]), []
        if kind < 0.4:
            registry.update(self.db, now, settings.EPHEMERAL_TTL, who, meta_patch={"n": n})
            return ("changed", who, n), []
        target = "commons" if kind < 0.5 else f"@{peer}"
        draft = Draft(target, f"t{n}", "x" * self.rng.randrange(300), ask=target != "commons" and kind > 0.85)
        receipt, rows = send(self.db, actor, draft, now, settings.ESCALATION)
        return ("sent", receipt["channel"], receipt["seq"], f"t{n}"), rows


def holds(db, fact) -> bool:
    """Whether the reopened database still holds what an acknowledged operation promised."""
    kind = fact[0]
    if kind in ("sent", "discharged"):
        channel, seq, title = fact[-3:]
        found = db.execute("SELECT m.title FROM messages m JOIN channels c ON c.pk = m.channel_pk "
                           "WHERE c.name = ? AND m.seq = ?", (channel, seq)).fetchall()
        if found != [(title,)]:
            return False
        if kind == "sent":
            return True
        channel, seq = fact[1].rsplit("#", 1)
        return bool(db.execute(
            "SELECT 1 FROM debts x JOIN messages m ON m.pk = x.message_pk JOIN channels c ON c.pk = m.channel_pk "
            "JOIN agents a ON a.pk = x.debtor_pk WHERE c.name = ? AND m.seq = ? AND a.id = ? "
            "AND x.discharged_at IS NOT NULL", (channel, int(seq), fact[2])).fetchall())
    if kind == "acked":
        _, who, channel, cursor = fact
        found = db.execute("SELECT mb.acked FROM members mb JOIN agents a ON a.pk = mb.agent_pk "
                           "JOIN channels c ON c.pk = mb.channel_pk WHERE a.id = ? AND c.name = ?", (who, channel)).fetchall()
        return bool(found) and found[0][0] >= cursor
    _, who, n = fact
    return json.loads(db.execute("SELECT meta FROM agents WHERE id = ?", (who,)).fetchone()[0]).get("n", 0) >= n


def deliveries(db, agent: str) -> set:
    """(id, channel, seq, title) of every delivery the database holds for `agent`: a title is unique,
    so a delivery whose id (or seq) the database handed out again after a loss is a different one."""
    return set(db.execute(
        "SELECT d.id, c.name, m.seq, m.title FROM deliveries d JOIN agents a ON a.pk = d.agent_pk "
        "JOIN messages m ON m.pk = d.message_pk JOIN channels c ON c.pk = m.channel_pk WHERE a.id = ?", (agent,)))


def file_lines(home: Home, agent: str) -> list[tuple]:
    lines = []
    for path in (rotated(notify_file(home.root, agent)), notify_file(home.root, agent)):
        if path.exists():
            for raw in path.read_bytes().split(b"\n"):
                try:
                    line = json.loads(raw)
                except ValueError:
                    continue
                lines.append((line["id"], line["channel"], line["seq"], line["title"]))
    return lines


def check_files(db, home: Home) -> None:
    """After reconciliation: no line names a delivery the database lacks; ids ascend; none missing
    above the oldest line kept (older ones may have rotated away)."""
    for agent in AGENTS:
        lines, held = file_lines(home, agent), deliveries(db, agent)
        assert set(lines) <= held, f"{agent}: lines for deliveries the database lacks: {sorted(set(lines) - held)}"
        ids = [line[0] for line in lines]
        assert ids == sorted(set(ids)), f"{agent}: ids not strictly ascending"
        if lines:
            assert {d for d in held if d[0] >= ids[0]} == set(lines), f"{agent}: deliveries missing from the file: {ids} {sorted(held)}"


class Power:
    """Notify files as a disk may hold them: of each file, what was on disk at power-on or at its last
    fsync survives a cut; what was appended since may be lost, in part. Notify writes go through the
    file system, not the VFS, so the hub's fsyncs are recorded by inode while the power is on, and a
    file replaced by a rename gives its inode number up (ext4 hands it to the next new file, which
    must not inherit what survived of the old one). Renames themselves are taken as durable."""

    def __init__(self, home: Home):
        self.paths = [p for a in AGENTS for p in (notify_file(home.root, a), rotated(notify_file(home.root, a)))]
        self.durable: dict[int, int] = {}  # inode -> bytes that survive a cut
        self._fsync, self._replace = os.fsync, os.replace

    def on(self) -> None:
        self.durable = {os.stat(p).st_ino: os.stat(p).st_size for p in self.paths if p.exists()}
        os.fsync, os.replace = self._synced, self._replaced

    def _synced(self, fd) -> None:
        self._fsync(fd)
        facts = os.fstat(fd)
        self.durable[facts.st_ino] = facts.st_size

    def _replaced(self, source, target, *args, **kwargs) -> None:
        try:
            self.durable.pop(os.stat(target).st_ino, None)
        except FileNotFoundError:
            pass
        self._replace(source, target, *args, **kwargs)

    def off(self) -> None:
        os.fsync, os.replace = self._fsync, self._replace

    def cut(self, rng: random.Random) -> None:
        for path in self.paths:
            if not path.exists():
                continue
            facts = os.stat(path)
            floor = min(self.durable.get(facts.st_ino, 0), facts.st_size)
            os.truncate(path, rng.randint(floor, facts.st_size))


def power_session(home: Home, level: str, rng: random.Random, counter, listener: dict, stats: dict, cut: bool):
    """One life of the hub between power-ons; returns the batches it acknowledged (their facts)."""
    vfs = PowerCutVFS()
    db = connect(home.db, level, vfs=vfs.name)
    db.execute("PRAGMA wal_autocheckpoint=0")
    notifier = Notifier(home.root, ROTATE, seats=home.root)
    keep_unread_for(notifier, db)  # as the hub's: a file the listener read that left the name (notify_lost.py)
    power = Power(home)
    power.on()  # before the start-up replay: what it appends is not on disk until something syncs it
    try:
        stats["files_ahead"] += sum(1 for a in AGENTS if set(file_lines(home, a)) - deliveries(db, a))
        stats["lines_replayed"] += notifier.start(db)
        check_files(db, home)
        follower = Follower(notify_file(home.root, LISTENER))
        follower.arm(listener["offset"])
        if listener["offset"] is None:  # as agora listen does: a first arm remembers its place at once
            save_place(follower, listener)
        acknowledged = run_batches(db, home, rng, counter, vfs, notifier, follower, listener, cut)
    finally:
        power.off()
    notifier.close()
    follower.close()
    try:
        db.close()
    except Exception:
        pass  # a dead process closes nothing; the cut below decides what the disk holds
    if cut:
        stats["changes_lost"] += vfs.cut(rng, keep_some=rng.random() < 0.3, tear=rng.random() < 0.5)["changes_lost"]
        power.cut(rng)
    else:
        vfs.unregister()
    return acknowledged


def run_batches(db, home: Home, rng: random.Random, counter, vfs, notifier, follower, listener: dict, cut: bool):
    """The workload's batches until the power fails (or a few, with no cut); the facts it acknowledged."""
    work, acknowledged = Workload(db, home, rng, counter), []
    vfs.fail_after(rng.randrange(1, 400) if cut else 10**9)
    for _ in range(rng.randrange(5, 60) if not cut else 10**6):
        try:
            facts, events = work.batch()
        except Exception:
            if vfs.powered:
                raise
            break  # SQLite saw the dead disk's lies catch up with it: the process is gone anyway
        if not vfs.powered:
            break  # the power failed before COMMIT returned: nothing of this batch was acknowledged
        acknowledged.append(facts)
        by_agent: dict[int, list] = {}
        for row in events:
            by_agent.setdefault(row["agent_pk"], []).append(row)
        for pk, rows in by_agent.items():
            notifier.write(db, pk, rows)
        if rng.random() < 0.1:
            db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()  # the hub's Checkpointer does this each second
        if rng.random() < 0.3:
            read(follower, listener)
    else:
        read(follower, listener)
    return acknowledged


def read(follower: Follower, listener: dict) -> None:
    """What the listener rings, and its saved place (fsynced by a `--once` listener: it survives the cut)."""
    listener["rung"].update((line["id"], line["channel"], line["seq"], line["title"]) for line in follower.read_new())
    save_place(follower, listener)


def save_place(follower: Follower, listener: dict) -> None:
    listener["offset"] = follower.offset()
    listen_file(listener["home"].root, LISTENER, "offset").write_text(json.dumps(listener["offset"]))


def setup_home(home: Home) -> None:
    home.ensure()
    db = connect(home.db)
    migrate(db)
    for agent in AGENTS:
        registry.add(db, home, time.time(), agent, "always-on", None, {})
    db.close()


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("level", ["FULL", "NORMAL"])
@pytest.mark.parametrize("seed", SEEDS)
def test_power_cuts(home, level, seed):
    cuts = scaled(30, 300)
    rng = random.Random(f"{level}-{seed}")
    home = Home(home)
    setup_home(home)
    counter = iter(range(1, 10**9))
    listener = {"home": home, "offset": None, "rung": set()}
    stats = {"acknowledged": 0, "lost": 0, "cuts_losing": 0, "changes_lost": 0, "worst": 0, "files_ahead": 0,
             "lines_replayed": 0}
    for _ in range(cuts):
        batches = power_session(home, level, rng, counter, listener, stats, cut=True)
        db = connect(home.db, level)
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        lost = [facts for facts in batches if not all(holds(db, fact) for fact in facts)]
        db.close()
        stats["acknowledged"] += len(batches)
        stats["lost"] += len(lost)
        stats["cuts_losing"] += bool(lost)
        stats["worst"] = max(stats["worst"], len(lost))
        if level == "FULL":
            assert not lost, f"acknowledged batches lost at FULL: {lost[:3]}"
            # A line is written after its COMMIT returned, and at FULL that COMMIT was synced.
            assert not stats["files_ahead"], "a notify file named a delivery the database lost at FULL"
    power_session(home, level, rng, counter, listener, stats, cut=False)  # reconcile, more mail, read it all
    db = connect(home.db, level)
    missed = deliveries(db, LISTENER) - listener["rung"]
    db.close()
    report(f"power cuts at {level}", seed=seed, cuts=cuts, **stats, listener_rang=len(listener["rung"]))
    assert not missed, f"the listener never rang {len(missed)} deliveries the database holds: {sorted(missed)[:5]}"
