"""One asyncio connection to the hub: the surface client's protocol on the server's own event loop.

The surface client (agorad.surface.client) blocks, so a server using it pays a
worker thread per tool call: measured 0.28 ms of hand-off on a 0.44 ms hub
call, which put check_inbox past its goal of 1.5x a no-op tool. The protocol
is small (one JSON frame per request, replies in order, pushes without an id),
so the server speaks it here; errors are the surface's (from_wire), frames its encoder's.

Under it is a stream of frames: the hub's Unix socket (a frame is a line), or
for a seat whose home names a hub on another host (its hub.url) that hub's
remote port (a frame is a WebSocket message; agora_mcp/wsstream.py).
"""

from __future__ import annotations

import asyncio
import collections
import json

from agorad.surface.errors import Unavailable, from_wire
from agorad.surface.paths import Home
from agorad.surface.protocol import MAX_REPLY, encode

CALL_TIMEOUT = 30.0  # as the surface client's: a hub that answers nothing is treated as gone


class UnixStream:
    """The hub's Unix socket as a stream of frames."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self._reader, self._writer = reader, writer

    @classmethod
    async def open(cls, home: Home) -> "UnixStream":
        path = str(home.socket)
        try:
            reader, writer = await asyncio.open_unix_connection(path, limit=MAX_REPLY)
        except (FileNotFoundError, ConnectionRefusedError):
            raise Unavailable(f"no hub is answering on {path}; start one with `agora up --home {home.root}`") from None
        except OSError as exc:
            raise Unavailable(f"connecting to {path}: {exc.strerror or exc}") from None
        return cls(reader, writer)

    async def send(self, frame: bytes) -> None:
        self._writer.write(frame)

    async def receive(self) -> bytes:
        """The next frame, ending in a newline; anything else means the hub ended the connection."""
        try:
            return await self._reader.readline()
        except (asyncio.LimitOverrunError, ValueError):
            return b""

    @property
    def closed(self) -> bool:
        return self._reader.at_eof() or self._writer.is_closing()

    def close(self) -> None:
        self._writer.close()


class Connection:
    def __init__(self, where: str, stream):
        self.where = where  # the hub's socket path or URL, for messages
        self._stream = stream
        self._pushed: collections.deque[dict] = collections.deque()  # pushes read while awaiting a reply
        self._next_id = 0

    @classmethod
    async def open(cls, home: Home, url: str | None = None) -> "Connection":
        """A connection to the hub under `home`, or to the remote port at `url`."""
        if url is None:
            return cls(str(home.socket), await UnixStream.open(home))
        from agora_mcp.wsstream import WebSocketStream

        return cls(url, await WebSocketStream.open(url))

    @property
    def closed(self) -> bool:
        """Whether the hub has ended this connection (the loop reads its end as soon as it comes)."""
        return self._stream.closed

    def close(self) -> None:
        self._stream.close()

    async def call(self, method: str, **params):
        """Send one request and return its result; raise the AgoraError the hub answered with."""
        self._next_id += 1
        request_id = self._next_id
        try:
            await self._stream.send(encode({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}))
            return await asyncio.wait_for(self._reply(request_id), CALL_TIMEOUT)
        except (ConnectionError, asyncio.TimeoutError) as exc:
            self.close()
            raise Unavailable(f"the hub at {self.where} went away during {method}: {exc!r}") from None

    async def next_push(self) -> dict:
        """The next push notification (after inbox.subscribe); waits as long as it takes."""
        if self._pushed:
            return self._pushed.popleft()
        while True:
            message = await self._message()
            if "id" not in message:
                return message

    async def _reply(self, request_id: int):
        while True:
            message = await self._message()
            if "id" not in message:
                self._pushed.append(message)
            elif message["id"] not in (request_id, None):
                continue  # the reply to a call that was cancelled while it waited: nobody's now
            elif "error" in message:
                raise from_wire(message["error"])
            else:
                return message["result"]

    async def _message(self) -> dict:
        frame = await self._stream.receive()
        if not frame.endswith(b"\n"):  # the end, or the hub died in the middle of a frame
            self.close()
            raise Unavailable(f"the hub at {self.where} closed the connection")
        try:
            message = json.loads(frame)
        except ValueError:
            message = None
        if not isinstance(message, dict):
            self.close()
            raise Unavailable(f"the hub at {self.where} sent a frame that is not a JSON object")
        return message
