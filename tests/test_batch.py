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


# --- a plain send takes no savepoint (store.write savepoint=False, messages.send) ---------------

class _Transport:
    def __init__(self):
        self.lines = []

    def write(self, data):
        self.lines.append(data)

    def is_closing(self):
        return False

    def get_write_buffer_size(self):
        return 0


class InProcessHub:
    """The hub's request path in-process: real HubState and server.Connection, transports that collect."""

    def __init__(self, root):
        from agorad.runtime.clock import Clock
        from agorad.runtime.hub import HubState
        from agorad.runtime.server import Connection
        from agorad.store.migrations import migrate
        from agorad.surface.paths import Home

        home = Home.resolve(root)
        home.ensure()
        self.db = connect(home.db)
        migrate(self.db)
        self.hub = HubState(home, self.db, Clock())
        self.hub.notifier.start(self.db)
        self.Connection = Connection
        self.loop = asyncio.new_event_loop()
        operator = self.connection()
        self.keys = {a: self.turn([(operator, "agents.add", {"agent": a})])[0]["result"]["key"]
                     for a in ("alice", "bob", "carol")}
        self.as_ = {}
        for agent in ("alice", "bob", "carol"):
            self.as_[agent] = self.connection()
            self.turn([(self.as_[agent], "hub.hello", {"agent": agent, "key": self.keys[agent]})])

    def connection(self):
        connection = self.Connection(self.hub)
        connection.transport = _Transport()
        return connection

    def turn(self, calls):
        """Hand every (connection, method, params) to the hub in one loop turn; return the replies in order."""
        import json

        marks = [len(c.transport.lines) for c, _, _ in calls]

        def feed():
            for i, (connection, method, params) in enumerate(calls):
                frame = json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n"
                connection.data_received(frame.encode())

        async def run():
            self.loop.call_soon(feed)
            for _ in range(6):  # the batch waits at most MAX_EXTRA_TURNS more turns
                await asyncio.sleep(0)

        self.loop.run_until_complete(run())
        replies = []
        for (connection, _, _), mark in zip(calls, marks):
            replies += [json.loads(line) for line in connection.transport.lines[mark:]]
            del connection.transport.lines[mark:]
        return replies

    def heads(self):
        return dict(self.db.execute("SELECT name, head FROM channels"))

    def close(self):
        self.hub.notifier.close()
        self.loop.close()
        self.db.close()


@pytest.fixture
def inproc(tmp_path):
    hub = InProcessHub(tmp_path / "home")
    yield hub
    hub.close()


def send(target, **extra):
    return "messages.send", {"target": target, "title": "t", "body": "b", **extra}


def test_a_plain_send_refused_before_it_writes_costs_its_batch_nothing(inproc):
    """Every refusal of a plain draft comes before its first write, so the batch around it commits."""
    alice, bob = inproc.as_["alice"], inproc.as_["bob"]
    inproc.turn([(bob, *send("@alice"))])  # the DM exists from here on
    refused = [send("@nobody"), send("@alice"), send("no-such-room"), send("@Bad Id"), send("@bob", urgency="soon")]
    calls = [(bob, *send("@alice"))] + [(alice, *r) for r in refused] + [(alice, *send("@bob"))]
    replies = inproc.turn(calls)
    assert "result" in replies[0] and "result" in replies[-1], replies
    assert all("error" in r for r in replies[1:-1]), replies
    dm = replies[0]["result"]["channel"]
    assert inproc.heads()[dm] == 3 and replies[-1]["result"]["seq"] == 3


def test_a_plain_send_that_fails_after_writing_loses_its_batch_not_half_a_send(inproc, monkeypatch):
    """No savepoint: a failure after the first write (a storage error or a bug) rolls the whole batch back;
    every request in it is answered with an error and nothing of it is stored; the next request opens a new batch."""
    from agorad.store import messages as messages_sql

    alice, bob, carol = inproc.as_["alice"], inproc.as_["bob"], inproc.as_["carol"]
    inproc.turn([(bob, *send("@alice")), (carol, *send("@alice"))])
    before = inproc.heads()
    real = messages_sql.insert_deliveries

    def failing(db, deliveries):
        if deliveries[0][0] == inproc.db.execute("SELECT pk FROM agents WHERE id = 'carol'").fetchone()[0]:
            raise apsw.ConstraintError("injected after the message row was written")
        return real(db, deliveries)

    monkeypatch.setattr(messages_sql, "insert_deliveries", failing)
    replies = inproc.turn([(bob, *send("@alice")), (alice, *send("@carol")), (carol, *send("@alice"))])
    assert "error" in replies[0] and "error" in replies[1], replies  # the batch's earlier send is lost with it
    after = inproc.heads()
    dm_bob, dm_carol = "dm:alice--bob", "dm:alice--carol"
    assert after[dm_bob] == before[dm_bob]  # neither the earlier send nor half of the failing one is stored
    assert replies[2]["result"]["seq"] == after[dm_carol] == before[dm_carol] + 1  # the next batch: gapless
    monkeypatch.setattr(messages_sql, "insert_deliveries", real)
    replies = inproc.turn([(bob, *send("@alice"))])
    assert replies[0]["result"]["seq"] == before[dm_bob] + 1


def test_a_send_with_to_reply_or_ask_keeps_its_savepoint(inproc):
    """Those are checked after the DM is found or made: a refusal there undoes only that request."""
    alice, bob = inproc.as_["alice"], inproc.as_["bob"]
    replies = inproc.turn([(bob, *send("@alice")), (alice, *send("@carol", to=["bob"])),
                           (alice, *send("@bob", reply_to="commons#99")), (alice, *send("@bob"))])
    assert ["error" in r for r in replies] == [False, True, True, False], replies
    assert "dm:alice--carol" not in inproc.heads()  # the DM the refused `to` send made was undone with it


