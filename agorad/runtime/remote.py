"""The remote port (`agora up --listen HOST:PORT`): the same JSON-RPC over WebSocket.

Each text message is one frame, handled by the Unix server's own `Session` (server.py): the
same dispatch, batch and push path. What differs is who may speak: a connection authenticates
with `hub.hello {agent, key}` before anything else and is never the operator (the operator is
only ever a same-uid Unix-socket peer); a failed or missing hello gets one `unauthorized`
answer that does not say whether the seat exists, and the connection closes. Failures are
counted per peer address (AuthThrottle; a throttled address is told to try again later), and connections still without a hello
are capped per address and in all (PendingHellos), from their accept: those still in the WebSocket handshake
(`_Counted`, closed at once past the cap, with nothing to say it in yet) and those past it (closed with 1013). Each connection writes through a
bounded queue (Outbox): a peer that stops reading is cut off, the hub never waits for it.
`websockets` is imported here only, and only a hub started with --listen imports this module.
"""

from __future__ import annotations

import asyncio
import collections
import math
import ssl

from websockets.asyncio.server import ServerConnection, serve as ws_serve
from websockets.exceptions import ConnectionClosed

from agorad.runtime.hub import HubState
from agorad.runtime.log import Sparse, log
from agorad.runtime.server import HANG_UP_GRACE, Session
from agorad.surface import keys, settings
from agorad.surface.errors import AgoraError, InvalidRequest, NotFound, Unauthorized, Unavailable
from agorad.surface.protocol import MAX_FRAME

AUTH_FAILED = ("authentication failed: a remote connection begins with hub.hello {agent, key} naming a seat and its "
               "key, and this one did not (a wrong key, an unknown seat, or another request first); closing")
_ANY_HASH = keys.hash_key("")  # checked against when the seat does not exist, so a refusal takes as long either way
CLOSE_NORMAL, CLOSE_POLICY, CLOSE_AWAY, CLOSE_TRY_AGAIN = 1000, 1008, 1001, 1013


class AuthFailed(Unauthorized):
    """A remote hello that failed, or a request before one: always the same words."""

    def __init__(self):
        super().__init__(AUTH_FAILED)


class Throttled(Unavailable):
    """A hello from an address that failed too often lately: refused unchecked, and said to be for a while
    (unavailable, close code 1013), so a seat's own client there waits and tries again instead of giving up."""

    def __init__(self, retry_after: float):
        super().__init__(f"too many failed hub.hello from this address in the last {settings.AUTH_WINDOW:.0f} s; "
                         f"nothing was checked: try again in {math.ceil(retry_after)} s",
                         retry_after=math.ceil(retry_after))


class AuthThrottle:
    """Failed hellos per peer address, in a sliding window (settings.AUTH_WINDOW). Not per seat: a key is 256
    random bits, which no count of guesses finds, and a count per seat let anyone lock a seat out from
    every address (its own client, told `unauthorized`, gave up for good)."""

    MAX_TRACKED = 10_000  # names an unauthenticated peer can make us remember, at most

    def __init__(self, allowed: int = settings.AUTH_FAILURES, window: float = settings.AUTH_WINDOW):
        self.allowed, self.window = allowed, window
        self.failures: collections.OrderedDict[str, collections.deque] = collections.OrderedDict()
        self.refused = Sparse("remote-refused")  # a throttled address may go on trying as fast as it connects

    def blocked(self, now: float, *names: str) -> bool:
        return any(name in self.failures and len(self._recent(now, name)) >= self.allowed for name in names)

    def failed(self, now: float, *names: str) -> None:
        for name in names:
            self._recent(now, name).append(now)
            self.failures.move_to_end(name)
        while len(self.failures) > self.MAX_TRACKED:
            self.failures.popitem(last=False)

    def retry_after(self, now: float, name: str) -> float:
        """Seconds until `name` has fewer failures in the window than it is allowed."""
        stamps = self._recent(now, name)
        return max(0.0, stamps[len(stamps) - self.allowed] + self.window - now) if len(stamps) >= self.allowed else 0.0

    def _recent(self, now: float, name: str) -> collections.deque:
        stamps = self.failures.setdefault(name, collections.deque())
        while stamps and stamps[0] <= now - self.window:
            stamps.popleft()
        return stamps


