"""The database: one apsw connection factory, migrations, and all SQL (in this package only)."""

from agorad.store.connection import connect, write

__all__ = ["connect", "write"]