def test_work_beside_a_commit_runs_on_the_helper_thread_before_the_effects_and_a_failure_costs_nothing(db, capsys):
    """`beside_commit`: the work runs on another thread while the loop thread is in COMMIT, is done
    before any effect runs, and a work that raises is logged while the batch still commits."""
    seen = []

    def work():
        seen.append(("work", threading.get_ident()))

    def broken():
        raise RuntimeError("formatting failed")

    async def turn():
        batch = Batch(db)
        batch.join()
        with write(db):
            db.execute("INSERT INTO t VALUES (7)")
        batch.beside_commit(broken)
        batch.beside_commit(work)
        batch.after_commit(lambda stored: seen.append(("effect", stored)))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        batch.helper.close()

    asyncio.run(turn())
    assert seen[0][0] == "work" and seen[0][1] != threading.get_ident()
    assert seen[1] == ("effect", True)
    assert [r[0] for r in db.execute("SELECT x FROM t")] == [7]
    assert "helper-failed" in capsys.readouterr().err


def test_work_beside_no_open_batch_runs_at_once(db):
    ran = []
    Batch(db).beside_commit(lambda: ran.append(threading.get_ident()))
    assert ran == [threading.get_ident()]


def test_with_no_helper_thread_a_commit_still_runs_and_answers(db, monkeypatch):
    """Review finding: a helper thread the system would not start made `commit` raise before its COMMIT,
    and the batch never answered again. Now the work beside it is skipped and the batch commits."""
    from concurrent.futures import ThreadPoolExecutor

    def no_thread(self, *args, **kwargs):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(ThreadPoolExecutor, "submit", no_thread)
    outcomes, worked = [], []

    async def turn():
        batch = Batch(db)
        batch.join()
        with write(db):
            db.execute("INSERT INTO t VALUES (8)")
        batch.beside_commit(lambda: worked.append(True))
        batch.after_commit(outcomes.append)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        results = batch.helper.write_each([(-1, b"x")] * 300)  # all written here, none lost to a missing thread
        assert len(results) == 300 and all(isinstance(r, OSError) for r in results)

    asyncio.run(turn())
    assert outcomes == [True] and worked == [] and not db.in_transaction
    assert [r[0] for r in db.execute("SELECT x FROM t")] == [8]


def test_a_result_json_cannot_carry_is_an_internal_error_and_the_connection_serves_on(inproc, monkeypatch):
    """The reply was encoded outside the handler's error net: a result holding an infinite float (a
    test hub's clock advanced past any float did it) dropped the connection with a traceback, and every
    later call returning `now` did the same."""
    from agorad.runtime import methods

    real_handler, rule = methods.METHODS["hub.status"]

    def broken(call):
        real_handler(call)
        return {"now": float("inf")}

    alice = inproc.as_["alice"]
    monkeypatch.setitem(methods.METHODS, "hub.status", (broken, rule))
    replies = inproc.turn([(alice, "hub.status", {}), (alice, *send("@bob"))])
    assert replies[0]["error"]["data"]["reason"] == "internal" and "result" in replies[1], replies
    monkeypatch.setitem(methods.METHODS, "hub.status", (real_handler, rule))
    assert "result" in inproc.turn([(alice, "hub.status", {})])[0]


def test_a_rekey_whose_batch_is_lost_leaves_the_old_key_file_and_hash_together(inproc, monkeypatch, tmp_path):
    """The new key is staged beside the key file and put in place only once the change is stored: a batch
    lost after the rekey (here a send later in it fails after writing) keeps the old key in the file and
    in the database alike. Written straight into the file, it locked the seat out."""
    from agorad.store import messages as messages_sql

    home = inproc.hub.home
    operator, bob = inproc.connection(), inproc.as_["bob"]
    old = (home.root / "keys/alice.key").read_text()

    def failing(db, deliveries):
        raise apsw.ConstraintError("injected after the message row was written")

    monkeypatch.setattr(messages_sql, "insert_deliveries", failing)
    replies = inproc.turn([(operator, "agents.rekey", {"agent": "alice"}), (bob, *send("@carol"))])
    assert "error" in replies[0] and "error" in replies[1], replies
    assert (home.root / "keys/alice.key").read_text() == old and not (home.root / "keys/alice.key.new").exists()
    monkeypatch.undo()
    again = inproc.connection()
    assert "result" in inproc.turn([(again, "hub.hello", {"agent": "alice", "key": old.strip()})])[0]
    done = inproc.turn([(operator, "agents.rekey", {"agent": "alice"})])[0]["result"]  # stored: now it takes
    assert (home.root / "keys/alice.key").read_text() == done["key"] + "\n"
    assert not (home.root / "keys/alice.key.new").exists()


def test_an_agent_added_in_a_lost_batch_leaves_no_key_file(inproc, monkeypatch):
    """agents.add wrote its key file inside the transaction: a batch lost after it left keys/<id>.key for an
    agent that does not exist (listed by status as a kept seat), or overwrote one. Staged now, like a rekey's."""
    from agorad.store import messages as messages_sql

    home = inproc.hub.home
    operator, bob = inproc.connection(), inproc.as_["bob"]

    def failing(db, deliveries):
        raise apsw.ConstraintError("injected after the message row was written")

    monkeypatch.setattr(messages_sql, "insert_deliveries", failing)
    replies = inproc.turn([(operator, "agents.add", {"agent": "dave"}), (bob, *send("@carol"))])
    assert "error" in replies[0], replies
    assert not (home.root / "keys/dave.key").exists() and not (home.root / "keys/dave.key.new").exists()
