"""The load client: N processes, each one connection, one request in flight, the same code for every server.

Each client sends a frame (a heartbeat unless told otherwise), reads one reply line, parses it as JSON
and checks its id; the hub answers it, the echo server sends the frame back.
Clients are separate processes (the GIL would otherwise make the client side
the bottleneck); they warm up, meet at a barrier, then run for a fixed time.
"""

from __future__ import annotations

import json
import multiprocessing
import queue
import socket
import time
from array import array
from dataclasses import dataclass

from bench.servers import BenchError

MAX_CALLS = 10_000_000  # a bound on every loop, far above what a run reaches
SOCKET_TIMEOUT = 10.0
# One heartbeat request; %d is the request id. The echo server gets the identical line.
FRAME = b'{"jsonrpc":"2.0","id":%d,"method":"agents.heartbeat","params":{"status":"working","task":"bench"}}\n'


@dataclass
class LoadResult:
    clients: int
    calls: int
    calls_per_s: float  # the sum over clients of each client's calls / its measured time
    p50_ms: float
    p99_ms: float
    all_calls: int  # warm-up included: what the server answered during the run


def run(socket_path: str, clients: int, warmup: float, duration: float,
        hellos: list[bytes | None] | None = None, frame: bytes = FRAME) -> LoadResult:
    """Run `clients` client processes against the server at `socket_path` and merge their figures.

    `hellos[i]`, when given, is a frame client i sends (and checks) before its warm-up,
    e.g. the hub's `hub.hello {agent, key}` that makes its connection act as a seat.
    `frame` is the request every call sends, with one `%d` for its id (default: a heartbeat).
    """
    hellos = hellos or [None] * clients
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(clients)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_client, args=(i, socket_path, hellos[i], frame, warmup, duration, barrier, results), daemon=True)
        for i in range(clients)
    ]
    for proc in procs:
        proc.start()
    merged, count, rate, answered = array("d"), 0, 0.0, 0
    try:
        for _ in range(clients):
            try:
                item = results.get(timeout=warmup + duration + 3 * SOCKET_TIMEOUT)
            except queue.Empty:
                raise BenchError(f"a load client sent no result ({clients} clients on {socket_path})") from None
            if item[0] == "error":
                raise BenchError(f"load client {item[1]}: {item[2]}")
            _, _, calls, elapsed, latencies, last_id = item
            count += calls
            answered += last_id - 1
            rate += calls / elapsed
            merged.frombytes(latencies)
    finally:
        for proc in procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=5)
    if not merged:
        raise BenchError("no call completed")
    ordered = sorted(merged)
    return LoadResult(clients, count, rate, _percentile(ordered, 0.50) * 1e3, _percentile(ordered, 0.99) * 1e3, answered)


def _percentile(ordered, q: float) -> float:
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _client(index, socket_path, hello, frame, warmup, duration, barrier, results) -> None:
    sock = None
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(SOCKET_TIMEOUT)
        sock.connect(socket_path)
        reader = sock.makefile("rb")
        if hello is not None:
            sock.sendall(hello)
            reply = json.loads(reader.readline())
            if "result" not in reply:
                raise BenchError(f"hello refused: {reply}")
        ids = _Ids()
        _loop(sock, reader, frame, ids, time.perf_counter() + warmup, array("d"))
        barrier.wait(timeout=warmup + 3 * SOCKET_TIMEOUT)
        latencies = array("d")
        start = time.perf_counter()
        end = _loop(sock, reader, frame, ids, start + duration, latencies)
        results.put(("ok", index, len(latencies), end - start, latencies.tobytes(), ids.last))
    except Exception as exc:  # report, never hang the parent
        results.put(("error", index, f"{type(exc).__name__}: {exc}"))
    finally:
        if sock is not None:
            sock.close()


class _Ids:
    __slots__ = ("last",)

    def __init__(self) -> None:
        self.last = 1  # 1 was the hello


def _loop(sock, reader, template: bytes, ids: _Ids, deadline: float, latencies: array) -> float:
    """Call until `deadline`; append each call's latency (s); return the time the last reply arrived."""
    send, readline, loads, clock, record = sock.sendall, reader.readline, json.loads, time.perf_counter, latencies.append
    request_id = ids.last
    now = clock()
    for _ in range(MAX_CALLS):
        request_id += 1
        frame = template % request_id
        sent = clock()
        send(frame)
        line = readline()
        now = clock()
        if not line:
            raise BenchError("the server closed the connection")
        reply = loads(line)
        if reply.get("id") != request_id or "error" in reply:
            raise BenchError(f"unexpected reply to request {request_id}: {line[:200]!r}")
        record(now - sent)
        if now >= deadline:
            break
    ids.last = request_id
    return now
