"""The bare reference server: an asyncio Unix-socket server that echoes each line.

The fastest honest minimal Python server for this wire: like the hub it is an
`asyncio.Protocol` on the default event loop, it splits the stream into lines
and writes each complete line back as its reply. It does no parsing, no
dispatch and no I/O beyond the socket, so the hub's throughput divided by its
throughput is the share of the raw limit the hub keeps.

Run as a script (stdlib only, so its idle RSS is that of a bare Python process
with asyncio loaded):  python bench/echo.py SOCKET_PATH
It stops on SIGTERM or SIGINT and removes its socket.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys


class Lines(asyncio.Protocol):
    """Splits the stream into newline-ended lines and hands each to `line_received`.

    The one framing of every bare server here (this echo and bench/bare.py),
    so they differ only in what they do with a line.
    """

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.transport = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        start = 0
        while True:
            end = self.buffer.find(b"\n", start)
            if end < 0:
                break
            self.line_received(bytes(self.buffer[start:end + 1]))
            start = end + 1
        if start:
            del self.buffer[:start]

    def line_received(self, line: bytes) -> None:
        raise NotImplementedError


class Echo(Lines):
    def line_received(self, line: bytes) -> None:
        self.transport.write(line)


async def serve(path: str, protocol=Echo) -> None:
    """Serve `protocol` on the Unix socket `path` until SIGTERM or SIGINT."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    server = await loop.create_unix_server(protocol, path=path, backlog=512)
    try:
        await stop.wait()
    finally:
        server.close()
        await server.wait_closed()


def run(path: str, server) -> int:
    """Run the coroutine `server` (which serves on `path`) to its end, then remove the socket."""
    try:
        asyncio.run(server)
    finally:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    return 0


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python bench/echo.py SOCKET_PATH\n")
        return 2
    return run(argv[0], serve(argv[0]))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
