"""The client every other part uses, and the Python SDK.

Blocking and small: `agora listen --once` imports it in a loop, and an armed
listener holds what it imports for hours, so it pulls in nothing heavier than
`select` and the C cores of `socket` and `json` (`_socket`, and `cjson.py`,
which says why: `socket.py` loads `enum` and `selectors`, `json` loads `re`).

    with Client(home) as hub:
        hub.hello("runtime", key)
        hub.call("agents.heartbeat", status="working", task="review #12")

A connection that called `inbox.subscribe` also receives pushes:

    hub.call("inbox.subscribe")
    for note in hub.notifications():          # or hub.next_notification(timeout=5)
        print(note["params"]["channel"], note["params"]["seq"])
"""

from __future__ import annotations

# The C cores where the Python layer loads more than it gives (the docstring): `_collections.deque` is
# `collections.deque`, and `_collections_abc` is what `collections.abc` re-exports, loaded by `os` at every
# start; the `collections` package loads keyword, operator and reprlib. Not `typing`: 5 ms of a hook's start.
import _socket
import math
import os
import select
import time
from _collections import deque
from _collections_abc import Iterator

from agorad.surface import cjson
from agorad.surface.errors import Unavailable, from_wire
from agorad.surface.paths import Home
from agorad.surface.protocol import encode_request

_RECV = 1 << 16

