"""One asyncio connection to the hub: the surface client's protocol on the server's own event loop.

The surface client (agorad.surface.client) blocks, so a server using it pays a
worker thread per tool call: measured 0.28 ms of hand-off on a 0.44 ms hub
call, which put check_inbox past its goal of 1.5x a no-op tool. The protocol
is small (one JSON frame per request, replies in order, pushes without an id),
so the server speaks it here; errors are the surface's (from_wire), frames its encoder's.

Under it is the surface's stream of frames (agorad/surface/aiowire.py, as the
SDK's AsyncClient): the hub's Unix socket, or for a seat whose home names a hub
on another host (its hub.url) that hub's remote port.
"""

from __future__ import annotations

import asyncio
import collections

from agorad.surface.aiowire import decode, open_stream
from agorad.surface.errors import TooLarge, Unavailable, from_wire
from agorad.surface.paths import Home
from agorad.surface.protocol import MAX_FRAME, encode, encode_request

CALL_TIMEOUT = 30.0  # as the surface client's: a hub that answers nothing in this time is unresponsive


class Connection:
    def __init__(self, where: str, stream):
        self.where = where  # the hub's socket path or URL, for messages
        self._stream = stream
        self._pushed: collections.deque[dict] = collections.deque()  # pushes read while awaiting a reply
        self._next_id = 0

    @classmethod
    async def open(cls, home: Home, url: str | None = None) -> "Connection":
        """A connection to the hub under `home`, or to the remote port at `url`."""
        socket = str(home.socket)
        return cls(url or socket, await open_stream(socket, url))

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
            frame = encode_request(request_id, method, params)
        except TooLarge as exc:
            raise over_frame(params, exc) from None
        try:
            self._stream.send(frame)
        except ConnectionError as exc:
            self.close()
            raise Unavailable(f"the hub at {self.where} went away before {method}: {exc!r}") from None
        # Written: from here a lost connection or a missing reply leaves the outcome unknown, and the error
        # says which request was out (written=method), so a caller can tell a send that may have been stored.
        try:
            return await asyncio.wait_for(self._reply(request_id), CALL_TIMEOUT)
        except asyncio.TimeoutError:  # connected, so something listens there: hung, stopped (SIGSTOP) or swamped
            self.close()
            raise Unavailable(f"the hub at {self.where} did not answer {method} within {CALL_TIMEOUT:g} s",
                              unresponsive=True, written=method) from None
        except ConnectionError as exc:
            self.close()
            raise Unavailable(f"the hub at {self.where} went away during {method}: {exc!r}", written=method) from None
        except Unavailable as exc:  # it closed the connection, or sent what cannot be read
            raise Unavailable(f"{exc.message} during {method}", **{**exc.data, "written": method}) from None

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
            return decode(frame, self.where)
        except Unavailable:
            self.close()
            raise


def over_frame(params: dict, exc: TooLarge) -> TooLarge:
    """`encode_request`'s refusal of a request the hub would refuse by its size, naming the argument to
    shorten: sent, the hub answers "a frame is at most ..." and closes the connection, words about the
    wire naming no field, so a model could not tell which of its arguments to shorten. The largest one
    given is the one."""
    sizes = {name: len(encode({name: value})) for name, value in params.items()}  # as each crosses the wire
    field = max(sizes, key=sizes.get) if sizes else None
    named = f"{field} is {sizes[field]} bytes as sent: " if field else ""
    return TooLarge(f"{named}{exc.message}", field=field, limit=MAX_FRAME)