class PendingHellos:
    """Connections that have not said hub.hello yet, per peer address and in all. Each waits at most
    settings.REMOTE_HELLO_TIMEOUT, but without a cap one address could hold thousands open at once
    (every one a task, a buffer and a descriptor); past either cap a new one is closed at once."""

    def __init__(self, per_peer: int = settings.REMOTE_PENDING_PER_PEER, total: int = settings.REMOTE_PENDING):
        self.per_peer, self.total = per_peer, total
        self.by_peer: collections.Counter[str] = collections.Counter()
        self.count = 0
        self.refused = Sparse("remote-refused")  # a peer can be refused as fast as it connects

    def admit(self, peer: str) -> bool:
        if self.count >= self.total or self.by_peer[peer] >= self.per_peer:
            return False
        self.by_peer[peer] += 1
        self.count += 1
        return True

    def release(self, peer: str) -> None:
        self.count -= 1
        self.by_peer[peer] -= 1
        if not self.by_peer[peer]:
            del self.by_peer[peer]


class Outbox:
    """One remote connection's send queue, as the transport its Session writes to.

    Bounded: above settings.REMOTE_SEND_HIGH its reader stops taking requests until the peer
    reads; above settings.REMOTE_SEND_QUEUE (a subscriber that stopped reading, say) the
    connection is cut with the reason logged. A frame that alone passes the limit, queued while the
    peer kept up (a kb.list of many large values), is sent: the peer is behind only on what waited
    before it, and the high-water mark holds its next requests until it has read it.
    """

    def __init__(self, ws: ServerConnection, peer: str, limit: int, high: int):
        self.ws, self.peer, self.limit, self.high = ws, peer, limit, high
        self.frames: collections.deque[bytes] = collections.deque()
        self.size = 0
        self.ready = asyncio.Event()      # frames to send, or closing
        self.drained = asyncio.Event()    # below the high-water mark: the reader may go on
        self.drained.set()
        self.closing = False              # nothing more is queued
        self.ending: tuple[int, str] | None = None  # close with this code and reason once sent

    def write(self, frame: bytes) -> None:
        if self.closing:
            return
        self.frames.append(frame)
        self.size += len(frame)
        self.ready.set()
        if self.size > self.limit and self.size - len(frame) > self.high:
            log("remote-cut", peer=self.peer, reason="not-reading", queued=self.size)
            self.frames.clear()
            self.close(CLOSE_POLICY, "too far behind: the peer did not read")
        elif self.size > self.high:
            self.drained.clear()

    def is_closing(self) -> bool:
        return self.closing

    def get_write_buffer_size(self) -> int:
        return self.size

    def close(self, code: int = CLOSE_NORMAL, reason: str = "") -> None:
        """Send what is queued, then close (a cut clears the queue first)."""
        if not self.closing:
            self.closing, self.ending = True, (code, reason)
            self.ready.set()
            self.drained.set()

    async def run(self) -> None:
        """Send frames as they come, in order, each one text message without its newline. However it ends (the
        connection closed under a send), the reader is let go: held at the high-water mark, it waited for a
        drain that never came, and the hub's stop waited for it for good (a review: `agora down` timed out)."""
        try:
            while True:
                await self.ready.wait()
                self.ready.clear()
                while self.frames:
                    frame = self.frames.popleft()
                    self.size -= len(frame)
                    if self.size <= self.high:
                        self.drained.set()
                    await self.ws.send(frame[:-1], text=True)
                if self.closing:
                    await self.ws.close(*self.ending)
                    return
        finally:
            self.closing = True
            self.frames.clear()
            self.size = 0
            self.drained.set()


