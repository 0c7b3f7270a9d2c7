"""A raw socket to a hub, for tests that send what the real client never would."""

from __future__ import annotations

import json
import socket


class Raw:
    def __init__(self, home, timeout: float = 5.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(str(home / "agorad.sock"))
        self.reader = self.sock.makefile("rb")

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def reply(self) -> dict | None:
        line = self.reader.readline()
        return json.loads(line) if line else None

    def request(self, method: str, params=None, request_id=1) -> dict:
        frame = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            frame["params"] = params
        self.send(json.dumps(frame).encode() + b"\n")
        return self.reply()

    def at_eof(self) -> bool:
        return self.reader.readline() == b""

    def close(self) -> None:
        self.reader.close()
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
