"""Steady heartbeats: a heartbeat that changes nothing but `last_seen` is stamped in memory.

Most heartbeats repeat what the agent said last time ("still working on X").
Committing each one costs a whole SQLite transaction for a value that only
the sweep's hour-scale rules read. So a heartbeat whose status and task equal
what the registry row already holds is answered at once and its time is kept
here; the stamps are written first thing in the next transaction the hub
opens (so every read the hub serves sees them) and at most `flush_after`
seconds later on a timer. A hub killed with -9 can lose that much of
`last_seen`, never a status. A heartbeat that changes anything (a new status,
task or declared interval), or that comes while a batch is open, is committed
before its reply like any write. A heartbeat that restates its declared
interval is steady too: a harness may declare it on every beat.
Consul handles check-status updates the same way ("check_update_interval":
output in a steady state is synced on an interval, a status change at once).

Invariant: stamps wait only while no transaction is open, because the
steady path is taken only then and every transaction starts with `flush`.
"""

from __future__ import annotations

import asyncio
from typing import Callable

import apsw

from agorad.runtime.log import log
from agorad.store.connection import Database



class Liveness:
    def __init__(self, flush_after: float, open_transaction: Callable[[], None]):
        self.flush_after = flush_after
        self._open_transaction = open_transaction  # starts a transaction, which flushes first
        self._steady: dict[int, tuple[str, str | None]] = {}  # agent pk -> (status, task) its row holds
        # agent pk -> (the interval it declared, {interval, interval_source} in effect), as its row holds them
        self._intervals: dict[int, tuple[float, dict]] = {}
        self._pending: dict[int, float] = {}  # agent pk -> last_seen not yet written
        self._writing: dict[int, float] = {}  # stamps written into the open transaction, until it settles
        self._timer: asyncio.TimerHandle | None = None

    @property
    def enabled(self) -> bool:
        return self.flush_after > 0

    def stamp(self, agent_pk: int, status: str, task: str | None, now: float, interval: float | None = None) -> bool:
        """Keep `now` as the agent's last_seen if the heartbeat changes nothing else; say whether it did.
        `interval`: the interval the heartbeat declares, None if it declares none."""
        if self._steady.get(agent_pk) != (status, task):  # empty while disabled: learn and close see to it
            return False
        if interval is not None and self._intervals.get(agent_pk, (None,))[0] != interval:
            return False
        self._pending[agent_pk] = now
        self._arm()
        return True

    def learn(self, agent_pk: int, status: str, task: str | None) -> None:
        """The agent's row now holds (status, task) and is not expired; its next like heartbeat is steady."""
        if self.enabled:
            self._steady[agent_pk] = (status, task)

    def learn_interval(self, agent_pk: int, declared: float, in_effect: dict) -> None:
        """The agent's row now holds `declared` as its declaration, and `in_effect` ({interval,
        interval_source}) as its effective interval; a heartbeat restating `declared` may be steady."""
        if self.enabled:
            self._intervals[agent_pk] = (declared, in_effect)

    def interval_of(self, agent_pk: int) -> dict:
        """{interval, interval_source} as learned; only for an agent `stamp` just accepted a declaration from."""
        return dict(self._intervals[agent_pk][1])

    def forget(self, agent_pk: int) -> None:
        """The agent is removed or changed by the operator (pks are never reused; this only drops its entries)."""
        self._steady.pop(agent_pk, None)
        self._intervals.pop(agent_pk, None)

    def forget_all(self) -> None:
        """A registry change other than a heartbeat: nothing is known to be steady."""
        self._steady.clear()
        self._intervals.clear()

    def flush(self, db: Database) -> None:
        """Write the waiting stamps into the open transaction (an agent removed since is skipped by the WHERE).
        They are kept until `settled` says whether that transaction committed."""
        if self._pending:
            db.step_many("UPDATE agents SET last_seen = ? WHERE pk = ?",
                         [(seen, pk) for pk, seen in self._pending.items()])
            for pk, seen in self._pending.items():
                self._writing[pk] = seen
            self._pending.clear()

    def settled(self, stored: bool) -> None:
        """The transaction the stamps went into committed, or was lost: then what was learned in it
        is forgotten and its stamps wait again for the next one."""
        writing, self._writing = self._writing, {}
        if stored:
            return
        self.forget_all()
        for pk, seen in writing.items():
            if self._pending.get(pk, seen) <= seen:
                self._pending[pk] = seen
        if self._pending:
            self._arm()

    def close(self) -> None:
        """The hub is stopping: from now on every heartbeat takes the transaction path."""
        self.flush_after = 0.0
        self.forget_all()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self) -> None:
        if self._timer is None and self.enabled:
            self._timer = asyncio.get_running_loop().call_later(self.flush_after, self._due)

    def _due(self) -> None:
        self._timer = None
        if not self._pending:
            return
        try:
            self._open_transaction()
        except apsw.Error as exc:  # the database is busy or failing: keep the stamps, try again later
            log("liveness-flush-failed", error=type(exc).__name__, detail=str(exc)[:200])
            self._arm()
