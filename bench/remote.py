"""The remote port (`agora up --listen`): ws send-to-wake and sends/s over WebSocket.

Wake: one persistent `agora listen --source ws --debounce 0` on its own seat and one file
listener (`--watcher inotify`) on another, both on one hub that also listens on loopback; a
sender on the Unix socket sends a DM to one seat at a time and waits for its wake (timed from
the send's reply to the AGORA_WAKE line, as bench/reception.py does). Beside them, in the same
alternating rounds, the bare limit: a round trip of one message of the push's size through a
bare `websockets` echo server (bench/ws_echo.py), timed from just before the send to the echo.

Sends: 8 clients, each its own seat on its own WebSocket, each sending DMs back to back
(request, await the reply) for a round; beside the same client code sending the same frame
through the bare echo server, alternating rounds. The client is one asyncio process on the
same 2 cores, the same for both sides.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import sys
import time
from pathlib import Path

from bench.figures import Figure, alternate, progress
from bench.load import _percentile
from bench.messaging import SEND_PARAMS
from bench.reception import LINE_TIMEOUT, SENDER, WARMUP_WAKES, Lines, Sender, _process, timed_wake
from bench.servers import BenchError, Hub, script_path

WS_SEAT, FILE_SEAT = "sink-ws", "sink-file"
ECHO_SCRIPT = Path(__file__).with_name("ws_echo.py")
CLIENTS = 8


def figures(work: Path, s, notes: list[str]) -> list[Figure]:
    home = work / "remote"
    with Hub(home, work / "remote.log", "--listen", "127.0.0.1:0") as hub, \
            _process([sys.executable, str(ECHO_SCRIPT)], work / "ws-echo.log") as echo:
        hub.start()
        url = _remote_url(hub)
        ready = Lines(echo, "the bare websockets echo server", work / "ws-echo.log").next()[0].split()
        if ready[:1] != [b"ready"]:
            raise BenchError(f"the bare websockets echo server said {b' '.join(ready)[:200]!r}")
        echo_url = f"ws://127.0.0.1:{int(ready[1])}/"
        keys = dict(hub.add_agents([WS_SEAT, FILE_SEAT, SENDER], "always-on"))
        result = wakes(work, hub, url, echo_url, keys, s, notes)
        result += sends(hub, url, echo_url, s, notes)
    return result


def _remote_url(hub: Hub) -> str:
    from agorad.surface.client import Client

    with Client(hub.home, timeout=10) as operator:
        return operator.call("hub.status")["remote"]


# --- send-to-wake ---------------------------------------------------------------------

def wakes(work: Path, hub: Hub, url: str, echo_url: str, keys: dict, s, notes: list[str]) -> list[Figure]:
    from websockets.sync.client import connect

    agora = str(script_path("agora"))
    commands = {
        "ws": [agora, "listen", "--home", str(hub.home), "--as", WS_SEAT, "--debounce", "0", "--source", "ws",
               "--url", url],
        "file": [agora, "listen", "--home", str(hub.home), "--as", FILE_SEAT, "--debounce", "0", "--watcher", "inotify"],
    }
    with contextlib.ExitStack() as stack:
        ears = {}
        for side, command in commands.items():
            log = work / f"listen-{side}.log"
            proc = stack.enter_context(_process(command, log))
            ears[side] = Lines(proc, f"agora listen ({side})", log)
            armed = ears[side].next()[0]
            if not armed.startswith(b"AGORA_LISTEN armed"):
                raise BenchError(f"agora listen ({side}) said {armed[:200]!r} instead of arming")
        sender = Sender(hub.socket_path, SENDER, keys[SENDER])
        stack.callback(sender.close)
        bare = connect(echo_url, compression=None, legacy=True)
        stack.callback(bare.close)
        seats = {"ws": WS_SEAT, "file": FILE_SEAT}

        def hub_wake(side: str):
            return timed_wake(sender, ears[side], seats[side])

        push = json.dumps({"jsonrpc": "2.0", "method": "inbox.delivery", "params": {"pad": "x" * 400}})

        def bare_wake() -> float:
            start = time.perf_counter()
            bare.send(push)
            if bare.recv(timeout=LINE_TIMEOUT) != push:
                raise BenchError("the bare websockets echo server sent back something else")
            return time.perf_counter() - start

        def run(wake, count: int):
            def go() -> list[float]:
                found = []
                for _ in range(count):
                    time.sleep(s.wake_gap)
                    found.append(wake())
                return found
            return go

        per_round = max(1, s.wakes // s.rounds)
        progress(f"ws send-to-wake, --debounce 0: {s.rounds} rounds of {per_round} wakes {s.wake_gap * 1000:g} ms "
                 "apart; agora listen --source ws, --source file and a bare websockets echo alternating")
        for side in seats:
            run(hub_wake(side), WARMUP_WAKES)()
        run(bare_wake, WARMUP_WAKES)()
        found = alternate(s.rounds, run(bare_wake, per_round), run(hub_wake("ws"), per_round),
                          run(hub_wake("file"), per_round))
        bare_lat, ws_lat, file_lat = (sorted(x for r in side for x in r) for side in found)
    b50, b99 = _percentile(bare_lat, 0.5) * 1e3, _percentile(bare_lat, 0.99) * 1e3
    figures = []
    for name, lat in (("--source ws", ws_lat), ("--source file", file_lat)):
        figures += [
            Figure(f"send-to-wake p50, {name}", "ms", _percentile(lat, 0.5) * 1e3, b50, "bare websockets echo"),
            Figure(f"send-to-wake p99, {name}", "ms", _percentile(lat, 0.99) * 1e3, b99, "bare websockets echo"),
        ]
    notes.append(f"ws send-to-wake: {len(ws_lat)} wakes per side, {s.rounds} alternating rounds, "
                 f"{s.wake_gap * 1000:g} ms apart; listeners from the send's reply to the AGORA_WAKE line; bare: one "
                 "round trip of a push-sized message through a websockets echo server on the same loopback")
    return figures


# --- sends/s over ws ----------------------------------------------------------------------

async def _load(url: str, hellos: list[str | None], frame: str, warmup: float, duration: float):
    """CLIENTS connections sending `frame` (with %d for the id) back to back; (calls/s, p50 ms, p99 ms)."""
    from websockets.asyncio.client import connect

    latencies: list[float] = []
    counting = False

    async def client(hello: str | None) -> None:
        async with connect(url, compression=None, max_size=None) as ws:
            if hello is not None:
                await ws.send(hello)
                if "result" not in json.loads(await ws.recv()):
                    raise BenchError("hello refused on the remote port")
            request_id = 1
            while not stopping.is_set():
                request_id += 1
                start = time.perf_counter()
                await ws.send(frame % request_id)
                await ws.recv()
                if counting:
                    latencies.append(time.perf_counter() - start)

    stopping = asyncio.Event()
    tasks = [asyncio.create_task(client(h)) for h in hellos]
    await asyncio.sleep(warmup)
    counting = True
    began = time.perf_counter()
    await asyncio.sleep(duration)
    counting = False
    elapsed = time.perf_counter() - began
    stopping.set()
    await asyncio.gather(*tasks)
    latencies.sort()
    return len(latencies) / elapsed, _percentile(latencies, 0.5) * 1e3, _percentile(latencies, 0.99) * 1e3


def sends(hub: Hub, url: str, echo_url: str, s, notes: list[str]) -> list[Figure]:
    seats = hub.add_agents([f"remote-{i}" for i in range(CLIENTS)], "always-on")
    hellos = [json.dumps({"jsonrpc": "2.0", "id": 1, "method": "hub.hello", "params": {"agent": a, "key": k}})
              for a, k in seats]
    frame = ('{"jsonrpc":"2.0","id":%d,"method":"messages.send","params":'
             + json.dumps({**SEND_PARAMS, "target": "@" + WS_SEAT}, separators=(",", ":")).replace("%", "%%") + "}")
    progress(f"sends over ws, {CLIENTS} clients: {s.rounds} rounds of {s.duration:g} s; the hub's remote port and a "
             "bare websockets echo of the same frame alternating")

    def side(target: str, with_hello: bool):
        return lambda: asyncio.run(_load(target, hellos if with_hello else [None] * CLIENTS, frame, s.warmup, s.duration))

    echo_side, hub_side = alternate(s.rounds, side(echo_url, False), side(url, True))
    (h_rate, h50, h99), (e_rate, e50, e99) = (tuple(statistics.median(r[i] for r in found) for i in range(3))
                                              for found in (hub_side, echo_side))
    notes.append(f"ws sends: {CLIENTS} seats, one WebSocket each, one asyncio client process for both sides; "
                 "the bare side echoes the same messages.send frame")
    return [
        Figure(f"DM sends/s over ws, {CLIENTS} clients", "calls/s", h_rate, e_rate, "bare websockets echo"),
        Figure(f"p50 latency, {CLIENTS} clients over ws", "ms", h50, e50, "bare websockets echo"),
        Figure(f"p99 latency, {CLIENTS} clients over ws", "ms", h99, e99, "bare websockets echo"),
    ]
