"""WAL checkpoints off the request path.

SQLite's automatic checkpoint runs inside whichever COMMIT crosses the
threshold, putting a multi-millisecond stall on that request. The hub turns
it off (`wal_autocheckpoint=0`) and this thread runs PASSIVE checkpoints on
its own connection instead; apsw releases the GIL while SQLite works, so the
event loop keeps serving. PASSIVE never waits for the writer, it just copies
what it can (SQLite docs, "wal_checkpoint").
"""

from __future__ import annotations

import threading
from pathlib import Path

import apsw

from agorad.runtime.log import log

INTERVAL = 1.0


class Checkpointer(threading.Thread):
    def __init__(self, path: Path, interval: float = INTERVAL):
        super().__init__(name="agorad-checkpoint", daemon=True)
        self.path = path
        self.interval = interval
        self.stopping = threading.Event()

    def run(self) -> None:
        db = apsw.Connection(str(self.path), flags=apsw.SQLITE_OPEN_READWRITE)
        db.setbusytimeout(100)
        try:
            while not self.stopping.wait(self.interval):
                try:
                    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except apsw.BusyError:
                    continue  # the writer is busy; the next round catches up
                except apsw.Error as exc:
                    log("checkpoint-failed", error=type(exc).__name__, detail=str(exc)[:200])
        finally:
            db.close()

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=5)
