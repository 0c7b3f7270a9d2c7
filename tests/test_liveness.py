"""Steady heartbeats (liveness.py): answered without a transaction, seen at once by every
read, written within --liveness-flush, on SIGTERM, and before the sweep reads them."""

from __future__ import annotations

import asyncio
import shutil

import apsw
import pytest

from agorad.surface.errors import InvalidParams
from tests.hubproc import Hub, short_home, wait_for
from tests.wire import Raw


def stored(home, agent_id: str) -> tuple:
    """(status, task, last_seen) as the database file holds them, read beside the hub."""
    db = apsw.Connection(str(home / "agora.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return db.execute("SELECT status, task, last_seen FROM agents WHERE id = ?", (agent_id,)).fetchone()
    finally:
        db.close()


@pytest.fixture
def make_hub():
    started = []

    def make(*args: str) -> Hub:
        hub = Hub(short_home(), *args).start()
        started.append(hub)
        return hub

    yield make
    for hub in started:
        hub.stop()
        shutil.rmtree(hub.home.parent, ignore_errors=True)


def test_a_restated_heartbeat_is_answered_at_once_and_written_first_in_the_next_transaction(make_hub):
    hub = make_hub("--liveness-flush", "1h")
    hub.add_agent("runtime", liveness_mode="always-on")
    with hub.client("runtime") as seat:
        first = seat.call("agents.heartbeat", status="working", task="x")  # new: committed before the reply
        assert stored(hub.home, "runtime") == ("working", "x", first["last_seen"])
        hub.advance(30)
        again = seat.call("agents.heartbeat", status="working", task="x")
        assert again == {"agent": "runtime", "status": "working", "task": "x", "last_seen": again["last_seen"]}
        assert again["last_seen"] == pytest.approx(first["last_seen"] + 30, abs=5)
        assert stored(hub.home, "runtime")[2] == first["last_seen"]  # only in memory so far
        shown = hub.call("agents.get", agent="runtime")["agent"]  # any transaction writes it first
        assert shown["last_seen"] == again["last_seen"]
        assert stored(hub.home, "runtime") == ("working", "x", again["last_seen"])


def test_the_timer_writes_a_waiting_stamp_within_the_flush_interval(make_hub):
    hub = make_hub("--liveness-flush", "0.2")
    assert hub.call("hub.status")["liveness_flush"] == 0.2
    hub.add_agent("runtime", liveness_mode="always-on")
    with hub.client("runtime") as seat:
        seat.call("agents.heartbeat", status="idle")
        hub.advance(30)
        again = seat.call("agents.heartbeat", status="idle")
        wait_for(lambda: stored(hub.home, "runtime")[2] == again["last_seen"], what="the stamp to be written")


def test_flush_zero_commits_every_heartbeat_before_its_reply(make_hub):
    hub = make_hub("--liveness-flush", "0")
    assert hub.call("hub.status")["liveness_flush"] == 0
    hub.add_agent("runtime", liveness_mode="always-on")
    with hub.client("runtime") as seat:
        for step in range(3):
            hub.advance(10)
            reply = seat.call("agents.heartbeat", status="idle")
            assert stored(hub.home, "runtime") == ("idle", None, reply["last_seen"])


def test_a_heartbeat_that_changes_anything_is_committed_before_its_reply(make_hub):
    hub = make_hub("--liveness-flush", "1h")
    hub.add_agent("runtime", liveness_mode="always-on")
    with hub.client("runtime") as seat:
        for status, task in [("working", "a"), ("working", "a"), ("working", "b"), ("busy", None), ("idle", None)]:
            reply = seat.call("agents.heartbeat", status=status, task=task)
            assert (reply["status"], reply["task"]) == (status, task)
            assert stored(hub.home, "runtime")[:2] == (status, task)


def test_sigterm_writes_the_waiting_stamps_and_kill9_loses_at_most_them(make_hub):
    hub = make_hub("--liveness-flush", "1h")
    hub.add_agent("kept", liveness_mode="always-on")
    hub.add_agent("lost", liveness_mode="always-on")
    with hub.client("kept") as kept, hub.client("lost") as lost:
        kept.call("agents.heartbeat", status="working", task="k")
        first = lost.call("agents.heartbeat", status="working", task="l")
        hub.advance(30)
        kept_again = kept.call("agents.heartbeat", status="working", task="k")
        hub.stop()
        assert stored(hub.home, "kept") == ("working", "k", kept_again["last_seen"])
    hub.start()
    with hub.client("lost") as lost:
        hub.advance(30)
        lost.call("agents.heartbeat", status="working", task="l")  # a new connection: committed, learned
        hub.advance(30)
        lost.call("agents.heartbeat", status="working", task="l")  # steady: waits in memory
        hub.kill9()
    status, task, seen = stored(hub.home, "lost")
    assert (status, task) == ("working", "l")  # a status is never lost, only the newest stamp
    assert first["last_seen"] < seen
    hub.start()


def test_an_agent_added_again_under_a_removed_id_starts_unknown(make_hub):
    hub = make_hub("--liveness-flush", "1h")
    hub.add_agent("seat", liveness_mode="always-on")
    with hub.client("seat") as seat:
        seat.call("agents.heartbeat", status="working", task="x")
    hub.call("agents.remove", agent="seat")
    hub.add_agent("seat", liveness_mode="always-on")  # a new row, idle, under the same id
    with hub.client("seat") as seat:
        seat.call("agents.heartbeat", status="working", task="x")
    assert stored(hub.home, "seat")[:2] == ("working", "x")


def test_bad_restated_heartbeats_are_refused_like_any_other(make_hub):
    hub = make_hub("--liveness-flush", "1h")
    hub.add_agent("runtime", liveness_mode="always-on")
    with hub.client("runtime") as seat:
        seat.call("agents.heartbeat", status="working", task="x")
        for params in [{"status": "working", "task": "x", "extra": 1}, {"status": "dormant"},
                       {"status": "idle", "task": "x"}, {"status": "working", "task": "a\nb"}]:
            with pytest.raises(InvalidParams):
                seat.call("agents.heartbeat", **params)
        assert seat.call("agents.heartbeat", status="working", task="x")["status"] == "working"
    assert stored(hub.home, "runtime")[:2] == ("working", "x")


def test_pipelined_replies_keep_their_order_around_steady_heartbeats(make_hub):
    hub = make_hub("--liveness-flush", "1h")
    hub.add_agent("sink", liveness_mode="always-on")
    key = hub.add_agent("runtime", liveness_mode="always-on")
    beat = b'{"jsonrpc":"2.0","id":%d,"method":"agents.heartbeat","params":{"status":"idle"}}\n'
    send = b'{"jsonrpc":"2.0","id":%d,"method":"messages.send","params":{"target":"@sink","title":"t","body":"hi"}}\n'
    with Raw(hub.home) as raw:
        assert "result" in raw.request("hub.hello", {"agent": "runtime", "key": key})
        assert "result" in raw.request("agents.heartbeat", {"status": "idle"}, request_id=2)  # learned
        raw.send(beat % 3 + send % 4 + beat % 5 + beat % 6 + send % 7 + beat % 8)
        replies = [raw.reply() for _ in range(6)]
    assert [r["id"] for r in replies] == [3, 4, 5, 6, 7, 8]
    assert all("result" in r for r in replies), [r for r in replies if "result" not in r]


class InProcessHub:
    """A HubState on a temporary home, driven without a socket, so a test can act between requests
    (a request would flush the waiting stamps first). Call its methods inside a running loop."""

    def __init__(self, tmp_path, **settings):
        from agorad.runtime.clock import Clock
        from agorad.runtime.hub import HubState, Settings
        from agorad.surface.paths import Home
        from agorad.store import connect
        from agorad.store.migrations import migrate

        self.home = Home.resolve(tmp_path / "home")
        self.home.ensure()
        self.db = connect(self.home.db)
        migrate(self.db)
        self.clock = Clock(controllable=True)
        self.state = HubState(self.home, self.db, self.clock, Settings(notify_dir="", **settings))

    def call(self, actor, method: str, **params):
        """One request in its own batch, committed: (result, the actor afterwards)."""
        from agorad.runtime.methods import dispatch

        self.state.batch.join()
        result, actor = dispatch(self.state, actor, method, params)
        self.state.batch.commit()
        return result, actor

    def steady(self, actor, **params):
        from agorad.runtime.methods import dispatch_steady

        return dispatch_steady(self.state, actor, "agents.heartbeat", params)

    def seat(self, agent_id: str, **params):
        """Add the agent and return the actor a connection that said hub.hello as it would have."""
        from agorad.domain.policy import Actor

        self.call(Actor(), "agents.add", agent=agent_id, **params)
        key = (self.home.root / "keys" / f"{agent_id}.key").read_text().strip()
        return self.call(Actor(), "hub.hello", agent=agent_id, key=key)[1]

    def last_seen(self, agent_id: str) -> float:
        return self.db.execute("SELECT last_seen FROM agents WHERE id = ?", (agent_id,)).fetchone()[0]


def test_the_sweep_reads_waiting_stamps_before_it_judges_silence(tmp_path):
    """The periodic sweep runs with a stamp still waiting: it must write it before judging silence."""
    async def scenario():
        hub = InProcessHub(tmp_path, liveness_flush=3600.0)
        seat = hub.seat("seat", liveness_mode="async", interval=60)
        hub.call(seat, "agents.heartbeat", status="idle")  # committed and learned
        hub.clock.advance(130)  # silent 130 s of its 120 s allowance: due dormant by the stored last_seen
        steady = hub.steady(seat, status="idle")
        assert steady is not None and steady["last_seen"] == pytest.approx(hub.clock.now(), abs=5)
        counts = hub.state.sweep()  # what the periodic sweeper runs, with no request in between
        hub.state.batch.commit()
        assert counts["dormant"] == 0
        row = hub.db.execute("SELECT status, last_seen FROM agents WHERE id = 'seat'").fetchone()
        assert row == ("idle", steady["last_seen"])
        hub.db.close()

    asyncio.run(scenario())


def test_a_lost_commit_forgets_what_was_learned(tmp_path):
    from agorad.runtime.batch import Batch
    from agorad.runtime.liveness import Liveness
    from agorad.store import connect

    async def scenario():
        db = connect(tmp_path / "l.db")
        db.execute("CREATE TABLE t (x INTEGER PRIMARY KEY)")
        db.execute("CREATE TABLE child (p INTEGER REFERENCES t(x))")
        liveness = Liveness(3600.0, open_transaction=lambda: None)
        batch = Batch(db, on_settled=liveness.settled)
        batch.join()
        db.execute("PRAGMA defer_foreign_keys = ON")  # the violation surfaces only at COMMIT
        db.execute("INSERT INTO child VALUES (99)")
        liveness.learn(1, "working", "x")
        batch.commit()
        assert not liveness.stamp(1, "working", "x", 1.0)
        db.close()

    asyncio.run(scenario())


def test_a_bare_heartbeat_that_wakes_a_dormant_seat_is_learned(make_hub):
    """Review finding: the cache kept the pre-dormancy status, so a later restatement of it was
    answered from memory while the row said idle."""
    hub = make_hub("--liveness-flush", "1h")
    hub.add_agent("seat", liveness_mode="async", interval=60)
    with hub.client("seat") as seat:
        seat.call("agents.heartbeat", status="working", task="x")
        hub.advance(130)  # due dormant, not yet swept
        woke = seat.call("agents.heartbeat")
        assert (woke["status"], woke["task"]) == ("idle", None)
        again = seat.call("agents.heartbeat", status="working", task="x")
        assert (again["status"], again["task"]) == ("working", "x")
    assert stored(hub.home, "seat")[:2] == ("working", "x")
    assert hub.call("agents.get", agent="seat")["agent"]["status"] == "working"


def test_stamps_in_a_lost_commit_wait_for_the_next_one(tmp_path):
    """Review finding: flushed stamps were dropped when their COMMIT failed."""
    async def scenario():
        hub = InProcessHub(tmp_path, liveness_flush=3600.0)
        seat = hub.seat("seat", liveness_mode="always-on")
        hub.call(seat, "agents.heartbeat", status="idle")
        hub.clock.advance(30)
        steady = hub.steady(seat, status="idle")
        hub.state.batch.join()  # writes the stamp ...
        hub.db.execute("PRAGMA defer_foreign_keys = ON")
        hub.db.execute("INSERT INTO members (agent_pk, channel_pk, acked, joined_at) VALUES (999, 999, 0, 0)")
        hub.state.batch.commit()  # ... into a transaction whose COMMIT fails
        assert hub.last_seen("seat") < steady["last_seen"]
        assert hub.steady(seat, status="idle") is None  # what was learned may have been lost: forgotten
        hub.state.batch.join()
        hub.state.batch.commit()
        assert hub.last_seen("seat") == steady["last_seen"]
        hub.db.close()

    asyncio.run(scenario())


def test_a_stopping_hub_answers_no_heartbeat_from_memory():
    from agorad.runtime.liveness import Liveness

    async def scenario():
        liveness = Liveness(1.0, open_transaction=lambda: None)
        liveness.learn(1, "idle", None)
        assert liveness.stamp(1, "idle", None, 5.0)
        liveness.close()
        assert not liveness.stamp(1, "idle", None, 6.0)

    asyncio.run(scenario())
