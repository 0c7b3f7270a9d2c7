"""Group commit: the requests handled in one event-loop turn share one transaction.

The first request of a turn opens BEGIN IMMEDIATE and schedules the COMMIT
for the next turn; each request runs inside a SAVEPOINT (`store.write`), so a
bad request undoes only itself. Everything a client or a file may observe
(replies, later notify lines and pushes) waits in `effects` until the COMMIT
has returned: nothing is acknowledged before it is stored, and if the COMMIT
fails every waiting reply becomes an error instead.

Why: one commit costs the same for one request as for eight (WAL frame
writes and shm lock calls), so concurrent clients share it.

`on_begin` runs first in every batch transaction (the hub writes its waiting
liveness stamps there); `on_lost` runs when a batch's writes did not commit,
so what was learned from them can be forgotten.
"""

from __future__ import annotations

import asyncio
from typing import Callable

import apsw

from agorad.log import log

Effect = Callable[[bool], None]  # called with True after a COMMIT, False after a failed one


def _nothing() -> None:
    pass


class Batch:
    def __init__(self, db: apsw.Connection, on_begin: Callable[[], None] = _nothing,
                 on_lost: Callable[[], None] = _nothing):
        self.db = db
        self.effects: list[Effect] = []
        self.on_begin = on_begin
        self.on_lost = on_lost

    def join(self) -> None:
        """Make sure a batch transaction is open; its COMMIT runs on the next loop turn."""
        if not self.db.in_transaction:
            self.db.execute("BEGIN IMMEDIATE")
            asyncio.get_running_loop().call_soon(self.commit)
            self.on_begin()

    def after_commit(self, effect: Effect) -> None:
        self.effects.append(effect)

    def when_settled(self, effect: Effect) -> None:
        """Run `effect` once the open batch is settled (committed or not), or now if none is open."""
        if self.db.in_transaction:
            self.effects.append(effect)
        else:
            effect(True)

    def commit(self) -> None:
        effects, self.effects = self.effects, []
        # Effects exist only while a transaction is open; if it is gone, SQLite rolled it back.
        lost = not self.db.in_transaction
        stored = not lost or not effects
        try:
            if self.db.in_transaction:
                self.db.execute("COMMIT")
        except apsw.Error as exc:
            stored, lost = False, True
            log("commit-failed", error=type(exc).__name__, detail=str(exc)[:200], requests=len(effects))
            try:
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
            except apsw.Error as again:  # the transaction may already be gone with the failure
                log("rollback-failed", error=type(again).__name__)
        if lost:
            self.on_lost()
        for effect in effects:
            try:
                effect(stored)
            except Exception as exc:  # one failing effect must not cost the others their reply
                log("effect-failed", error=type(exc).__name__, detail=str(exc)[:200])
