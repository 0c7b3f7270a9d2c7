"""The asyncio Unix-socket JSON-RPC server: framing, peer check, dispatch, replies.

A connection is a line-oriented stream of JSON-RPC 2.0 requests. `Session` is what any
connection does with a frame once it has one; the remote port (remote.py) carries the same
frames over WebSocket through it. Requests are
handled in arrival order on the event loop thread, which is also the single
database writer, so no request sees another half-done.
"""

from __future__ import annotations

import asyncio
import os

import apsw

from agorad.domain.policy import Actor
from agorad.runtime.hub import HubState
from agorad.runtime.log import log
from agorad.runtime.methods import STEADY, dispatch, dispatch_steady
from agorad.surface.peercred import PeerUnknown, peer_uid
from agorad.surface.errors import AgoraError, InternalError, InvalidParams, TooLarge, Unauthorized
from agorad.surface.protocol import MAX_FRAME, decode_request, encode, encode_result

PUSH_BUFFER_LIMIT = 16 << 20  # bytes queued for a subscriber that does not read before it is cut off
HANG_UP_GRACE = 2.0  # seconds a refused peer has to read its error before the hub closes
HELD_HIGH = 1 << 20  # bytes of replies held for a replay (hold_replies) past which the peer's requests wait unread


class Session:
    """What a connection does with its frames, whatever carries them (this Unix socket, or the remote
    port, remote.py): dispatch, reply order behind the batch, pushes, the identity it acts as.

    A carrier sets `transport` to an object with asyncio.Transport's write, is_closing, close and
    get_write_buffer_size, and says how to end (`_finish`) after a final error.
    """

    transport = None

    def __init__(self, hub: HubState):
        self.hub = hub
        self.actor = Actor()
        self.closing = False  # a final error was sent; discard input until the peer goes
        self.held: list[bytes] | None = None  # replies waiting for catch-up replays (hold_replies)
        self.holding = 0  # replays under way on this connection
        self.replay_task = None  # the newest of them (HubState.replay runs them one after another)
        self.held_size = 0  # bytes in `held`
        self.held_over = False  # past HELD_HIGH: the peer's requests are not read until the replies go out

    def _leave_seat(self) -> None:
        pk = self.actor.agent_pk
        if pk is not None:
            self.hub.sessions.get(pk, set()).discard(self)
            self.hub.subscribers.get(pk, set()).discard(self)

    def _become(self, actor: Actor) -> None:
        """Switch the identity this connection acts as (hub.hello); a subscription does not carry over."""
        if actor is self.actor:
            return
        self._leave_seat()
        self.actor = actor
        if actor.agent_pk is not None:
            self.hub.sessions.setdefault(actor.agent_pk, set()).add(self)

    def subscribe(self, agent_pk: int) -> None:
        if not self.transport.is_closing():  # a subscription made after commit may find the peer gone
            self.hub.subscribers.setdefault(agent_pk, set()).add(self)

    def revoke(self, why: str) -> None:
        """The identity behind this connection is gone: say so and hang up."""
        self._leave_seat()
        self.actor = Actor()
        self._write_error(None, Unauthorized(f"{why}; this connection is closed"))
        self._hang_up()

    def hold_replies(self) -> None:
        """A catch-up replay starts (HubState.replay): replies wait until its pushes are out."""
        self.holding += 1
        if self.held is None:
            self.held = []

    def release_replies(self, everything: bool = False) -> None:
        """A replay ended: once none is under way (or, `everything`, at a hang-up), the held replies go out."""
        self.holding = 0 if everything else max(0, self.holding - 1)
        if self.holding:
            return
        held, self.held, self.held_size = self.held, None, 0
        for frame in held or ():
            if not self.transport.is_closing():
                self.transport.write(frame)
        if self.held_over:
            self.held_over = False
            self._read_again()

    def _out(self, frame: bytes) -> None:
        """A reply or an error, in order: after the pushes of a replay under way."""
        if self.held is not None:
            self.held.append(frame)
            self.held_size += len(frame)
            if self.held_size > HELD_HIGH and not self.held_over:
                # Held replies are not in the transport, so they do not pause the reader as written ones do:
                # a peer pipelining requests during a long replay grew them without bound (hundreds of MB).
                self.held_over = True
                self._stop_reading()
        elif not self.transport.is_closing():
            self.transport.write(frame)

    def _stop_reading(self) -> None:
        """Read no more requests (held_over) until _read_again."""
        raise NotImplementedError

    def _read_again(self) -> None:
        raise NotImplementedError

    def gone(self) -> bool:
        """The connection is closing, or hanging up after a final error."""
        return self.closing or self.transport.is_closing()

    def behind(self) -> bool:
        """The peer has not read what was written: a replay waits (drained) before it writes more."""
        raise NotImplementedError

    async def drained(self) -> None:
        raise NotImplementedError

    def push(self, frame: bytes) -> None:
        """A notification for a subscriber; dropped if the peer stopped reading long ago."""
        if not self.transport.is_closing():
            if self.transport.get_write_buffer_size() > PUSH_BUFFER_LIMIT:
                log("push-dropped", agent=self.actor.agent_id, reason="subscriber not reading")
                self.transport.close()
                return
            self.transport.write(frame)

    def _hang_up(self) -> None:
        """End the connection after a final error, once every reply before it has gone out."""
        self.release_replies(everything=True)  # replays stop; what they held goes out before the final error
        self.closing = True
        self.hub.batch.when_settled(lambda stored: self._finish())  # after the final error, in order

    def _finish(self) -> None:
        raise NotImplementedError

    def _handle(self, line: bytes) -> None:
        if not line or line.isspace():
            return
        try:
            request, plain = decode_request(line)
        except AgoraError as exc:
            self._reply_error(None, exc)
            return
        request_id = request.get("id")
        wants_reply = "id" in request  # a request without an id is a notification: no reply at all (JSON-RPC 2.0, 4.1)
        try:
            if self._answered_without_batch(request, plain, request_id, wants_reply):
                return
            self.hub.batch.join()
            result = self._dispatch(request, plain)
        except AgoraError as exc:
            if wants_reply:
                self._reply_error(request_id, exc)
            return
        except apsw.BusyError:
            if wants_reply:
                self._reply_error(request_id, InternalError("the database is locked by another process; nothing was changed, retry"))
            return
        except (apsw.FullError, apsw.IOError) as exc:
            log("storage-failed", method=request["method"], error=type(exc).__name__, detail=str(exc)[:200])
            if wants_reply:
                self._reply_error(request_id, InternalError(
                    "the hub cannot write its database (disk full or an I/O error; see its log); nothing was stored"))
            return
        except Exception as exc:  # a bug: answer, log, keep serving
            log("error", method=request["method"], error=type(exc).__name__, detail=str(exc)[:200])
            if wants_reply:
                self._reply_error(request_id, InternalError())
            return
        if wants_reply:
            try:
                reply = encode_result(request_id, result)
            except (ValueError, TypeError) as exc:  # a bug: a result JSON cannot carry (an infinite float)
                log("error", method=request["method"], error=type(exc).__name__, detail=str(exc)[:200])
                self._reply_error(request_id, InternalError())
                return
            self._reply_after_commit(request_id, reply)

    def _reply_after_commit(self, request_id, reply: bytes) -> None:
        self.hub.batch.after_commit(lambda stored: self._send_result(request_id, reply, stored))

    def _send_result(self, request_id, reply: bytes, stored: bool) -> None:
        if self.transport.is_closing():
            return
        if stored:
            self._out(reply)
        else:
            self._write_error(request_id, InternalError("the hub could not store this change (see its log); nothing was changed"))

    def _answered_without_batch(self, request: dict, plain: bool, request_id, wants_reply: bool) -> bool:
        """Answer a request that needs no transaction this time (a steady heartbeat, liveness.py).
        Only while no batch is open: then no earlier reply is waiting, so answering now keeps the order."""
        if request["method"] not in STEADY or not self.hub.batch.idle:
            return False
        params = request.get("params", {})
        if not isinstance(params, dict):
            return False  # _dispatch says what is wrong
        result = dispatch_steady(self.hub, self.actor, request["method"], params, plain)
        if result is None:
            return False
        if wants_reply:
            self._send_result(request_id, encode_result(request_id, result), True)
        return True

    def _dispatch(self, request: dict, plain: bool) -> dict:
        params = request.get("params", {})
        if not isinstance(params, dict):
            raise InvalidParams('"params" must be an object (named parameters)')
        result, actor = dispatch(self.hub, self.actor, request["method"], params, self, plain)
        self._become(actor)
        return result

    def _reply_error(self, request_id, exc: AgoraError) -> None:
        """Errors keep their place in the reply order: they wait for the batch like results."""
        self.hub.batch.when_settled(lambda stored: self._write_error(request_id, exc))

    def _write_error(self, request_id, exc: AgoraError) -> None:
        self._out(encode({"jsonrpc": "2.0", "id": request_id, "error": exc.to_wire()}))


