"""Is this file a sound Agora database? SQLite's own check, and the schema's migration version.

Both only read, so they may run on a copy about to be installed or beside a live hub.
"""

from __future__ import annotations

import apsw

# The tables every Agora schema has had since 0002: a file without them is some other SQLite database.
_AGORA_TABLES = ("schema_migrations", "agents", "channels", "messages", "deliveries")


def problems(db: apsw.Connection, quick: bool = False) -> list[str]:
    """What `PRAGMA integrity_check` (or the faster `quick_check`, which skips matching indexes to
    their tables) finds wrong; an empty list when the database is sound."""
    pragma = "quick_check" if quick else "integrity_check"
    found = [row[0] for row in db.execute(f"PRAGMA {pragma}")]
    return [] if found == ["ok"] else found


def schema_version(db: apsw.Connection) -> int | None:
    """The newest migration applied to the database, or None when it is not an Agora database.

    Raises apsw.NotADBError for a file that is not an SQLite database at all.
    """
    present = {row[0] for row in db.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
    if not set(_AGORA_TABLES) <= present:
        return None
    return db.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()[0]
