"""The store: connection settings, numbered migrations and upgrades of older databases."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import apsw
import pytest

import agorad
from agorad.store import connect, write
from agorad.store.migrations import available, current_version, migrate


@pytest.fixture
def db(tmp_path):
    connection = connect(tmp_path / "agora.db")
    yield connection
    connection.close()


def test_connection_settings(db, tmp_path):
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL: durable through power loss by default
    assert db.execute("PRAGMA temp_store").fetchone()[0] == 2  # MEMORY: no temp file per savepoint journal
    assert stat.S_IMODE(os.stat(tmp_path / "agora.db").st_mode) == 0o600


def test_normal_synchronous_is_an_opt_in(tmp_path):
    assert connect(tmp_path / "f.db", "NORMAL").execute("PRAGMA synchronous").fetchone()[0] == 1
    with pytest.raises(ValueError):
        connect(tmp_path / "g.db", "SOMETIMES")


def test_a_wal_grown_beside_a_long_read_is_cut_back_once_checkpointed(tmp_path, monkeypatch):
    """A read that holds its snapshot (agora check, agora backup) keeps the WAL from being reset, so it grows
    with every write meanwhile; SQLite then kept the grown file's size for good (a review saw 900 MB)."""
    from agorad.store import snapshot
    from agorad.surface import settings

    monkeypatch.setattr(settings, "WAL_KEEP_MIB", 1)
    path = tmp_path / "agora.db"
    db = connect(path)
    db.execute("PRAGMA wal_autocheckpoint=0")  # as the hub runs it: its own thread checkpoints
    db.execute("CREATE TABLE t (x BLOB)")
    reader = snapshot.open_readonly(path)
    reader.execute("BEGIN")
    reader.execute("SELECT COUNT(*) FROM t").fetchall()
    for _ in range(40):
        db.execute("INSERT INTO t VALUES (randomblob(100000))")
    wal = tmp_path / "agora.db-wal"
    assert wal.stat().st_size > 4 * 1024 * 1024
    reader.execute("COMMIT")
    reader.close()
    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    db.execute("INSERT INTO t VALUES (randomblob(10))")  # starts the WAL over, and cuts the file
    assert wal.stat().st_size <= 1024 * 1024
    assert db.execute("PRAGMA journal_size_limit").fetchone()[0] == 1024 * 1024


def test_migrations_are_numbered_from_one_without_gaps():
    numbers = [number for number, _, _ in available()]
    assert numbers == list(range(1, len(numbers) + 1))


def test_a_package_imported_from_a_zip_finds_its_migrations(tmp_path):
    """A zipapp, pex or shiv imports agorad from a zip: the files beside the module are not on disk,
    and the loader reads them instead (os.listdir of a path inside a zip fails)."""
    package = Path(agorad.__file__).parent
    archive = tmp_path / "agora.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for path in package.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                z.write(path, path.relative_to(package.parent).as_posix())
    probe = ("import sys, agorad.store.migrations as m; from agorad.store import connect; "
             "print(m.__file__); print(m.migrate(connect(sys.argv[1])))")
    done = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "agora.db")], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(archive)}, cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    where, applied = done.stdout.splitlines()
    assert where.startswith(str(archive))
    assert applied == str([n for n, _, _ in available()])


def test_each_migration_is_recorded_once(db):
    applied = migrate(db)
    assert applied == [n for n, _, _ in available()]
    assert migrate(db) == []
    recorded = [row[0] for row in db.execute("SELECT version FROM schema_migrations ORDER BY version")]
    assert recorded == applied


@pytest.mark.parametrize("start", [n for n, _, _ in available()])
def test_upgrade_from_every_older_schema_keeps_data(db, start):
    migrate(db, target=start)
    assert current_version(db) == start
    with write(db):
        db.execute(
            "INSERT INTO agents (id, key_hash, liveness_mode, interval_s, created_at) "
            "VALUES ('old', 'sha256:x', 'always-on', 60, 1)"
        )
    migrate(db)
    assert current_version(db) == max(n for n, _, _ in available())
    assert db.execute("SELECT liveness_mode FROM agents WHERE id = 'old'").fetchone()[0] == "always-on"