class RemoteSession(Session):
    """One WebSocket peer: authenticated before anything else, never the operator."""

    def __init__(self, hub: HubState, ws: ServerConnection, throttle: AuthThrottle, pending: PendingHellos,
                 idle: float):
        super().__init__(hub)
        address = ws.remote_address
        self.peer = str(address[0]) if address else "?"
        self.ws, self.throttle, self.pending, self.idle = ws, throttle, pending, idle
        self.waiting_hello = False  # counted in `pending` until the hello succeeds or the connection ends
        self.ending = (CLOSE_POLICY, "closing")  # the close code and reason of a hang-up
        self.transport = Outbox(ws, self.peer, settings.REMOTE_SEND_QUEUE, settings.REMOTE_SEND_HIGH)
        self.replies_waiting = 0  # bytes of replies made, waiting for their batch's COMMIT
        self.read_on = asyncio.Event()  # cleared while held replies are past HELD_HIGH (server.Session._out)
        self.read_on.set()

    async def run(self) -> None:
        if not self.pending.admit(self.peer):
            self.pending.refused(peer=self.peer, reason="too-many-pending")
            await self.ws.close(CLOSE_TRY_AGAIN, "too many connections without a hub.hello; try again later")
            return
        self.waiting_hello = True
        sender = asyncio.create_task(self.transport.run())
        try:
            await self._read()
        finally:
            self._hello_settled()
            self._leave_seat()
            if not self.closing:  # the peer went or timed out; a hang-up closes once its final error is out
                self.transport.close(CLOSE_AWAY, "")
            try:
                await asyncio.wait_for(sender, HANG_UP_GRACE)
            except (ConnectionClosed, TimeoutError, OSError):
                pass

    async def _read(self) -> None:
        while not self.closing:
            try:
                async with asyncio.timeout(None) as clock:  # moved on per message: cheaper than a wait_for each
                    await self._each_message(clock)
            except TimeoutError:  # recv is safe to cancel (websockets)
                if self.actor.is_operator or not self._subscribed():  # (a subscription can start after
                    self._time_out()                                 # commit, while recv already waits)
                    return
            except ConnectionClosed:
                return

    def behind(self) -> bool:
        return not self.transport.drained.is_set()

    async def drained(self) -> None:
        await self.transport.drained.wait()

    def _stop_reading(self) -> None:
        self.read_on.clear()

    def _read_again(self) -> None:
        self.read_on.set()

    def _subscribed(self) -> bool:
        return self in self.hub.subscribers.get(self.actor.agent_pk, ())

    async def _each_message(self, clock) -> None:
        loop = asyncio.get_running_loop()
        hello_by = min(settings.REMOTE_HELLO_TIMEOUT, self.idle)
        while not self.closing:
            wait = hello_by if self.actor.is_operator else None if self._subscribed() else self.idle
            clock.reschedule(None if wait is None else loop.time() + wait)
            message = await self.ws.recv()
            clock.reschedule(None)
            if isinstance(message, bytes):
                self._reply_error(None, InvalidRequest("binary messages are refused: send each JSON-RPC frame "
                                                       "as one text message; closing"))
                self._hang_up()
                return
            self._handle(message.encode())
            if self.actor.is_operator and not self.closing:  # a notification (no id) that was not a hello
                self._reply_error(None, AuthFailed())
            if self.transport.size + self.replies_waiting > self.transport.high:
                await self._replies_queued()
            await self.transport.drained.wait()  # a peer that does not read its replies is not read either
            await self.read_on.wait()  # nor one whose replies wait for a replay, past HELD_HIGH

    def _reply_after_commit(self, request_id, reply: bytes) -> None:
        """Count the reply until the COMMIT queues it: replies land all at once then, and a peer that sent
        many requests together (the SDK's async drain) had them all read before any counted against the
        high-water mark, then got their megabytes in one go and was cut as a peer that does not read."""
        self.replies_waiting += len(reply)

        def queue(stored: bool) -> None:
            self.replies_waiting -= len(reply)
            self._send_result(request_id, reply, stored)
        self.hub.batch.after_commit(queue)

    async def _replies_queued(self) -> None:
        """Wait until the open batch, which holds the replies counted in `replies_waiting`, is settled: then
        they are in the Outbox, where the high-water mark holds the reader until the peer reads them. Only
        past that mark: waiting at every request cost a pipelining client one COMMIT each (2-5x slower)."""
        if self.hub.batch.idle:
            return
        settled = asyncio.get_running_loop().create_future()
        self.hub.batch.when_settled(lambda stored: settled.done() or settled.set_result(None))
        await settled

    def _time_out(self) -> None:
        before_hello = self.actor.is_operator
        log("remote-idle", peer=self.peer, agent=self.actor.agent_id, reason="no hello" if before_hello else "idle")
        self.transport.close(CLOSE_POLICY if before_hello else CLOSE_AWAY,
                             "no hub.hello in time" if before_hello else "idle")

    def _finish(self) -> None:
        self.transport.close(*self.ending)

    def _dispatch(self, request: dict, plain: bool) -> dict:
        # A seat's bare hub.hello (no params) asks only which hub this is, as on the socket (agora mcp's whoami
        # does); one naming a seat or a key authenticates again, as the first one did.
        if self.actor.is_operator or (request["method"] == "hub.hello" and request.get("params")):
            return self._authenticate(request, plain)
        return super()._dispatch(request, plain)

    def _authenticate(self, request: dict, plain: bool) -> dict:
        """hub.hello as a named seat with its key, throttled; any failure is AuthFailed."""
        params = request.get("params")
        agent = params.get("agent") if isinstance(params, dict) else None
        key = params.get("key") if isinstance(params, dict) else None
        if request["method"] != "hub.hello" or not isinstance(agent, str) or not isinstance(key, str):
            log("remote-refused", peer=self.peer, reason="no-hello", method=request["method"][:64])
            raise AuthFailed()
        now = asyncio.get_running_loop().time()
        by_peer = f"peer:{self.peer}"
        if self.throttle.blocked(now, by_peer):
            self.throttle.refused(peer=self.peer, agent=agent[:64], reason="throttled")
            raise Throttled(self.throttle.retry_after(now, by_peer))
        try:
            result = super()._dispatch(request, plain)
        except AgoraError as exc:
            if isinstance(exc, NotFound):
                keys.key_matches(key, _ANY_HASH)  # as long as a wrong key takes
            self.throttle.failed(now, by_peer)
            log("remote-refused", peer=self.peer, agent=agent[:64], reason=exc.reason)
            raise AuthFailed() from None
        if self.actor.is_operator:  # cannot happen (an agent was named); never let a peer be the operator
            raise AuthFailed()
        log("remote-hello", peer=self.peer, agent=self.actor.agent_id)
        self._hello_settled()
        return result

    def _hello_settled(self) -> None:
        if self.waiting_hello:
            self.waiting_hello = False
            self.pending.release(self.peer)

    def _reply_error(self, request_id, exc: AgoraError) -> None:
        """Before a hello succeeds every error is the one refusal, and ends the connection; but for a
        throttled address's, which says to try again later."""
        if not self.actor.is_operator and not isinstance(exc, (AuthFailed, Throttled)):
            super()._reply_error(request_id, exc)
            return
        if self.closing:
            return
        super()._reply_error(request_id, exc if isinstance(exc, (AuthFailed, Throttled)) else AuthFailed())
        if isinstance(exc, Throttled):
            self.ending = (CLOSE_TRY_AGAIN, "throttled; try again later")
        self._hang_up()


