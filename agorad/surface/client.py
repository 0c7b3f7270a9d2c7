"""The client every other part uses, and the Python SDK.

Blocking and small: `agora listen --once` imports it in a loop, so it pulls in
nothing heavier than `socket` and `json`.

    with Client(home) as hub:
        hub.hello("runtime", key)
        hub.call("agents.heartbeat", status="working", task="review #12")
"""

from __future__ import annotations

import json
import os
import socket

from agorad.surface.errors import Unavailable, from_wire
from agorad.surface.paths import Home
from agorad.surface.protocol import encode


class Client:
    """One connection to a hub's Unix socket; calls are answered in order."""

    def __init__(self, home: Home | str | os.PathLike | None = None, timeout: float | None = 30.0):
        self.home = home if isinstance(home, Home) else Home.resolve(home)
        self.timeout = timeout
        self.notifications: list[dict] = []
        self._sock: socket.socket | None = None
        self._reader = None
        self._next_id = 0

    def connect(self) -> "Client":
        path = str(self.home.socket)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(path)
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()
            raise Unavailable(f"no hub is answering on {path}; start one with `agora up`") from None
        except OSError as exc:
            sock.close()
            raise Unavailable(f"connecting to {path}: {exc.strerror or exc}") from None
        self._sock, self._reader = sock, sock.makefile("rb")
        return self

    def close(self) -> None:
        if self._sock:
            self._reader.close()
            self._sock.close()
            self._sock = self._reader = None

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
        try:
            self._sock.sendall(encode({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}))
            return self._await_reply(request_id)
        except (BrokenPipeError, ConnectionResetError, socket.timeout) as exc:
            self.close()
            raise Unavailable(f"the hub at {self.home.socket} went away during {method}: {exc}") from None

    def hello(self, agent: str, key: str, interval: float | str | None = None) -> dict:
        """Act as `agent` on this connection from now on; `interval`: declare its expected
        heartbeat interval (seconds) at the same time."""
        declared = {} if interval is None else {"interval": interval}
        return self.call("hub.hello", agent=agent, key=key, **declared)

    def _await_reply(self, request_id: int):
        while True:
            line = self._reader.readline()
            if not line.endswith(b"\n"):  # EOF, or the hub died in the middle of a reply
                self.close()
                raise Unavailable(f"the hub at {self.home.socket} closed the connection")
            try:
                message = json.loads(line)
            except ValueError:
                self.close()
                raise Unavailable(f"the hub at {self.home.socket} sent a reply that is not JSON") from None
            if "id" not in message:  # a push notification (subscribe); keep it for the caller
                self.notifications.append(message)
                continue
            if "error" in message:
                raise from_wire(message["error"])
            if message.get("id") == request_id:
                return message["result"]

