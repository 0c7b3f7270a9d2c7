"""Numbered schema migrations, each applied together with its record in one transaction.

A migration is `migrations/NNNN_name.sql`. Landed files are never edited: a
change to the schema is a new file.
"""

from __future__ import annotations

import os
import re
import time

import apsw

from agorad.store.connection import write

_NAME = re.compile(r"(\d{4})_([a-z0-9_]+)\.sql")


def available() -> list[tuple[int, str, str]]:
    """(version, name, sql) for every migration shipped with this package, in order."""
    # Read beside this module, not through importlib.resources: that loads tempfile, zipfile and shutil
    # into the hub (a few ms of its cold start) for a package installed as plain files (package-data).
    directory = os.path.join(os.path.dirname(os.path.abspath(__file__)), "migrations")
    try:
        names = os.listdir(directory)
    except NotADirectoryError:  # imported from a zip (zipapp, pex, shiv): only its loader can read them
        return _available_from_loader()
    found = []
    for name in names:
        match = _NAME.fullmatch(name)
        if match:
            with open(os.path.join(directory, name), encoding="utf-8") as sql:
                found.append((int(match.group(1)), match.group(2), sql.read()))
    return sorted(found)


def _available_from_loader() -> list[tuple[int, str, str]]:
    from importlib.resources import files

    return sorted((int(match.group(1)), match.group(2), entry.read_text(encoding="utf-8"))
                  for entry in files(__package__).joinpath("migrations").iterdir()
                  if (match := _NAME.fullmatch(entry.name)))


def current_version(db: apsw.Connection) -> int:
    db.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations "
        "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
    )
    return db.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()[0]


def migrate(db: apsw.Connection, target: int | None = None) -> list[int]:
    """Apply every migration above the database's version (up to `target`); return those applied."""
    version = current_version(db)
    shipped = available()  # read once: every start reads the files
    newest = max((v for v, _, _ in shipped), default=0)
    if version > newest:
        raise RuntimeError(
            f"the database is at schema {version}, newer than this agorad knows ({newest}); upgrade agora"
        )
    applied = []
    for number, name, sql in shipped:
        if number <= version or (target is not None and number > target):
            continue
        with write(db):
            db.execute(sql)
            db.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (number, name, time.time()),
            )
        applied.append(number)
    return applied