def test_failed_migration_leaves_no_trace(db, monkeypatch):
    from agorad.store import migrations

    real = available()
    broken = real + [(len(real) + 1, "broken", "CREATE TABLE half (x); THIS IS NOT SQL;")]
    monkeypatch.setattr(migrations, "available", lambda: broken)
    with pytest.raises(apsw.SQLError):
        migrate(db)
    assert current_version(db) == len(real)
    assert db.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'half'").fetchone()[0] == 0


def test_a_database_newer_than_the_code_is_refused(db):
    migrate(db)
    db.execute("INSERT INTO schema_migrations VALUES (999, 'future', 0)")
    with pytest.raises(RuntimeError, match="upgrade agora"):
        migrate(db)


def test_foreign_keys_cascade_aliases(db):
    migrate(db)
    with write(db):
        db.execute("INSERT INTO agents (id, key_hash, liveness_mode, interval_s, created_at) VALUES ('a', 'h', 'async', 60, 0)")
        db.execute("INSERT INTO aliases VALUES ('old-a', 1, 'r', 0)")
        db.execute("DELETE FROM agents WHERE id = 'a'")
    assert db.execute("SELECT COUNT(*) FROM aliases").fetchone()[0] == 0


def test_connection_keeps_statements_prepared(db):
    """QPSG on: no plan may depend on a bound value, so binding never forces a re-prepare."""
    assert db.config(apsw.SQLITE_DBCONFIG_ENABLE_QPSG, -1) == 1


def test_upgrade_to_lean_send_keeps_unread_and_delivery_ids(db):
    """0003: own messages above the cursor become single acks, DM addressees become implied,
    and the newest delivery id is read from the deliveries table."""
    from agorad.domain import inbox
    from agorad.domain.policy import Actor
    from agorad.store import messages as messages_sql

    migrate(db, target=2)
    with write(db):
        for pk, agent in ((1, "a"), (2, "b")):
            db.execute("INSERT INTO agents (pk, id, key_hash, liveness_mode, interval_s, created_at, last_delivery) "
                       "VALUES (?, ?, 'h', 'always-on', 60, 0, ?)", (pk, agent, 3 if agent == "b" else 0))
        db.execute("INSERT INTO channels (pk, name, kind, dm_low, dm_high, head, created_at) "
                   "VALUES (9, 'dm:a--b', 'dm', 1, 2, 3, 0)")
        db.executemany("INSERT INTO members (agent_pk, channel_pk, acked, joined_at) VALUES (?, 9, 0, 0)", [(1,), (2,)])
        for seq, sender in ((1, 2), (2, 1), (3, 2)):  # a has b's 1 and 3 unread, its own 2 above its cursor
            db.execute("INSERT INTO messages (pk, channel_pk, seq, sender_pk, sender, title, body, created_at) "
                       "VALUES (?, 9, ?, ?, ?, 't', 'b', 0)", (seq, seq, sender, "ab"[sender - 1]))
            db.execute("INSERT INTO addressees (message_pk, agent_pk) VALUES (?, ?)", (seq, 3 - sender))
        db.executemany("INSERT INTO deliveries (agent_pk, id, message_pk, flags, owed, created_at) "
                       "VALUES (?, ?, ?, 'dm', 0, 0)", [(1, 1, 1), (1, 2, 3), (2, 1, 2)])

    migrate(db)
    assert inbox.check(db, Actor(1, "a", "always-on"), 0)["unread"] == 2  # b's two; a's own is acked
    assert db.execute("SELECT agent_pk, seq FROM acks_above ORDER BY 1, 2").fetchall() == [(1, 2), (2, 1), (2, 3)]
    assert db.execute("SELECT COUNT(*) FROM addressees").fetchone()[0] == 0
    assert messages_sql.addressee_pks(db, 2) == {2}  # the DM's other party, implied
    assert [(pk, newest) for pk, _, newest, _ in messages_sql.delivery_marks(db)] == [(1, 2), (2, 1)]
    assert "last_delivery" not in [row[1] for row in db.execute("PRAGMA table_info(agents)")]


