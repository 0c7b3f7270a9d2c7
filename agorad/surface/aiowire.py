"""The hub's wire on asyncio, as a stream of frames: its Unix socket or its remote port.

Two asyncio clients speak the hub's protocol on their own event loop: the SDK's
`AsyncClient` and `agora mcp`'s connection. Under both lies the same stream:

- `UnixStream`: the hub's Unix socket, a frame a line;
- `WebSocketStream`: the remote port of a hub on another host (a home's hub.url,
  or a URL given), a frame a WebSocket text message, opened with the blocking
  remote client's options (`wsclient.connect_options`).

`open_stream(socket, url)` opens the one a client names. A frame goes out as
the encoder's bytes (ending in a newline) and comes back the same way (`decode`
makes it a message); `b""` means the hub ended the connection. A reply may be longer than a request may
be (`protocol.MAX_REPLY`). `websockets` loads only for a URL, so a client of a
local hub never pays for it.
"""

from __future__ import annotations

import asyncio
import json

from agorad.surface.errors import InvalidParams, Unavailable
from agorad.surface.peercred import foreign_hub_message, foreign_owner
from agorad.surface.protocol import MAX_FRAME, MAX_REPLY, REPLY_TOO_LARGE


def decode(frame: bytes, where: str) -> dict:
    """One frame from the hub at `where` as a dict; Unavailable for one that is not a JSON object (the
    caller ends the connection: the stream is out of step)."""
    try:
        message = json.loads(frame)
    except (ValueError, RecursionError):  # RecursionError: nested past the parser's depth
        message = None
    if not isinstance(message, dict):
        raise Unavailable(f"the hub at {where} sent a frame that is not a JSON object")
    return message


async def open_stream(socket: str, url: str | None = None):
    """The stream to the hub at `url`, else to the Unix socket at `socket`."""
    return await (UnixStream.open(socket) if url is None else WebSocketStream.open(url))


class UnixStream:
    """The hub's Unix socket as a stream of frames."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, where: str):
        self._reader, self._writer, self.where = reader, writer, where

    @classmethod
    async def open(cls, path: str) -> "UnixStream":
        try:
            reader, writer = await asyncio.open_unix_connection(path, limit=MAX_REPLY)
        except (FileNotFoundError, ConnectionRefusedError):
            home = path.rpartition("/")[0] or "."
            raise Unavailable(f"no hub is answering on {path}; start one with `agora up --home {home}`") from None
        except OSError as exc:
            raise Unavailable(f"connecting to {path}: {exc.strerror or exc}") from None
        owner = foreign_owner(writer.get_extra_info("socket"))
        if owner is not None:
            writer.close()
            raise Unavailable(foreign_hub_message(path, owner))
        return cls(reader, writer, path)

    def send(self, frame: bytes) -> None:
        if self._writer.is_closing():
            raise Unavailable(f"the hub at {self.where} went away")
        self._writer.write(frame)

    async def receive(self) -> bytes:
        """The next frame, ending in a newline; anything else means the hub ended the connection."""
        try:
            return await self._reader.readline()
        except (asyncio.LimitOverrunError, ValueError):
            raise Unavailable(f"the hub at {self.where} sent {REPLY_TOO_LARGE}") from None
        except ConnectionResetError:
            return b""

    @property
    def closed(self) -> bool:
        return self._reader.at_eof() or self._writer.is_closing()

    def close(self) -> None:
        self._writer.close()

    async def wait_closed(self) -> None:
        try:
            await self._writer.wait_closed()
        except OSError:
            pass


class WebSocketStream:
    """The hub's remote port as a stream of frames (agora-rpc(7) "Remote port")."""

    def __init__(self, ws, where: str):
        self._ws, self.where = ws, where
        self._sending: set[asyncio.Task] = set()  # sends in flight, held so that each runs to its end
        self._closing: asyncio.Future | None = None  # the closing handshake, which runs on its own

    @classmethod
    async def open(cls, url: str) -> "WebSocketStream":
        from websockets.asyncio.client import connect
        from websockets.exceptions import InvalidURI

        from agorad.surface.wsclient import check_url, connect_options, opening_failed

        try:
            ws = await connect(check_url(url), **connect_options())
        except InvalidURI as exc:
            raise InvalidParams(f"{url!r} is not a hub URL: {exc}", field="url") from None
        except Exception as exc:  # OSError, TimeoutError, and websockets' handshake errors
            raise opening_failed(url, exc) from None
        return cls(ws, url)

    def send(self, frame: bytes) -> None:
        """Queue the frame (its newline dropped) as one text message. Messages go out in the order sent;
        a send that fails needs no answer here: the reader sees the connection end and fails every call."""
        task = asyncio.get_running_loop().create_task(self._send(frame[:-1].decode()))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _send(self, text: str) -> None:
        try:
            await self._ws.send(text)
        except Exception:  # the connection is gone; see send()
            pass

    async def receive(self) -> bytes:
        """The next message as a frame ending in a newline; b"" once the connection has closed."""
        from websockets.exceptions import ConnectionClosed

        from agorad.surface.wsclient import refused_a_reply

        try:
            message = await self._ws.recv()
        except ConnectionClosed as closed:
            if refused_a_reply(closed):
                raise Unavailable(f"the hub at {self.where} sent {REPLY_TOO_LARGE}") from None
            if closed.rcvd is not None and closed.rcvd.code == 1009:
                raise Unavailable(f"the hub at {self.where} closed the connection (1009: a request past its limit "
                                  f"of {MAX_FRAME} bytes)") from None
            return b""
        if isinstance(message, bytes):
            raise Unavailable(f"the hub at {self.where} sent a binary message; the wire carries text frames")
        return message.encode() + b"\n"

    @property
    def closed(self) -> bool:
        from websockets.protocol import State

        return self._ws.state is not State.OPEN

    def close(self) -> None:
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._ws.close())

    async def wait_closed(self) -> None:
        self.close()
        await self._closing
