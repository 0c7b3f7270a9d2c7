"""Deliveries pushed to the seat, held until wait_for_messages hands them out.

A task keeps a second connection subscribed with `inbox.subscribe` and waits
on its pushes (no polling: an idle server sleeps in the event loop). A waiting
tool call wakes on the first important one. When the hub goes away the task
connects again and subscribes `after` the newest delivery id it has seen: the
hub pushes what was delivered meanwhile first (delivery ids count up per seat,
so that id says exactly what was missed), on the Unix socket and on the remote
port alike. A wait in flight sees those deliveries as if pushed, and its
deadline never moves.
"""

from __future__ import annotations

import asyncio

from agorad.surface import settings
from agorad.surface.errors import SEAT_REFUSALS, AgoraError
from agorad.surface.vocab import IMPORTANT_FLAGS, NEXT_TURN_FLAG
from agora_mcp.link import Seat, connect_as


def important(delivery: dict) -> bool:
    """What wakes a wait: the deliveries `agora listen --important-only` rings for (a next_turn one never)."""
    flags = delivery.get("flags") or ()
    return NEXT_TURN_FLAG not in flags and bool(IMPORTANT_FLAGS.intersection(flags))


class Doorbell:
    def __init__(self, seat: Seat):
        self.seat = seat
        self.state: AgoraError | None = None  # why the waiting connection is down; None while up or connecting
        self.up = False
        self.waiting = 0  # wait_for_messages calls in flight (whoami shows it)
        self._pending: list[dict] = []  # important deliveries not yet handed out, the oldest MCP_WAIT_SHOWN
        self._beyond = 0  # ... and how many more came (kept as a count: a session that never waits holds no more)
        self.beyond_taken = 0  # how many the last wait that returned counted beyond those it handed out
        self._rung = asyncio.Event()
        self._generation = 0  # counts waits: only the newest may take deliveries
        self._seen: int | None = None  # the newest delivery id taken; None before the first connection
        self.restarted = False  # the hub's ids started again lower (a restored database) since the last wait
        self._task = asyncio.get_running_loop().create_task(self._ring_forever())

    def close(self) -> None:
        self._task.cancel()

    async def wait(self, timeout: float) -> list[dict] | None:
        """The important deliveries since the last wait returned (the oldest MCP_WAIT_SHOWN of them; `beyond_taken`
        then counts the rest); waits up to `timeout` seconds for one.

        A new wait supersedes one still in flight, which returns None without taking anything: a
        harness waits one call at a time, so an older wait is one it gave up on (its client timed
        out or cancelled, perhaps without telling us), and whatever it took would reach nobody.
        """
        self._generation += 1
        mine = self._generation
        self._rung.set()  # wake the superseded wait, if any, so it steps aside at once
        self.waiting += 1
        try:
            return await self._wait(mine, timeout)
        finally:
            self.waiting -= 1

    async def _wait(self, mine: int, timeout: float) -> list[dict] | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not self._pending and not self.restarted and self._generation == mine:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            self._rung.clear()
            try:
                await asyncio.wait_for(self._rung.wait(), remaining)
            except asyncio.TimeoutError:
                break
        if self._generation != mine:
            return None
        taken, self._pending = self._pending, []
        self.beyond_taken, self._beyond = self._beyond, 0  # read by the caller before it awaits anything
        return taken

    def take_restart(self) -> bool:
        """Whether the hub's ids started again lower since the last wait returned (and forget it)."""
        restarted, self.restarted = self.restarted, False
        return restarted

    async def _ring_forever(self) -> None:
        delay = settings.MCP_RECONNECT_FIRST
        while True:
            try:
                await self._session()
            except AgoraError as exc:
                self.state = exc
            except Exception as exc:  # never let one fault deafen the session (a bad proxy setting, a bug)
                self.state = AgoraError(f"the waiting connection failed: {exc!r}")
            if self.up:  # it was subscribed, so the hub just went away: the first retry comes soon again
                delay = settings.MCP_RECONNECT_FIRST
            self.up = False
            await asyncio.sleep(self._refused_wait(delay))
            delay = min(delay * 2, settings.MCP_RECONNECT_CAP)

    def _refused_wait(self, delay: float) -> float:
        """A remote port that refused the seat counts failed hellos per address (agora-rpc(7) "Remote"):
        trying again every few seconds would soon lock every seat of this host out, so a refused seat
        waits out the window first. Tool calls still try at once: the key may have been put right."""
        refused = isinstance(self.state, AgoraError) and self.state.reason in SEAT_REFUSALS
        return max(delay, settings.AUTH_WINDOW) if self.seat.url and refused else delay

    async def _session(self) -> None:
        """One subscribed connection, until it ends."""
        connection, _ = await connect_as(self.seat)
        try:
            if self._seen is None:  # the first connection: what is already there is check_inbox's business
                self._seen = (await connection.call("inbox.subscribe"))["newest"]
            else:  # what landed since (while the hub restarted, or the connection was down) comes first
                subscribed = await connection.call("inbox.subscribe", after=self._seen)
                if subscribed["newest"] < self._seen:  # a restored database counts from lower again: which of
                    self._seen = subscribed["newest"]  # its deliveries are new cannot be told, so the wait
                    self.restarted = True              # says so and sends the model to check_inbox
                    self._rung.set()
            self.state, self.up = None, True
            while True:
                self._take((await connection.next_push()).get("params") or {})
        finally:
            connection.close()

    def _take(self, delivery: dict) -> None:
        ident = delivery.get("id")
        if not isinstance(ident, int) or ident <= self._seen:
            return  # seen already: pushed live and again by the catch-up of a later subscribe
        self._seen = ident
        if important(delivery):
            if len(self._pending) < settings.MCP_WAIT_SHOWN:
                self._pending.append(delivery)
            else:
                self._beyond += 1
            self._rung.set()