class Client:
    """One connection to a hub's Unix socket; calls are answered in order.

    Not thread-safe: calls and push notifications share one stream, so use a
    Client from one thread at a time (a thread that waits for pushes while
    another calls needs a Client of its own).
    """

    def __init__(self, home: Home | str | os.PathLike | None = None, timeout: float | None = 30.0):
        self.home = home if isinstance(home, Home) else Home.resolve(home)
        self.timeout = timeout
        self._pushed: deque[dict] = deque()  # pushes read while awaiting a reply
        self._sock: _socket.socket | None = None
        self._buffer = bytearray()  # bytes received past the last whole line
        self._next_id = 0

    @property
    def _socket_path(self) -> str:
        # str(self.home.socket), spelled without making a Path: the stop hook connects at every turn's
        # end, and a Path would load pathlib (filenames.py).
        return self.home.socket_text

    def _start_command(self) -> str:
        """`agora up`, naming the home when it is not the one `agora up` would pick by itself."""
        return "agora up" if self.home == Home.resolve() else f"agora up --home {self.home.root_text}"

    def connect(self) -> "Client":
        path = self._socket_path
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(path)
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()
            raise Unavailable(f"no hub is answering on {path}; start one with `{self._start_command()}`") from None
        except (BlockingIOError, TimeoutError):  # a full backlog (EAGAIN on a Unix socket): it accepts nothing
            sock.close()
            raise Unavailable(f"the hub at {path} accepts no connection (its backlog is full)",
                              unresponsive=True) from None
        except OSError as exc:
            sock.close()
            raise Unavailable(f"connecting to {path}: {exc.strerror or exc}") from None
        _refuse_a_foreign_peer(sock, path)
        self._sock = sock
        self._buffer.clear()
        return self

    def close(self) -> None:
        if self._sock:
            self._sock.close()
            self._sock = None

    def peer_pid(self) -> int | None:
        """The hub's pid as this host's kernel names it, 0 if it cannot, None where there is no way to ask
        (peercred.peer_pid)."""
        if self._sock is None:
            return None
        from agorad.surface.peercred import peer_pid

        return peer_pid(self._sock)

    def __enter__(self) -> "Client":
        return self if self._sock else self.connect()

    def __exit__(self, *exc) -> None:
        self.close()

    def call(self, method: str, **params):
        """Send one request and return its result; raise the AgoraError the hub answered with."""
        if self._sock is None:
            self.connect()
        self._next_id += 1
        request_id = self._next_id
        frame = encode_request(request_id, method, params)
        try:
            self._sock.sendall(frame)
            return self._await_reply(request_id)
        except TimeoutError:  # connected, so something listens there: hung, stopped (SIGSTOP) or swamped
            self.close()
            raise Unavailable(f"the hub at {self._socket_path} did not answer {method} within {self.timeout:g} s",
                              unresponsive=True) from None
        except (BrokenPipeError, ConnectionResetError) as exc:
            self.close()
            raise Unavailable(f"the hub at {self._socket_path} went away during {method}: {exc}") from None

    def hello(self, agent: str, key: str, interval: float | str | None = None) -> dict:
        """Act as `agent` on this connection from now on; `interval`: declare its expected
        heartbeat interval (seconds) at the same time."""
        declared = {} if interval is None else {"interval": interval}
        return self.call("hub.hello", agent=agent, key=key, **declared)

    def next_notification(self, timeout: float | None = None) -> dict | None:
        """The next push on this connection (such as `inbox.delivery` after `inbox.subscribe`), oldest first.

        Waits up to `timeout` seconds (None: without limit; 0: only what has
        already arrived) and returns None if nothing came; the connection stays
        usable. Pushes that arrived while a call awaited its reply come first,
        even after `close()`; after them a closed or lost connection raises
        Unavailable instead of waiting for ever.
        """
        if self._pushed:
            return self._pushed.popleft()
        if self._sock is None:
            raise Unavailable(f"the connection to {self._socket_path} is closed; connect and call inbox.subscribe "
                              "again to receive pushes")
        deadline = math.inf if timeout is None else time.monotonic() + timeout
        try:
            while True:
                line = self._next_line(deadline)
                if line is None:
                    return None
                message = self._decode(line)
                if "id" not in message:
                    return message
                if message["id"] is None and "error" in message:
                    self._hung_up_on(message)
                # Else a reply no call awaits (its call gave up): not a push, and no one else's to return.
        except (ConnectionResetError, TimeoutError) as exc:
            self.close()
            raise Unavailable(f"the hub at {self._socket_path} went away: {exc}") from None

    def notifications(self, timeout: float | None = None) -> Iterator[dict]:
        """Each push as it comes, until none comes within `timeout` seconds (None: until the connection ends).

        A closed or lost connection raises Unavailable, so a consumer can tell it from a quiet one.
        """
        while True:
            message = self.next_notification(timeout)
            if message is None:
                return
            yield message

    def _await_reply(self, request_id: int):
        while True:
            message = self._decode(self._next_line())
            if "id" not in message:  # a push notification (subscribe): kept for next_notification
                self._pushed.append(message)
                continue
            if "error" in message:
                raise from_wire(message["error"])
            if message.get("id") == request_id:
                return message["result"]

    def _hung_up_on(self, message: dict) -> None:
        """The hub's last word to a push reader (an error of id null: a revoked key, a removed seat): it hangs up
        next. Raised as its own error, which says why, rather than as the end that follows it. (A call awaiting
        its reply raises it too, and finds the end at the next call.)"""
        self.close()
        raise from_wire(message["error"])

    def _next_line(self, deadline: float | None = None) -> bytearray | None:
        """One whole line. With a `deadline` (monotonic; inf for none) None once it passes, nothing consumed;
        without one (a call awaiting its reply) the socket's own timeout applies.

        Our own buffer rather than `socket.makefile`: a buffered reader is left
        inconsistent by a timeout, and waiting for a push must be able to give
        up and leave the stream in step for the next call.
        """
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = self._buffer[:end + 1]
                del self._buffer[:end + 1]
                return line
            if deadline is not None and not self._readable(deadline):
                return None
            chunk = self._sock.recv(_RECV)
            if not chunk:  # EOF, or the hub died in the middle of a line
                self.close()
                raise Unavailable(f"the hub at {self._socket_path} closed the connection")
            self._buffer += chunk

    def _readable(self, deadline: float) -> bool:
        wait = None if deadline == math.inf else max(0.0, deadline - time.monotonic())
        return bool(select.select([self._sock], [], [], wait)[0])

    def _decode(self, line: bytes) -> dict:
        try:
            message = cjson.loads(line)
        except (ValueError, RecursionError) as exc:
            self.close()
            what = "nested too deep to read" if isinstance(exc, RecursionError) else "not JSON"
            raise Unavailable(f"the hub at {self._socket_path} sent a reply that is {what}") from None
        if not isinstance(message, dict):
            self.close()
            raise Unavailable(f"the hub at {self._socket_path} sent a reply that is not a JSON object")
        return message


def _refuse_a_foreign_peer(sock, path: str) -> None:
    """Close `sock` and raise Unavailable when another user's process answers there (peercred.foreign_owner)."""
    from agorad.surface.peercred import foreign_hub_message, foreign_owner

    owner = foreign_owner(sock)
    if owner is not None:
        sock.close()
        raise Unavailable(foreign_hub_message(path, owner))