class Connection(Session, asyncio.Protocol):
    """One Unix-socket client: splits frames at newlines, enforces the frame cap and the peer uid."""

    def __init__(self, hub: HubState):
        super().__init__(hub)
        self.buffer = bytearray()
        self.scanned = 0  # bytes of `buffer` already known to hold no newline
        self.transport: asyncio.Transport | None = None
        self.writable = asyncio.Event()  # cleared while asyncio has paused writing (the peer is behind)
        self.writable.set()

    def connection_made(self, transport) -> None:
        self.transport = transport
        try:
            uid = peer_uid(transport.get_extra_info("socket"))
        except PeerUnknown as exc:
            log("refused", reason="peer-unknown", detail=str(exc))
            self._reply_error(None, Unauthorized(f"this hub serves uid {os.getuid()} only, and cannot tell who "
                                                 f"the peer is: {exc}"))
            self._hang_up()
            return
        if uid != os.getuid():
            log("refused", reason="peer-uid", uid=uid)
            self._reply_error(None, Unauthorized(f"this hub serves uid {os.getuid()} only; the peer is uid {uid}"))
            self._hang_up()

    def connection_lost(self, exc) -> None:
        self._leave_seat()
        self.writable.set()  # a replay waiting for the peer to read goes on, finds the connection gone and ends

    def pause_writing(self) -> None:
        # The client is not reading its replies: stop reading its requests until it does.
        self.writable.clear()
        self.transport.pause_reading()

    def resume_writing(self) -> None:
        self.writable.set()
        if not self.held_over:
            self.transport.resume_reading()

    def _stop_reading(self) -> None:
        if not self.transport.is_closing():
            self.transport.pause_reading()

    def _read_again(self) -> None:
        if self.writable.is_set() and not self.transport.is_closing():
            self.transport.resume_reading()

    def behind(self) -> bool:
        return not self.writable.is_set()

    async def drained(self) -> None:
        await self.writable.wait()

    def data_received(self, data: bytes) -> None:
        if self.closing:
            return
        if not self.buffer and data.find(b"\n") == len(data) - 1 and len(data) <= MAX_FRAME + 1:
            self._handle(data[:-1])  # the usual case, one whole request: no buffering
            return
        self.buffer += data
        while not self.closing:
            end = self.buffer.find(b"\n", self.scanned)
            if end < 0:
                self.scanned = len(self.buffer)
                if len(self.buffer) > MAX_FRAME:
                    self._refuse_oversized()
                return
            line = bytes(self.buffer[:end])
            del self.buffer[: end + 1]
            self.scanned = 0
            if len(line) > MAX_FRAME:
                self._refuse_oversized()
                return
            self._handle(line)

    def _refuse_oversized(self) -> None:
        self._reply_error(None, TooLarge(f"a frame is at most {MAX_FRAME} bytes; closing the connection", limit=MAX_FRAME))
        self._hang_up()

    def _hang_up(self) -> None:
        """Close after a final error. Half-close first: closing with unread input would reset
        the connection and the peer could lose the error it is owed."""
        self.buffer.clear()
        super()._hang_up()

    def _finish(self) -> None:
        if self.transport.is_closing():
            return
        if self.transport.can_write_eof():
            self.transport.write_eof()
        asyncio.get_running_loop().call_later(HANG_UP_GRACE, self.transport.close)


async def serve(hub: HubState, path: str) -> asyncio.AbstractServer:
    """Listen on the Unix socket `path`, created 0600."""
    old_umask = os.umask(0o177)
    try:
        server = await asyncio.get_running_loop().create_unix_server(lambda: Connection(hub), path=path, backlog=512)
    finally:
        os.umask(old_umask)
    os.chmod(path, 0o600)
    return server
