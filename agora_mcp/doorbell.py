"""Deliveries pushed to the seat, held until wait_for_messages hands them out.

A thread owns a second connection, subscribed with `inbox.subscribe`, and
blocks on its pushes (no polling: an idle server sleeps in recv). Each push
is handed to the event loop, where a waiting tool call wakes at once. When
the hub goes away the thread connects again, and then reads what was
delivered meanwhile from the seat's notify file (delivery ids count up per
seat without gaps, so the last id seen says exactly what was missed): a wait
in flight sees those deliveries as if pushed, and its deadline never moves.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time

from agorad.surface import settings
from agorad.surface.errors import AgoraError
from agorad.surface.notifyfile import last_id_in
from agorad.surface.paths import notify_file
from agorad.surface.vocab import IMPORTANT_FLAGS, NEXT_TURN_FLAG
from agora_mcp.link import Seat, connect_as


def important(delivery: dict) -> bool:
    """What wakes a wait: the deliveries `agora listen --important-only` rings for (a next_turn one never)."""
    flags = delivery.get("flags") or ()
    return NEXT_TURN_FLAG not in flags and bool(IMPORTANT_FLAGS.intersection(flags))


class Doorbell:
    def __init__(self, seat: Seat, loop: asyncio.AbstractEventLoop):
        self.seat = seat
        self.state: AgoraError | None = None  # why the waiting connection is down, None while it is up
        self.connected = asyncio.Event()  # set while subscribed (tests and the bench wait on it)
        self._loop = loop
        self._pending: list[dict] = []  # important deliveries not yet handed out (loop thread only)
        self._rung = asyncio.Event()
        self._seen: int | None = None  # the newest delivery id taken (pump thread only); None before the first connection
        self._thread = threading.Thread(target=self._pump, name="agora-mcp-doorbell", daemon=True)
        self._thread.start()

    async def wait(self, timeout: float) -> list[dict]:
        """The important deliveries since the last wait returned; waits up to `timeout` seconds for one."""
        if not self._pending:
            self._rung.clear()
            try:
                await asyncio.wait_for(self._rung.wait(), timeout)
            except asyncio.TimeoutError:
                pass
        taken, self._pending = self._pending, []
        return taken

    def _pump(self) -> None:
        while True:
            try:
                self._session()
            except AgoraError as exc:
                self._loop.call_soon_threadsafe(self._down, exc)
            except Exception as exc:  # a bug here must not silence the doorbell for the rest of the session
                self._loop.call_soon_threadsafe(self._down, AgoraError(f"waiting connection failed: {exc!r}"))
            time.sleep(settings.MCP_RECONNECT_EVERY)  # the hub is down or went away: try again shortly

    def _session(self) -> None:
        """One subscribed connection, until it ends."""
        client, hello = connect_as(self.seat, timeout=None)
        try:
            path = notify_file(hello["notify_dir"], hello["agent"]) if hello.get("notify_dir") else None
            if self._seen is None:  # the first connection: what is already there is check_inbox's business
                self._seen = (last_id_in(path) if path else None) or 0
            client.call("inbox.subscribe")
            self._catch_up(path)  # what landed since: while the hub restarted, or before the subscribe
            self._loop.call_soon_threadsafe(self._up)
            for push in client.notifications():
                self._take(push.get("params") or {})
        finally:
            client.close()

    def _catch_up(self, path) -> None:
        """Take what the notify file holds beyond the newest delivery seen. Read whole: it rotates at a
        few MiB, and this runs once per connection."""
        if path is None:
            return
        try:
            lines = path.read_bytes().splitlines()
        except OSError:
            return
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
            self._loop.call_soon_threadsafe(self._arrive, delivery)

    def _arrive(self, delivery: dict) -> None:
        self._pending.append(delivery)
        self._rung.set()

    def _up(self) -> None:
        self.state = None
        self.connected.set()

    def _down(self, exc: AgoraError) -> None:
        self.state = exc
        self.connected.clear()
