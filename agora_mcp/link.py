"""The server's connection for tool calls: said hello as the seat, renewed after a hub restart.

A hub that is down is an Unavailable error per call, never a crash.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from agorad.surface import keys
from agorad.surface.errors import AgoraError, NotFound, Unavailable
from agorad.surface.paths import Home
from agora_mcp.connection import Connection

# Methods that change nothing, or whose repeat changes nothing more (an ack, a heartbeat, a charter
# marked read): after a connection dies mid-call they are sent again on a fresh one. A send is not: the
# hub may have stored it before it died, and a repeat would post it twice; its error says the outcome
# is unknown instead (agora_mcp.fixes).
REPEATABLE = frozenset({"hub.hello", "agents.resolve", "inbox.check", "inbox.digest", "owed.list",
                        "messages.read", "agents.list", "inbox.ack", "agents.heartbeat", "charters.get",
                        "claims.list", "claims.show"})


class NoKey(AgoraError):
    """The seat has no key here."""

    reason = "no-key"


class NoSeat(NotFound):
    """The seat this server acts as is not registered on its hub (its own case of not-found: the fix registers it)."""


@dataclass(frozen=True)
class Seat:
    agent: str
    home: Home
    url: str | None = None  # the hub's remote port when it runs on another host (the home's hub.url)

    @property
    def hub(self) -> str:
        """Where the seat's hub answers: its remote port, or its socket under the home."""
        return self.url or str(self.home.socket)


class HubLink:
    def __init__(self, seat: Seat):
        self.seat = seat
        self.hello: dict = {}  # the last hub.hello result: the seat's id (after a rename), mode, hub version
        self._connection: Connection | None = None
        self._lock = asyncio.Lock()  # replies come in order: one call in flight at a time

    async def call(self, method: str, **params):
        async with self._lock:
            if self._connection is not None and self._connection.closed:  # the hub restarted since the last call
                self.close()
            fresh = self._connection is None
            try:
                return await (await self._connected()).call(method, **params)
            except Unavailable as exc:
                self.close()
                # A hub that did not answer in time would most likely keep a second try waiting as long, past
                # the harness's own limit on a tool call: only a lost connection is worth one more try.
                if fresh or method not in REPEATABLE or exc.data.get("unresponsive"):
                    raise
                return await (await self._connected()).call(method, **params)  # once more, on a new connection

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    async def _connected(self) -> Connection:
        if self._connection is None:
            self._connection, self.hello = await connect_as(self.seat)
        return self._connection


async def connect_as(seat: Seat) -> tuple[Connection, dict]:
    """A new connection acting as the seat, and its hub.hello result; the key from $AGORA_KEY or
    <home>/keys/<id>.key, never from argv."""
    connection = await Connection.open(seat.home, seat.url)
    try:
        agent = seat.agent
        key = keys.read_key(seat.home, agent)
        if key is None and seat.url is None:  # a renamed seat's key file moved with it: ask where the old id points
            # (not on a remote port, where nothing but hub.hello may come first)
            agent = (await connection.call("agents.resolve", agent=agent))["agent"]
            key = keys.read_key(seat.home, agent)
        if key is None:
            trouble = keys.key_file_trouble(seat.home, agent)  # the renamed seat's, if it was asked for
            raise NoKey(f"no key for {seat.agent}" + (f": its key file {trouble}" if trouble else ""),
                        key_file=str(seat.home.key_file(agent)))
        hello = await connection.call("hub.hello", agent=seat.agent, key=key)
    except NotFound as exc:  # hub.hello, or agents.resolve, knows no such agent: the seat itself is missing
        connection.close()
        raise NoSeat(f"the seat {seat.agent} is not registered on the hub at {seat.hub} ({exc.message})",
                     **exc.data) from None
    except BaseException:
        connection.close()
        raise
    return connection, hello
