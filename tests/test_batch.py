"""Group commit: shared transactions, per-request rollback, and no reply before COMMIT."""

from __future__ import annotations

import asyncio
import threading

import apsw
import pytest

from agorad.runtime.batch import Batch
from agorad.store import connect, write


@pytest.fixture
def db(tmp_path):
    connection = connect(tmp_path / "b.db")
    connection.execute("CREATE TABLE t (x INTEGER PRIMARY KEY)")
    connection.execute("CREATE TABLE child (p INTEGER REFERENCES t(x))")
    yield connection
    connection.close()


def run_turn(db, steps):
    """Run `steps` (each gets the batch) in one loop turn, then let the COMMIT happen."""
    outcomes = {}

    async def turn():
        batch = Batch(db)
        for index, step in enumerate(steps):
            batch.join()
            try:
                step(db)
                batch.after_commit(lambda stored, index=index: outcomes.__setitem__(index, stored))
            except apsw.Error:
                outcomes[index] = "refused"
        await asyncio.sleep(0)  # the COMMIT runs on the next turn
        await asyncio.sleep(0)

    asyncio.run(turn())
    return [outcomes[i] for i in range(len(steps))]


def insert(value):
    def step(db):
        with write(db):
            db.execute("INSERT INTO t VALUES (?)", (value,))
    return step


def test_requests_of_one_turn_share_a_commit_and_a_bad_one_undoes_only_itself(db):
    outcomes = run_turn(db, [insert(1), insert(1), insert(2)])
    assert outcomes == [True, "refused", True]
    assert [r[0] for r in db.execute("SELECT x FROM t ORDER BY x")] == [1, 2]
    assert not db.in_transaction


def test_failed_commit_turns_every_waiting_reply_into_an_error(db):
    db.execute("PRAGMA defer_foreign_keys = ON")  # the violation surfaces only at COMMIT

    def orphan(db):
        with write(db):
            db.execute("INSERT INTO child VALUES (42)")

    outcomes = run_turn(db, [insert(1), orphan])
    assert outcomes == [False, False]
    assert db.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 0
    assert not db.in_transaction


def test_concurrent_clients_each_get_their_own_answers(hub):
    keys = {f"seat-{i}": hub.add_agent(f"seat-{i}") for i in range(8)}
    failures = []

    def beat(agent_id):
        with hub.client(agent_id, keys[agent_id]) as seat:
            for n in range(200):
                result = seat.call("agents.heartbeat", task=f"{agent_id} step {n}")
                if result["agent"] != agent_id or result["task"] != f"{agent_id} step {n}":
                    failures.append(result)

    threads = [threading.Thread(target=beat, args=(a,)) for a in keys]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert failures == []
    tasks = {a["id"]: a["task"] for a in hub.call("agents.list")["agents"]}
    assert tasks == {a: f"{a} step 199" for a in keys}


def test_a_lone_request_commits_on_the_next_turn_and_a_growing_batch_waits_for_its_joiners(db):
    """Eight writers otherwise settle into two alternating half batches (batch.py)."""
    from agorad.runtime.batch import MAX_EXTRA_TURNS

    committed_after = {}

    async def scenario():
        batch = Batch(db)

        def request(name, value):
            batch.join()
            insert(value)(db)
            batch.after_commit(lambda stored: committed_after.setdefault(name, turn))

        turn = 0
        request("lone", 1)
        turn = 1
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        turn = 2
        request("a", 2)
        request("b", 3)  # a batch of two: it waits while others join
        for more in range(MAX_EXTRA_TURNS + 2):
            await asyncio.sleep(0)
            turn += 1
            if db.in_transaction:
                request(f"late{more}", 10 + more)
        await asyncio.sleep(0)

    asyncio.run(scenario())
    assert committed_after["lone"] == 1
    joined_late = [k for k in committed_after if k.startswith("late")]
    assert len(joined_late) == MAX_EXTRA_TURNS >= 1  # each extra turn took one more joiner, then it committed
    assert len({committed_after[k] for k in ["a", "b", *joined_late]}) == 1  # one COMMIT for all of them
    assert not db.in_transaction


def test_a_batch_committed_directly_is_not_committed_again_by_its_turn(db):
    async def scenario():
        batch = Batch(db)
        batch.join()
        insert(1)(db)
        batch.commit()  # what shutdown does
        batch.join()
        batch.join()  # a new batch of two, which should wait for joiners
        insert(2)(db)
        await asyncio.sleep(0)  # the first batch's turn ends here: it must leave the new one open
        assert db.in_transaction
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert not db.in_transaction

    asyncio.run(scenario())
    assert [r[0] for r in db.execute("SELECT x FROM t ORDER BY x")] == [1, 2]


def test_a_batch_sqlite_rolled_back_by_itself_is_settled_before_the_next_one(tmp_path):
    """Review finding: SQLITE_FULL rolls the whole transaction back; the next join must not
    open a new batch that inherits the lost one's replies and reports them as stored."""
    db = connect(tmp_path / "full.db")
    db.execute("CREATE TABLE t (x INTEGER PRIMARY KEY, blob BLOB)")
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {pages + 4}")
    outcomes = []

    async def scenario():
        batch = Batch(db)
        batch.join()
        with write(db):
            db.execute("INSERT INTO t VALUES (1, x'00')")
        batch.after_commit(lambda stored: outcomes.append(("first", stored)))
        batch.join()
        with pytest.raises(apsw.FullError):
            with write(db):
                db.execute("INSERT INTO t VALUES (2, zeroblob(1000000))")
        assert not db.in_transaction  # SQLite gave up the whole transaction
        batch.when_settled(lambda stored: outcomes.append(("error reply", stored)))  # waits its turn
        assert outcomes == []
        batch.join()  # the next request: the lost batch is settled first
        assert outcomes == [("first", False), ("error reply", False)]
        with write(db):
            db.execute("INSERT INTO t VALUES (3, x'00')")
        batch.after_commit(lambda stored: outcomes.append(("third", stored)))
        for _ in range(3):
            await asyncio.sleep(0)

    asyncio.run(scenario())
    assert outcomes[-1] == ("third", True)
    assert [r[0] for r in db.execute("SELECT x FROM t")] == [3]
    db.close()