def test_upgrade_to_interval_source_takes_the_old_default_as_the_default(db):
    """0004: every agent gets an interval source. Before it, `agora agent add` sent 30m whenever
    --interval was not given, so 1800 s reads as the default and anything else as the operator's."""
    from agorad.domain import registry, roster
    from agorad.domain.policy import Actor
    from agorad.runtime.liveness import Liveness

    migrate(db, target=3)
    with write(db):
        for agent, interval in (("plain", 1800), ("chosen", 600)):
            db.execute("INSERT INTO agents (id, key_hash, liveness_mode, interval_s, created_at) "
                       "VALUES (?, 'h', 'async', ?, 0)", (agent, interval))
    migrate(db)
    shown = {a["id"]: (a["interval"], a["interval_source"], a["declared_interval"]) for a in roster.list_agents(db, 0, 3600)[0]}
    assert shown == {"plain": (1800, "default", None), "chosen": (600, "operator", None)}
    # The upgraded rows take declarations by the new rules: the default yields, the operator's choice holds.
    liveness = Liveness(0, open_transaction=lambda: None)
    for agent in ("plain", "chosen"):
        pk = db.execute("SELECT pk FROM agents WHERE id = ?", (agent,)).fetchone()[0]
        with write(db):
            registry.heartbeat(db, liveness, 1.0, Actor(pk, agent, "async"), None, None, 120.0)
    shown = {a["id"]: (a["interval"], a["interval_source"], a["declared_interval"]) for a in roster.list_agents(db, 1, 3600)[0]}
    assert shown == {"plain": (120, "agent", 120), "chosen": (600, "operator", 120)}
    with pytest.raises(apsw.ConstraintError):
        db.execute("UPDATE agents SET interval_source = 'guess' WHERE id = 'plain'")
    with pytest.raises(apsw.ConstraintError):
        db.execute("UPDATE agents SET declared_interval_s = 0 WHERE id = 'plain'")


def test_upgrade_gives_dms_of_renamed_agents_their_new_names(db):
    """0005: a DM still named after an id its agent was renamed from takes its canonical name,
    unless another channel holds that name; the old name keeps finding it."""
    from agorad.domain import messages
    from agorad.domain.policy import Actor

    migrate(db, target=3)
    with write(db):
        for pk, agent in ((1, "a1"), (2, "b2"), (3, "c2"), (4, "x")):
            db.execute("INSERT INTO agents (pk, id, key_hash, liveness_mode, interval_s, created_at) "
                       "VALUES (?, ?, 'h', 'always-on', 60, 0)", (pk, agent))
        db.executemany("INSERT INTO aliases VALUES (?, ?, 'r', 0)", [("b1", 2), ("c1", 3)])
        db.executemany(  # b1 -> b2 renamed a1's DM stale; c1 -> c2 found its new name taken by an old channel
            "INSERT INTO channels (pk, name, kind, dm_low, dm_high, head, created_at) VALUES (?, ?, 'dm', ?, ?, 1, 0)",
            [(10, "dm:a1--b1", 1, 2), (11, "dm:a1--c1", 1, 3), (12, "dm:a1--c2", 1, 99), (13, "dm:a1--x", 1, 4)])
        for pk in (10, 11, 12, 13):
            db.execute("INSERT INTO messages (pk, channel_pk, seq, sender_pk, sender, title, body, created_at) "
                       "VALUES (?, ?, 1, 1, 'a1', ?, 'b', 0)", (pk, pk, f"t{pk}"))
        db.executemany("INSERT INTO members (agent_pk, channel_pk, acked, joined_at) VALUES (1, ?, 0, 0)",
                       [(10,), (11,), (12,), (13,)])

    migrate(db)
    names = dict(db.execute("SELECT pk, name FROM channels WHERE kind = 'dm'"))
    assert names == {10: "dm:a1--b2", 11: "dm:a1--c1", 12: "dm:a1--c2", 13: "dm:a1--x"}
    assert db.execute("SELECT old_name, channel_pk FROM channel_aliases").fetchall() == [("dm:a1--b1", 10)]
    a1 = Actor(1, "a1", "always-on")
    shown = messages.read(db, a1, "dm:a1--b1#1")
    assert (shown["ref"], shown["title"]) == ("dm:a1--b2#1", "t10")
