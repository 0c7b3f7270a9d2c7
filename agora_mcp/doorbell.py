"""Deliveries pushed to the seat, held until wait_for_messages hands them out.

A task keeps a second connection subscribed with `inbox.subscribe` and waits
on its pushes (no polling: an idle server sleeps in the event loop). A waiting
tool call wakes on the first important one. When the hub goes away the task
connects again, then reads what was delivered meanwhile from the seat's
notify file (delivery ids count up per seat without gaps, so the newest id
seen says exactly what was missed): a wait in flight sees those deliveries as
if pushed, and its deadline never moves.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from agorad.surface import settings
from agorad.surface.errors import AgoraError
from agorad.surface.notifyfile import last_id_in
from agorad.surface.paths import notify_file, rotated
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
        self._pending: list[dict] = []  # important deliveries not yet handed out
        self._rung = asyncio.Event()
        self._generation = 0  # counts waits: only the newest may take deliveries
        self._seen: int | None = None  # the newest delivery id taken; None before the first connection
        self._task = asyncio.get_running_loop().create_task(self._ring_forever())

    def close(self) -> None:
        self._task.cancel()

    async def wait(self, timeout: float) -> list[dict] | None:
        """The important deliveries since the last wait returned; waits up to `timeout` seconds for one.

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
        while not self._pending and self._generation == mine:
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
        return taken

    async def _ring_forever(self) -> None:
        delay = settings.MCP_RECONNECT_FIRST
        while True:
            try:
                await self._session()
            except AgoraError as exc:
                self.state = exc
            except (OSError, ValueError, KeyError, TypeError) as exc:  # never let one fault deafen the session
                self.state = AgoraError(f"the waiting connection failed: {exc!r}")
            if self.up:  # it was subscribed, so the hub just went away: the first retry comes soon again
                delay = settings.MCP_RECONNECT_FIRST
            self.up = False
            await asyncio.sleep(delay)
            delay = min(delay * 2, settings.MCP_RECONNECT_CAP)

    async def _session(self) -> None:
        """One subscribed connection, until it ends."""
        connection, hello = await connect_as(self.seat)
        try:
            path = notify_file(hello["notify_dir"], hello["agent"]) if hello.get("notify_dir") else None
            if self._seen is None:  # the first connection: what is already there is check_inbox's business
                self._seen = (last_id_in(path) if path else None) or 0
            await connection.call("inbox.subscribe")
            self._catch_up(path)  # what landed since: while the hub restarted, or before the subscribe
            self.state, self.up = None, True
            while True:
                self._take((await connection.next_push()).get("params") or {})
        finally:
            connection.close()

    def _catch_up(self, path: Path | None) -> None:
        """Take what the notify file holds beyond the newest delivery seen, its rotated generation first (the
        gap may span a rotation). Read whole: a file rotates at a few MiB, and this runs once per connection."""
        if path is None:
            return
        for generation in (rotated(path), path):
            try:
                lines = generation.read_bytes().splitlines()
            except OSError:
                continue  # no rotated file yet, or none at all
            for line in lines:
                try:
                    delivery = json.loads(line)
                except ValueError:
                    continue  # a torn line: the hub writes it again whole
                if isinstance(delivery, dict):
                    self._take(delivery)

    def _take(self, delivery: dict) -> None:
        ident = delivery.get("id")
        if not isinstance(ident, int) or ident <= self._seen:
            return  # seen already: a replayed line, or a push the catch-up already took
        self._seen = ident
        if important(delivery):
            self._pending.append(delivery)
            self._rung.set()
