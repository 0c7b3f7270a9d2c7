"""The server's connection for tool calls: one Client, said hello as the seat, renewed after a hub restart.

Blocking (the surface client is); tools run its calls in a worker thread.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from agorad.surface import keys
from agorad.surface.client import Client
from agorad.surface.errors import AgoraError, Unavailable
from agorad.surface.paths import Home

# Methods that change nothing, or whose repeat changes nothing more (an ack, a heartbeat): after a
# connection dies mid-call they are sent again on a fresh one. A send is not: the hub may have
# stored it before it died, and a repeat would post it twice.
REPEATABLE = frozenset({"hub.hello", "inbox.check", "inbox.digest", "owed.list", "messages.read",
                        "agents.list", "inbox.ack", "agents.heartbeat"})


class NoKey(AgoraError):
    """The seat has no key here."""

    reason = "no-key"


@dataclass(frozen=True)
class Seat:
    agent: str
    home: Home


class HubLink:
    """Calls as the seat. A hub that is down is an Unavailable error per call, never a crash."""

    def __init__(self, seat: Seat):
        self.seat = seat
        self.hello: dict = {}  # the last hub.hello result: the seat's id (after a rename), mode, hub version
        self._client: Client | None = None
        self._lock = threading.Lock()  # one Client, one caller at a time

    def call(self, method: str, **params):
        with self._lock:
            if self._client is not None and self._client.stale():  # the hub restarted since the last call
                self.close()
            fresh = self._client is None
            try:
                return self._connected().call(method, **params)
            except Unavailable:
                self.close()
                if fresh or method not in REPEATABLE:
                    raise
                return self._connected().call(method, **params)  # the old connection died: once more on a new one

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _connected(self) -> Client:
        if self._client is None:
            self._client, self.hello = connect_as(self.seat)
        return self._client


def connect_as(seat: Seat, timeout: float | None = 30.0) -> tuple[Client, dict]:
    """A new connection acting as the seat, and its hub.hello result; the key from $AGORA_KEY or
    <home>/keys/<id>.key, never from argv."""
    client = Client(seat.home, timeout=timeout).connect()
    try:
        agent = seat.agent
        key = keys.read_key(seat.home, agent)
        if key is None:  # a renamed seat's key file moved with it: ask where the old id points
            agent = client.call("agents.resolve", agent=agent)["agent"]
            key = keys.read_key(seat.home, agent)
        if key is None:
            raise NoKey(f"no key for {seat.agent}", key_file=str(seat.home.key_file(seat.agent)))
        hello = client.hello(seat.agent, key)
    except BaseException:
        client.close()
        raise
    return client, hello
