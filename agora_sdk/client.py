"""`Client`: the blocking SDK client, over a hub's Unix socket or a ws/wss URL.

The Unix socket is agorad.surface.client's connection, unchanged; a URL is the same client over
the remote port (agorad.surface.wsclient.RemoteClient), which loads websockets only then.
"""

from __future__ import annotations

from agora_sdk.agents import Agents
from agora_sdk.inbox import Inbox
from agora_sdk.methods import Methods
from agora_sdk.target import Target
from agorad.surface import client as unix
from agorad.surface.errors import AgoraError, Unauthorized, Unavailable


class Client(Methods):
    """One connection to a hub, acting as `agent` when one is named (its key from `key`, $AGORA_KEY
    or the home's key file), else as the local operator (Unix socket only).

        with Client("reviewer") as hub:
            hub.messages.send(target="commons", title="hi")
            hub.inbox.subscribe()
            for push in hub.notifications(timeout=5): ...

    Not thread-safe: use one Client per thread.
    """

    _nouns = {"inbox": Inbox, "agents": Agents}

    def __init__(self, agent: str | None = None, *, key: str | None = None, home=None, url: str | None = None,
                 timeout: float | None = 30.0, interval: float | str | None = None):
        self.target = Target(agent, key=key, home=home, url=url, interval=interval)
        self.timeout = timeout
        self._conn = None
        self._spent = None  # a connection dropped after a failed call, for the pushes it had read until then

    @property
    def agent(self) -> str | None:
        return self.target.agent

    def connect(self) -> "Client":
        self.close()
        if self.target.url is None:
            self._conn = unix.Client(self.target.home, timeout=self.timeout).connect()
        else:
            from agorad.surface.wsclient import RemoteClient  # only a remote client pays for websockets

            self._conn = RemoteClient(self.target.url, timeout=self.timeout).connect()
        if self.target.agent is not None:
            try:
                if self.target.lost_key_file():
                    self.target.follow(self._conn.call("agents.resolve", agent=self.agent)["agent"])
                self.target.follow(self._conn.call("hub.hello", **self.target.hello_params())["agent"])
            except AgoraError as exc:
                self.close()
                raise self.target.refused(exc) from None
            except BaseException:
                self.close()
                raise
        return self

    def close(self) -> None:
        self._spent = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> "Client":
        return self if self._conn is not None else self.connect()

    def __exit__(self, *exc) -> None:
        self.close()

    def call(self, method: str, **params):
        """Call one hub method; its result, or the AgoraError (with `.reason`) it answered with."""
        if self._conn is None:
            self.connect()
        try:
            return self._conn.call(method, **params)
        except (Unavailable, Unauthorized):
            # The connection is gone (a hub restart), or its identity with it (a rekey revokes the seat's
            # connections, saying so as `unauthorized`): drop it, so the next call connects and says hello again,
            # with the key read again. The surface client would reconnect by itself on its next call without a
            # hello: as the operator, where `Client("ID")` is the seat (a review found it so). The pushes it read
            # before are still given, first (next_notification).
            spent = self._conn
            self.close()
            self._spent = spent
            raise

    def next_notification(self, timeout: float | None = None) -> dict | None:
        """The next push (after `inbox.subscribe`), or None when none came within `timeout` seconds."""
        if self._spent is not None:
            try:
                return self._spent.next_notification(0)  # what it read before it was dropped, then Unavailable
            except Unavailable:
                self._spent = None
        if self._conn is None:
            raise Unavailable(f"the connection to {self.target.where} is closed; connect and subscribe again")
        try:
            return self._conn.next_notification(timeout)
        except (Unavailable, Unauthorized):
            self.close()  # as after a failed call: the next call connects and says hello, not the surface client
            raise

    def notifications(self, timeout: float | None = None):
        """Each push as it comes, until none comes within `timeout` (None: until the connection ends,
        which raises Unavailable)."""
        while True:
            push = self.next_notification(timeout)
            if push is None:
                return
            yield push

