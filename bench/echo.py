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


class Echo(asyncio.Protocol):
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
            self.transport.write(bytes(self.buffer[start:end + 1]))
            start = end + 1
        if start:
            del self.buffer[:start]


async def serve(path: str) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    server = await loop.create_unix_server(Echo, path=path, backlog=512)
    try:
        await stop.wait()
    finally:
        server.close()
        await server.wait_closed()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python bench/echo.py SOCKET_PATH\n")
        return 2
    path = argv[0]
    try:
        asyncio.run(serve(path))
    finally:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
