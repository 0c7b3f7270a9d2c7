"""The store: connection settings, numbered migrations and upgrades of older databases."""

from __future__ import annotations

import os
import stat

import apsw
import pytest

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
    assert db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    assert stat.S_IMODE(os.stat(tmp_path / "agora.db").st_mode) == 0o600


def test_full_synchronous_is_available(tmp_path):
    assert connect(tmp_path / "f.db", "FULL").execute("PRAGMA synchronous").fetchone()[0] == 2
    with pytest.raises(ValueError):
        connect(tmp_path / "g.db", "SOMETIMES")


def test_migrations_are_numbered_from_one_without_gaps():
    numbers = [number for number, _, _ in available()]
    assert numbers == list(range(1, len(numbers) + 1))


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
