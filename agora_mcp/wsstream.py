"""The hub's remote port as agora_mcp's stream of frames: one WebSocket message a frame.

For a seat whose home names a hub on another host (its hub.url, `agora setup --url`):
the same requests, replies and pushes as on the hub's Unix socket, opened with the
options of the blocking remote client (agorad/surface/wsclient.py). `websockets` loads
only here, so a server on a local hub never pays for it.
"""

from __future__ import annotations

from agorad.surface.errors import InvalidParams, Unavailable
from agorad.surface.wsclient import check_url, connect_options


class WebSocketStream:
    def __init__(self, ws):
        self._ws = ws
        self._closing = None  # the closing handshake's task, held so that it runs to its end

    @classmethod
    async def open(cls, url: str) -> "WebSocketStream":
        from websockets.asyncio.client import connect
        from websockets.exceptions import InvalidHandshake, InvalidURI

        try:
            ws = await connect(check_url(url), **connect_options())
        except InvalidURI as exc:
            raise InvalidParams(f"{url!r} is not a hub URL: {exc}", field="url") from None
        except (OSError, InvalidHandshake, TimeoutError) as exc:
            raise Unavailable(f"no hub is answering at {url}: {exc}") from None  # the tool error's fix says more
        return cls(ws)

    async def send(self, frame: bytes) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            await self._ws.send(frame[:-1].decode())  # the frame without its newline: one text message
        except ConnectionClosed as exc:
            raise ConnectionResetError(str(exc)) from None

    async def receive(self) -> bytes:
        """The next message as a frame ending in a newline; b"" once the connection has closed."""
        from websockets.exceptions import ConnectionClosed

        try:
            return bytes(await self._ws.recv(decode=False)) + b"\n"
        except ConnectionClosed:
            return b""

    @property
    def closed(self) -> bool:
        from websockets.protocol import State

        return self._ws.state is not State.OPEN

    def close(self) -> None:
        import asyncio

        if self._closing is None:  # the closing handshake runs on its own; nothing waits for it
            self._closing = asyncio.ensure_future(self._ws.close())
