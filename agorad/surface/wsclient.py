"""The Client over the remote port: `RemoteClient(url)` speaks to `agora up --listen` over WebSocket.

The same calls, replies and pushes as the Unix-socket Client (client.py), which it is: only
the stream under it differs. Each WebSocket text message is one frame; `Messages` hands them to
the Client as the lines it reads. `websockets` loads here, only when a URL is used, so the hook
and `agora listen --once` on the socket never pay for it. A private CA is trusted through
SSL_CERT_FILE, as OpenSSL does everywhere.
"""

from __future__ import annotations

from agorad.surface import settings
from agorad.surface.client import Client
from agorad.surface.errors import InvalidParams, Unavailable
from agorad.surface.protocol import MAX_REPLY, REPLY_TOO_LARGE
from agorad.surface.vocab import URL_SCHEMES


def check_url(url: str) -> str:
    """`url` if it names a remote port (ws:// or wss://), else InvalidParams saying what one looks like."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in URL_SCHEMES or not rest.strip("/"):
        raise InvalidParams(f"{url!r} is not a hub URL: it looks like ws://HOST:PORT/ or wss://HOST:PORT/ "
                            "(the hub's `agora up --listen`)", field="url")
    return url


class Messages:
    """A WebSocket connection as the byte stream Client reads and writes: a message is a line."""

    def __init__(self, ws, timeout: float | None):
        self.ws, self.timeout = ws, timeout
        self.held: bytes | None = None  # a message `readable` took early, for the next recv

    def sendall(self, data: bytes) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            self.ws.send(data[:-1], text=True)  # the frame without its newline: one text message
        except ConnectionClosed as exc:
            raise ConnectionResetError(_closed(exc)) from None

    def recv(self, size: int) -> bytes:
        if self.held is None:
            self.held = self._take(self.timeout)
        message, self.held = self.held, None
        return message

    def readable(self, timeout: float | None) -> bool:
        if self.held is None:
            try:
                self.held = self._take(timeout)
            except TimeoutError:
                return False
        return True

    def _take(self, timeout: float | None) -> bytes:
        from websockets.exceptions import ConnectionClosed

        try:
            message = self.ws.recv(timeout, decode=False)
        except ConnectionClosed as exc:
            raise ConnectionResetError(_closed(exc)) from None
        return bytes(message) + b"\n"

    def close(self) -> None:
        self.ws.close()


def refused_a_reply(exc) -> bool:
    """This client closed the connection (`exc`, websockets' ConnectionClosed) for a message past its max_size.
    Not when it echoed the hub's own 1009: the hub refusing a request past its frame limit."""
    sent = getattr(exc, "sent", None)
    return sent is not None and sent.code == 1009 and not getattr(exc, "rcvd_then_sent", None)


def _closed(exc) -> str:
    if refused_a_reply(exc):
        return f"it sent {REPLY_TOO_LARGE}"
    received = getattr(exc, "rcvd", None)
    if received is None:
        return "the connection closed"
    return f"the hub closed the connection ({received.code}{': ' + received.reason if received.reason else ''})"


def opening_failed(url: str, exc: BaseException) -> Unavailable:
    """Why the remote port at `url` did not open, in words that say what to do. A certificate this host does
    not trust is not a hub that is down: its error carries `untrusted` (retrying cannot help; AgentRunner
    ends), and says how to trust a private CA. Nor is a scheme that does not match the port's TLS."""
    import ssl

    from websockets.exceptions import InvalidMessage

    if isinstance(exc, ssl.SSLCertVerificationError):
        return Unavailable(f"the hub at {url} shows a certificate this host does not trust (certificate verify "
                           f"failed: {exc.verify_message}): give its CA (or its own certificate, if self-signed) as "
                           "SSL_CERT_FILE=ca.pem, or name the host the certificate is for", untrusted=True)
    # asyncio's TLS handshake tells a plain port's hang-up only as a reset, with no message
    if isinstance(exc, ssl.SSLError) or (isinstance(exc, ConnectionResetError) and url.startswith("wss://")):
        why = getattr(exc, "reason", None) or str(exc) or "it hung up"
        return Unavailable(f"{url} did not answer in TLS ({why}): a hub started without --tls-cert is ws://")
    if isinstance(exc, InvalidMessage) and url.startswith("ws://"):
        return Unavailable(f"{url} did not answer as a plain WebSocket port ({exc}): a hub started with "
                           "--tls-cert is wss://")
    if isinstance(exc, (OSError, TimeoutError)):
        return Unavailable(f"no hub is answering at {url}: {exc}; is it started with `agora up --listen` and "
                           "reachable from here?")
    return Unavailable(f"connecting to {url}: {exc}")


def connect_options(opening: float = settings.REMOTE_CONNECT_TIMEOUT) -> dict:
    """How a seat's client opens the remote port, blocking or on asyncio (surface/aiowire.py, for agora mcp
    and the SDK's AsyncClient): replies up to protocol.MAX_REPLY (a read message carries its body twice), no
    compression, the hub's keepalive."""
    return dict(open_timeout=opening, max_size=MAX_REPLY, compression=None, ping_interval=settings.REMOTE_PING,
                ping_timeout=settings.REMOTE_PING)


class RemoteClient(Client):
    """One connection to a hub's remote port; act as a seat with `hello(agent, key)` first."""

    def __init__(self, url: str, timeout: float | None = 30.0):
        super().__init__(home=None, timeout=timeout)
        self.url = check_url(url)

    @property
    def _socket_path(self) -> str:  # what the Client's messages name: here the URL
        return self.url

    def connect(self) -> "RemoteClient":
        from websockets.exceptions import InvalidHandshake, InvalidURI
        from websockets.sync.client import connect

        # A caller's shorter timeout bounds the opening too: a stop hook must not wait 10 s for a hub offline.
        opening = settings.REMOTE_CONNECT_TIMEOUT if self.timeout is None else min(self.timeout,
                                                                                    settings.REMOTE_CONNECT_TIMEOUT)
        options = connect_options(opening)
        try:
            try:
                ws = connect(self.url, legacy=True, **options)  # websockets 17 warns unless told
            except TypeError:  # an older websockets: no legacy flag, and no warning
                ws = connect(self.url, **options)
        except InvalidURI as exc:
            raise InvalidParams(f"{self.url!r} is not a hub URL: {exc}", field="url") from None
        except (OSError, InvalidHandshake, TimeoutError) as exc:
            raise opening_failed(self.url, exc) from None
        self._sock = Messages(ws, self.timeout)
        self._buffer.clear()
        return self

    def _start_command(self) -> str:
        return "agora up --listen HOST:PORT"

    def _readable(self, deadline: float) -> bool:
        import math
        import time

        return self._sock.readable(None if deadline == math.inf else max(0.0, deadline - time.monotonic()))


def open_client(home=None, url: str | None = None, timeout: float | None = 30.0) -> Client:
    """A Client on the hub's Unix socket under `home`, or on its remote port when `url` is given."""
    return RemoteClient(url, timeout) if url else Client(home, timeout)