def parse_listen(text: str) -> tuple[str, int]:
    """`HOST:PORT`, `[V6]:PORT` or `PORT` (loopback) -> (host, port); ValueError says what is wrong."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = settings.LISTEN_HOST, text
    host = host.strip("[]") or settings.LISTEN_HOST
    if not port.isdigit() or not 0 <= int(port) < 65536:
        raise ValueError(f"{text!r} is not HOST:PORT (a port is 0-65535; 0 picks a free one)")
    return host, int(port)


def is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name other than localhost may resolve anywhere


def tls_context(cert: str, key: str) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    return context


async def serve(hub: HubState, host: str, port: int, tls: ssl.SSLContext | None, idle: float):
    """Listen on host:port; return the websockets server (close() and wait_closed() to stop)."""
    throttle, pending, handshaking = AuthThrottle(), PendingHellos(), PendingHellos()

    class Counted(_Counted):
        counter = handshaking
        tls_context = tls
        opening: set[_Counted] = set()
        port_closed = False

    async def handler(ws: _Counted) -> None:
        ws.handshake_over()
        await RemoteSession(hub, ws, throttle, pending, idle).run()

    # No ssl= here: a wss:// connection's TLS is Counted's own (start_tls), so that it is counted from its accept
    server = await ws_serve(handler, host, port, max_size=MAX_FRAME, compression=None,
                            ping_interval=settings.REMOTE_PING, ping_timeout=settings.REMOTE_PING,
                            close_timeout=HANG_UP_GRACE,  # not websockets' 10 s: a peer busy sending held the stop
                            server_header=None, logger=_QUIET, create_connection=Counted)
    server.counted = Counted
    return server


async def close(server) -> None:
    """Stop the remote port: no new connection, the open ones closed (1001), and those still in their TLS or
    WebSocket handshake cut at once: websockets waits for them to send a request it can refuse, so a peer that
    sends nothing held the hub's stop for the handshake's timeout (10 s)."""
    server.close()
    await asyncio.sleep(0)  # websockets' close task stops accepting ...
    await asyncio.sleep(0)  # ... and what was accepted before reaches connection_made
    counted = server.counted
    counted.port_closed = True
    for connection in list(counted.opening):
        connection.cut()
    # A peer that does not read, its send queue between the high-water mark and the cut (a catch-up replay waits
    # for it there, as it reads): websockets' close handshake waits behind the send stuck in the full socket,
    # and held the stop until the keepalive gave up on the peer (18-40 s; agora down waits 30 s). Cut it.
    try:
        await asyncio.wait_for(asyncio.shield(server.wait_closed()), 2 * HANG_UP_GRACE)
    except TimeoutError:
        for connection in list(server.all_connections):  # those closing too: `connections` leaves them out
            if connection.transport is not None:
                connection.transport.abort()
        await server.wait_closed()


class _Counted(ServerConnection):
    """A connection counted from its TCP accept until its WebSocket handshake is over (the handler starts, or
    the connection ends). A peer that opens TCP connections and never finishes a handshake held each for the
    handshake's timeout, uncounted: 1,100 of them from one address took every descriptor the hub had, and
    its notify writes failed. Past the cap one is closed at its accept (there is no WebSocket yet to say
    1013 in).

    On a wss:// port the TLS handshake is the connection's own: `loop.start_tls` on the accepted TCP
    transport, so it is counted by the peer's address from the accept, and a handshake that fails (or takes
    longer than settings.REMOTE_TLS_TIMEOUT) frees its place at once. With asyncio's own TLS (`ssl=` to the
    server) the protocol learns nothing before the handshake ends, not even the peer, and nothing when it
    fails. The WebSocket side starts once the handshake is over."""

    counter: PendingHellos
    tls_context: ssl.SSLContext | None = None
    made = False   # whether websockets' connection_made has run (for a wss:// connection: after its TLS)
    # A wss:// connection's callbacks from its TLS handshake's end until websockets has the connection: asyncio
    # passes on what arrived with the handshake's last bytes at once, and `_secure` resumes a loop turn later.
    early: list[tuple] | None = None
    _securing: set[asyncio.Task] = set()  # the TLS handshakes under way (the loop keeps only weak references)

    opening: set[_Counted]  # the port's connections still in a handshake (counted)
    port_closed: bool        # the hub is stopping: a connection accepted now is cut at once

    def connection_made(self, transport) -> None:
        address = transport.get_extra_info("peername")
        self.peer_address = str(address[0]) if address else "?"
        self.tcp = transport
        self.counted = not self.port_closed and self.counter.admit(self.peer_address)
        if not self.counted:
            if not self.port_closed:
                self.counter.refused(peer=self.peer_address, reason="too-many-handshaking")
            transport.abort()
            return
        self.opening.add(self)
        if self.tls_context is None:
            self._websocket_made(transport)
            return
        transport.pause_reading()  # start_tls takes the first bytes, in its task
        self.early = []
        task = asyncio.get_running_loop().create_task(self._secure(transport))
        self._securing.add(task)
        task.add_done_callback(self._securing.discard)

    async def _secure(self, tcp) -> None:
        loop = asyncio.get_running_loop()
        try:
            secured = await loop.start_tls(tcp, self, self.tls_context, server_side=True,
                                           ssl_handshake_timeout=settings.REMOTE_TLS_TIMEOUT,
                                           ssl_shutdown_timeout=settings.REMOTE_TLS_TIMEOUT)
        except asyncio.CancelledError:  # the hub stopping
            self._not_secured(tcp)
            raise
        except Exception:  # a failed or timed-out handshake, a peer gone: nothing to log, a place to free
            self._not_secured(tcp)
            return
        if secured is None or tcp.is_closing():  # cut mid-handshake (the hub stopping): asyncio returns None
            self._not_secured(tcp)
            return
        try:
            self._websocket_made(secured)
            early, self.early = self.early, None
            for call, *args in early:
                call(*args)
        except Exception as exc:  # nothing here may end the task with a traceback nobody retrieves
            log("remote-refused", peer=self.peer_address, reason="tls-handover-failed", error=type(exc).__name__)
            self._not_secured(tcp)

    def _not_secured(self, tcp) -> None:
        self.early = None
        self.handshake_over()
        tcp.abort()

    def _websocket_made(self, transport) -> None:
        self.made = True
        super().connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self.early is not None:
            self.early.append((super().data_received, data))
            return
        super().data_received(data)

    def eof_received(self):
        if self.early is not None:
            self.early.append((super().eof_received,))
            return None
        return super().eof_received()

    def handshake_over(self) -> None:
        if self.counted:
            self.counted = False
            self.counter.release(self.peer_address)
            self.opening.discard(self)

    def cut(self) -> None:
        """Close the connection at once, in whatever handshake it is (its TCP transport: TLS goes with it)."""
        self.tcp.abort()

    def connection_lost(self, exc) -> None:
        self.handshake_over()
        if self.early is not None:
            self.early.append((super().connection_lost, exc))
        elif self.made:
            super().connection_lost(exc)


class _Quiet:
    """websockets logs handshake noise (port scanners, TLS mismatches) at INFO and above; the hub's log
    carries its own lines instead."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: None

    def isEnabledFor(self, level) -> bool:
        return False


_QUIET = _Quiet()
