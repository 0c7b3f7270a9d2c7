"""`AsyncClient`: the asyncio SDK client, over a hub's Unix socket or a ws/wss URL.

One reader task per connection sorts what arrives: a reply settles the call that awaits its id
(so calls may overlap), a push goes to the queue `next_notification` and `notifications()` read.
The stream of frames under it is the surface's (agorad/surface/aiowire.py), as agora mcp's.
"""

from __future__ import annotations

import asyncio
import os

from agora_sdk.agents import AsyncAgents
from agora_sdk.inbox import AsyncInbox
from agora_sdk.methods import Methods
from agora_sdk.target import Target
from agorad.surface.aiowire import decode, open_stream
from agorad.surface.errors import AgoraError, Unavailable, from_wire
from agorad.surface.filenames import SOCKET_NAME
from agorad.surface.protocol import encode_request

_WAKE = object()  # put on the push queue by interrupt(): a waiting reader returns None


class AsyncClient(Methods):
    """One connection to a hub, acting as `agent` when one is named (see Client).

        async with AsyncClient("reviewer") as hub:
            await hub.inbox.subscribe()
            async for push in hub.notifications():
                message = await hub.messages.read(ref=f"{push['params']['channel']}#{push['params']['seq']}")
    """

    _nouns = {"inbox": AsyncInbox, "agents": AsyncAgents}

    def __init__(self, agent: str | None = None, *, key: str | None = None, home=None, url: str | None = None,
                 timeout: float | None = 30.0, interval: float | str | None = None, reconnect: bool = True):
        self.target = Target(agent, key=key, home=home, url=url, interval=interval)
        self.timeout = timeout
        self.reconnect = reconnect  # False: a call after a loss raises it (AgentRunner connects again itself)
        self._wire = None
        self._reader: asyncio.Task | None = None
        self._pending: dict[int, asyncio.Future] = {}
        self._pushes: asyncio.Queue = asyncio.Queue()
        self._lost: AgoraError | None = None
        self._next_id = 0
        # One connection at a time: calls that find none wait for the one that connects (each connected, and the
        # second's overwrote the first's, whose hello was never answered). `_ready`: connected, hello answered.
        self._connecting = asyncio.Lock()
        self._ready = False

    @property
    def agent(self) -> str | None:
        return self.target.agent

    @property
    def lost(self) -> AgoraError | None:
        """Why the last connection ended (the hub's own word when it said one), None while connected."""
        return self._lost if self._wire is None else None

    async def connect(self) -> "AsyncClient":
        """Connect (again: a connection open now is closed first) and say hello as the agent, if one is named."""
        async with self._connecting:
            return await self._open(asyncio.Queue())  # what the last connection left (its end) is no news for it

    async def _open(self, pushes: asyncio.Queue) -> "AsyncClient":
        await self.close()
        socket = os.path.join(self.target.home.root_text, SOCKET_NAME) if self.target.url is None else ""
        self._wire = await open_stream(socket, self.target.url)
        self._lost = None
        self._pushes = pushes
        self._reader = asyncio.get_running_loop().create_task(self._read())
        if self.target.agent is not None:
            try:
                if self.target.lost_key_file():
                    resolved = await self._answer("agents.resolve", self.request("agents.resolve", agent=self.agent))
                    self.target.follow(resolved["agent"])
                said = await self._answer("hub.hello", self.request("hub.hello", **self.target.hello_params()))
                self.target.follow(said["agent"])
            except AgoraError as exc:
                await self.close()
                raise self.target.refused(exc) from None
            except BaseException:
                await self.close()
                raise
        self._ready = True
        return self

    async def close(self) -> None:
        self._ready = False
        if self._reader is not None:
            self._reader.cancel()
            self._reader = None
        if self._wire is not None:
            wire, self._wire = self._wire, None
            self._fail(Unavailable(f"the connection to {self.target.where} is closed"))  # before any await
            wire.close()
            await wire.wait_closed()

    async def __aenter__(self) -> "AsyncClient":
        return self if self._wire is not None else await self.connect()

    async def __aexit__(self, *exc) -> None:
        await self.close()

    def request(self, method: str, **params) -> asyncio.Future:
        """Send one request now; a future of its result. `call` awaits it; a caller that wants two
        requests in flight (a read and a heartbeat) sends both before awaiting either. A request the hub
        would refuse by its size raises TooLarge here, unsent: the hub would hang up on it (and on every call
        in flight beside it)."""
        if self._wire is None:
            raise self._lost or Unavailable(f"not connected to {self.target.where}; call connect() first")
        frame = encode_request(self._next_id + 1, method, params)
        self._next_id += 1
        future = asyncio.get_running_loop().create_future()
        self._pending[self._next_id] = future
        self._wire.send(frame)
        return future

    async def call(self, method: str, **params):
        """Call one hub method; its result, or the AgoraError (with `.reason`) it answered with. Without a
        connection (none yet, closed, or lost) it connects first, as Client does."""
        if not self._ready:
            if self._lost is not None and not self.reconnect:
                raise self._lost
            async with self._connecting:
                if not self._ready:  # no other call connected while this one waited
                    await self._open(self._pushes)
        return await self._answer(method, self.request(method, **params))

    async def _answer(self, method: str, future: asyncio.Future):
        """The result `future` settles with. A hub that does not answer within `timeout` is hung, stopped or
        swamped: the connection is given up, as Client does, and every call on it and the push reader learn
        so (one left open went on quietly, a runner's heartbeats ended, and its seat went dormant)."""
        try:
            return await asyncio.wait_for(future, self.timeout)
        except TimeoutError:
            lost = Unavailable(f"the hub at {self.target.where} did not answer {method} within {self.timeout:g} s",
                               unresponsive=True)
            self._fail(lost)
            await self.close()
            raise lost from None

    async def next_notification(self, timeout: float | None = None) -> dict | None:
        """The next push, or None when none came within `timeout` seconds (or `interrupt()` was called).
        A lost connection raises Unavailable once what had arrived is handed out, even when a call has
        connected again since (a new connection has no subscription: subscribe again)."""
        if self._pushes.empty() and self._wire is None:
            raise self._lost or Unavailable(f"not connected to {self.target.where}")
        try:
            push = await asyncio.wait_for(self._pushes.get(), timeout) if timeout is not None else await self._pushes.get()
        except TimeoutError:
            return None
        if push is _WAKE:
            return None
        if isinstance(push, AgoraError):
            raise push
        return push

    async def notifications(self, timeout: float | None = None):
        """Each push as it comes (an async iterator), until none comes within `timeout`."""
        while True:
            push = await self.next_notification(timeout)
            if push is None:
                return
            yield push

    @property
    def pending_pushes(self) -> int:
        """How many pushes have arrived and wait to be read."""
        return self._pushes.qsize()

    def interrupt(self) -> None:
        """Make a waiting (or the next) `next_notification` return None: how a runner is told to stop."""
        self._pushes.put_nowait(_WAKE)

    async def _read(self) -> None:
        # The hub's last word, an error of id null (a revoked key, a removed seat), says why it hangs up next:
        # what every call in flight and the push reader learn, rather than the bare end.
        last_word = None
        try:
            while True:
                frame = await self._wire.receive()
                if not frame.endswith(b"\n"):  # the end, or the hub died in the middle of a frame
                    break
                message = decode(frame, self.target.where)  # not a JSON object: Unavailable, the end
                if "id" not in message:
                    self._pushes.put_nowait(message)
                    continue
                if message["id"] is None and "error" in message:
                    last_word = from_wire(message["error"])
                    continue
                future = self._pending.pop(message["id"], None)
                if future is None or future.done():
                    continue
                if "error" in message:
                    future.set_exception(from_wire(message["error"]))
                else:
                    future.set_result(message["result"])
            lost = last_word or Unavailable(f"the hub at {self.target.where} closed the connection")
        except AgoraError as exc:
            lost = last_word or exc
        except (OSError, EOFError) as exc:
            lost = last_word or Unavailable(f"the hub at {self.target.where} went away: {exc}")
        # Every waiting call learns it before this task awaits anything: a call made meanwhile connects again,
        # which cancels this task, and must not leave them waiting.
        self._fail(lost)
        if self._wire is not None:
            wire, self._wire = self._wire, None
            wire.close()
            await wire.wait_closed()

    def _fail(self, lost: AgoraError) -> None:
        """Every awaiting call and push reader learns the connection is gone."""
        self._ready = False
        if self._lost is None:
            self._lost = lost
            self._pushes.put_nowait(lost)
        for future in self._pending.values():
            if not future.done():
                future.set_exception(lost)
        self._pending.clear()

