"""Deliveries as one log threaded per agent (migration 0009): the upgrade, the walk back from an agent's
head, the id floor, removal, and an older backup restored.

A post appends its deliveries at the end of one table and moves each recipient's head; nothing is
indexed by agent, so every per-agent read walks `prev` back from the head. These tests hold that
walk to what the old (agent, id) table answered.
"""

from __future__ import annotations

import apsw
import pytest

from agorad.domain import registry
from agorad.domain.delivery import deliver
from agorad.store import connect, snapshot, write
from agorad.store import messages as messages_sql
from agorad.store.migrations import migrate


@pytest.fixture
def db(tmp_path):
    connection = connect(tmp_path / "agora.db")
    yield connection
    connection.close()


def _old_schema_with_deliveries(db, target: int = 8) -> dict[int, list[int]]:
    """A database at `target` (before 0009) where three agents have interleaved deliveries, one agent
    with a gap above a floor; returns each agent's ids as written."""
    migrate(db, target=target)
    ids = {1: [1, 2, 3], 2: [1, 2, 5, 6], 3: [1]}  # agent 2's ids jump at a power cut's floor
    with write(db):
        for pk in ids:
            db.execute("INSERT INTO agents (pk, id, key_hash, liveness_mode, interval_s, created_at) "
                       "VALUES (?, ?, 'h', 'always-on', 60, 0)", (pk, f"agent-{pk}"))
        db.execute("INSERT INTO messages (pk, channel_pk, seq, sender_pk, sender, title, body, created_at) "
                   "VALUES (1, 1, 1, NULL, 'x', 't', 'b', 0)")
        rows = [(pk, delivery_id) for position in range(4) for pk, agent_ids in ids.items()
                for delivery_id in agent_ids[position:position + 1]]  # interleaved, as sends make them
        db.executemany("INSERT INTO deliveries (agent_pk, id, message_pk, flags, owed, created_at) "
                       "VALUES (?, ?, 1, '', 0, 0)", rows)
    return ids


def _ids_after(db, agent_pk: int, after: int, chunk: int = 1000) -> list[int]:
    return [row["id"] for rows in messages_sql.deliveries_after(db, agent_pk, after, chunk) for row in rows]


def test_the_upgrade_keeps_every_agents_deliveries_in_order_and_threads_them(db):
    ids = _old_schema_with_deliveries(db)
    migrate(db)
    for pk, written in ids.items():
        assert _ids_after(db, pk, 0) == written
        assert messages_sql.newest_delivery(db, pk) == written[-1]
    assert _ids_after(db, 2, 2) == [5, 6]  # after an id, across the floor's jump
    assert _ids_after(db, 2, 3) == [5, 6]  # after an id the agent never had
    assert _ids_after(db, 2, 6) == [] and _ids_after(db, 4, 0) == []
    assert [(pk, newest) for pk, _, newest, _ in messages_sql.delivery_marks(db)] == [(1, 3), (2, 6), (3, 1)]


def test_a_delivery_after_the_upgrade_follows_the_agents_newest(db):
    _old_schema_with_deliveries(db)
    migrate(db)
    message = {"pk": 1, "channel": "commons", "seq": 1, "sender": "x", "title": "t", "body": "b"}
    with write(db):
        made = deliver(db, message, {2: {"to-me"}, 3: set()}, {2: "agent-2", 3: "agent-3"}, 5.0)
    assert [(row["agent"], row["id"], row["flags"]) for row in made] == [("agent-2", 7, "to-me"), ("agent-3", 2, "")]
    assert _ids_after(db, 2, 5) == [6, 7] and _ids_after(db, 3, 0) == [1, 2]


def test_every_agent_has_a_head_and_each_delivery_moves_it(db):
    """0010: a head row for every agent, made with the agent; each delivery moves it."""
    _old_schema_with_deliveries(db)
    migrate(db)
    with write(db):
        db.execute("INSERT INTO agents (pk, id, key_hash, liveness_mode, interval_s, created_at) "
                   "VALUES (9, 'newcomer', 'h', 'always-on', 60, 0)")
    assert db.execute("SELECT last_id, last_seq FROM delivery_heads WHERE agent_pk = 9").fetchone() == (0, 0)
    assert messages_sql.newest_delivery(db, 9) == 0 and _ids_after(db, 9, 0) == []
    assert 9 not in [pk for pk, *_ in messages_sql.delivery_marks(db)]  # no delivery yet
    message = {"pk": 1, "channel": "commons", "seq": 1, "sender": "x", "title": "t", "body": "b"}
    for _ in range(2):
        with write(db):
            deliver(db, message, {9: set()}, {9: "newcomer"}, 5.0)
    assert _ids_after(db, 9, 0) == [1, 2] and messages_sql.newest_delivery(db, 9) == 2


def test_the_walk_reads_in_chunks_oldest_first(db):
    _old_schema_with_deliveries(db)
    migrate(db)
    chunks = [[row["id"] for row in rows] for rows in messages_sql.deliveries_after(db, 2, 0, chunk=3)]
    assert chunks == [[1, 2, 5], [6]]


def test_removing_an_agent_removes_its_deliveries_and_no_one_elses(db):
    _old_schema_with_deliveries(db)
    migrate(db)
    registry.remove(db, "agent-2", 0.0)
    assert db.execute("SELECT COUNT(*) FROM deliveries WHERE agent_pk = 2").fetchone()[0] == 0
    assert db.execute("SELECT COUNT(*) FROM delivery_heads WHERE agent_pk = 2").fetchone()[0] == 0
    assert _ids_after(db, 1, 0) == [1, 2, 3] and _ids_after(db, 3, 0) == [1]


def test_a_summary_reads_a_copy_from_before_the_log(db):
    """`agora check` and `agora backup` summarise files of any schema this code knows."""
    ids = _old_schema_with_deliveries(db)
    summary = snapshot.summary(db)
    assert summary["last_delivery_id"] == {f"agent-{pk}": written[-1] for pk, written in ids.items()}
    migrate(db)
    assert snapshot.summary(db)["last_delivery_id"] == summary["last_delivery_id"]


def test_an_older_backup_is_restored_at_this_codes_schema_with_its_notify_files(tmp_path):
    """A backup made before 0009: restore brings it to the newest schema and remakes the notify files
    from the log (the newest lines of each seat in `.1`)."""
    from agorad.runtime.restore import restore
    from agorad.store.migrations import available
    from agorad.surface.paths import Home

    backup = tmp_path / "old.db"
    old = connect(backup)
    ids = _old_schema_with_deliveries(old)
    old.close()
    home = Home(tmp_path / "home")
    facts = restore(home, backup, home.root, 8 << 20)
    assert facts["last_delivery_id"] == {f"agent-{pk}": written[-1] for pk, written in ids.items()}
    restored = apsw.Connection(str(home.db))
    assert restored.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] == max(v for v, _, _ in available())
    restored.close()
    for pk, written in ids.items():
        lines = (home.root / f"agent-{pk}-inbox.log.1").read_text().splitlines()
        assert [int(line.split('"id":')[1].split(",")[0]) for line in lines] == written
