"""The bare WebSocket reference: a `websockets` asyncio server that echoes each text message.

The same library, event loop and options (no compression, 1 MiB cap) as the hub's remote port,
and nothing else: no parsing, no dispatch, no database. Prints `ready PORT` once it listens on a
free loopback port; stops on SIGTERM or SIGINT.   python bench/ws_echo.py
"""

from __future__ import annotations

import asyncio
import signal
import sys

from websockets.asyncio.server import serve


async def echo(ws) -> None:
    async for message in ws:
        await ws.send(message)


async def main() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with serve(echo, "127.0.0.1", 0, compression=None, max_size=1 << 20) as server:
        print(f"ready {server.sockets[0].getsockname()[1]}", flush=True)
        await stop.wait()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
