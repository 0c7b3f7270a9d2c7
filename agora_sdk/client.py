"""`Client`: the blocking SDK client, over a hub's Unix socket or a ws/wss URL.

The Unix socket is agorad.surface.client's connection, unchanged; a URL goes through
`websockets.sync.client`, imported only when a URL is used.
"""

from __future__ import annotations

import collections
import inspect
import time

from agora_sdk.inbox import Inbox
from agora_sdk.methods import Methods
from agora_sdk.target import Target
from agorad.surface import client as unix
from agorad.surface.errors import InvalidRequest, Unavailable, from_wire
from agorad.surface.protocol import MAX_FRAME, encode_text_of


class Client(Methods):
    """One connection to a hub, acting as `agent` when one is named (its key from `key`, $AGORA_KEY
    or the home's key file), else as the local operator (Unix socket only).

        with Client("reviewer") as hub:
            hub.messages.send(target="commons", title="hi")
            hub.inbox.subscribe()
            for push in hub.notifications(timeout=5): ...

    Not thread-safe: use one Client per thread.
    """

    _nouns = {"inbox": Inbox}

    def __init__(self, agent: str | None = None, *, key: str | None = None, home=None, url: str | None = None,
                 timeout: float | None = 30.0, interval: float | str | None = None):
        self.target = Target(agent, key=key, home=home, url=url, interval=interval)
        self.timeout = timeout
        self._conn = None

    @property
    def agent(self) -> str | None:
        return self.target.agent

    def connect(self) -> "Client":
        self.close()
        if self.target.url is None:
            self._conn = unix.Client(self.target.home, timeout=self.timeout).connect()
        else:
            self._conn = _WebSocket(self.target.url, self.timeout).connect()
        if self.target.agent is not None:
            try:
                self._conn.call("hub.hello", **self.target.hello_params())
            except BaseException:
                self.close()
                raise
        return self

    def close(self) -> None:
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
        return self._conn.call(method, **params)

    def next_notification(self, timeout: float | None = None) -> dict | None:
        """The next push (after `inbox.subscribe`), or None when none came within `timeout` seconds."""
        if self._conn is None:
            raise Unavailable(f"the connection to {self.target.where} is closed; connect and subscribe again")
        return self._conn.next_notification(timeout)

    def notifications(self, timeout: float | None = None):
        """Each push as it comes, until none comes within `timeout` (None: until the connection ends,
        which raises Unavailable)."""
        while True:
            push = self.next_notification(timeout)
            if push is None:
                return
            yield push


class _WebSocket:
    """The remote wire, blocking: one JSON-RPC frame per text message (agora-rpc(7))."""

    def __init__(self, url: str, timeout: float | None):
        self.url = url
        self.timeout = timeout
        self._ws = None
        self._pushed: collections.deque[dict] = collections.deque()
        self._next_id = 0

    def connect(self) -> "_WebSocket":
        from websockets.sync.client import connect  # only a remote client pays for websockets

        # websockets 17 deprecates a connect() used without `with` unless it opts in with legacy=True,
        # which 15 and 16 do not know.
        legacy = {"legacy": True} if "legacy" in inspect.signature(connect).parameters else {}
        try:
            self._ws = connect(self.url, open_timeout=self.timeout, max_size=MAX_FRAME, compression=None, **legacy)
        except (OSError, TimeoutError) as exc:
            raise Unavailable(f"no hub is answering at {self.url}: {exc}") from None
        except Exception as exc:  # websockets' handshake errors (InvalidURI, InvalidHandshake, ...)
            raise Unavailable(f"connecting to {self.url}: {exc}") from None
        return self

    def close(self) -> None:
        if self._ws is not None:
            self._ws.close()
            self._ws = None

    def call(self, method: str, **params):
        self._next_id += 1
        request_id = self._next_id
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}, method)
        while True:
            message = self._receive(self.timeout, method)
            if message is None:
                raise Unavailable(f"the hub at {self.url} did not answer {method} within {self.timeout}s")
            if "id" not in message:
                self._pushed.append(message)
            elif "error" in message:
                raise from_wire(message["error"])
            elif message["id"] == request_id:
                return message["result"]

    def next_notification(self, timeout: float | None = None) -> dict | None:
        if self._pushed:
            return self._pushed.popleft()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            message = self._receive(wait, "waiting for pushes")
            if message is None:
                return None
            if "id" not in message:
                return message

    def _send(self, frame: dict, what: str) -> None:
        if self._ws is None:
            raise Unavailable(f"the connection to {self.url} is closed")
        try:
            self._ws.send(encode_text_of(frame))
        except Exception as exc:  # ConnectionClosed and OSError alike: the hub is gone
            self.close()
            raise Unavailable(f"the hub at {self.url} went away during {what}: {exc}") from None

    def _receive(self, timeout: float | None, what: str) -> dict | None:
        if self._ws is None:
            raise Unavailable(f"the connection to {self.url} is closed")
        try:
            text = self._ws.recv(timeout=timeout)
        except TimeoutError:
            return None
        except Exception as exc:
            self.close()
            raise Unavailable(f"the hub at {self.url} closed the connection ({what}): {exc}") from None
        if isinstance(text, bytes):
            self.close()
            raise refuse_binary(self.url)
        return decode_frame(text, self.url, self.close)


def refuse_binary(where: str):
    return InvalidRequest(f"the hub at {where} sent a binary message; the wire carries text frames")


def decode_frame(text, where: str, close) -> dict:
    """One frame from the hub as a dict; a frame that is not a JSON object closes the connection."""
    import json

    try:
        message = json.loads(text)
    except ValueError:
        message = None
    if not isinstance(message, dict):
        close()
        raise Unavailable(f"the hub at {where} sent a frame that is not a JSON object")
    return message
