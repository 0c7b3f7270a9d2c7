"""`agora mcp` through the SDK's own stdio client: a tool call beside a no-op tool on the same server, beside
`agora inbox` as a process; spawn to initialized beside a bare `import mcp`; the size of tools/list.

The no-op tool rides on the very server the seat's tools do (agora_mcp.server.build(noop=True)), so
its round trip is the SDK's own cost: stdio framing, JSON-RPC, argument validation. The difference is
ours: a worker thread, one hub call and the rendering.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.figures import Figure, alternate, progress
from bench.servers import BenchError, Hub, script_path

CALL_GOAL = 1.5      # check_inbox round trip at most this many times the no-op tool's
SPAWN_GOAL = 1.3     # agora mcp spawn to initialized at most this many times a bare `import mcp`
TOKEN_BUDGET = 3000  # every tool definition together, as serialized tools/list bytes / 4

# The seat's server with the no-op tool added; a third argument is the hub's remote port (a seat on another host).
_SERVE = ("import sys\nfrom agora_mcp.server import serve\nfrom agora_mcp.link import Seat\n"
          "from agorad.surface.paths import Home\n"
          "serve(Seat(sys.argv[1], Home.resolve(sys.argv[2]), *sys.argv[3:]), noop=True)\n")


def _params(command: list[str], cwd: Path):
    from mcp.client.stdio import StdioServerParameters

    return StdioServerParameters(command=command[0], args=command[1:], cwd=str(cwd))


async def _session(command: list[str], work: Path, body):
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    with open(work / "mcp-bench.log", "a") as errlog:
        async with stdio_client(_params(command, work), errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await body(session)


def _pct(times: list[float], q: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def _calls(session, name: str, n: int) -> list[float]:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        result = await session.call_tool(name, {})
        times.append(time.perf_counter() - t0)
        if result.is_error:
            raise BenchError(f"{name} failed: {result.content[0].text}")
    return times


def _round_trips(work: Path, home: Path, agent: str, calls: int, rounds: int, url: str | None = None):
    """Alternating rounds of check_inbox and the no-op tool on one server; every call's time, per tool."""
    command = [sys.executable, "-c", _SERVE, agent, str(home), *([url] if url else [])]

    async def body(session):
        await _calls(session, "check_inbox", 20)  # warm: the hub connection, the thread pool
        await _calls(session, "noop_tool", 20)
        checks, noops = [], []
        for _ in range(rounds):
            checks += await _calls(session, "check_inbox", calls)
            noops += await _calls(session, "noop_tool", calls)
        listed = (await session.list_tools()).tools
        agora_tools = [t.model_dump(mode="json", exclude_none=True, by_alias=True) for t in listed
                       if t.name != "noop_tool"]
        return checks, noops, len(json.dumps({"tools": agora_tools}, separators=(",", ":")).encode())

    return asyncio.run(_session(command, work, body))


def _inbox_process(hub: Hub, agent: str) -> float:
    t0 = time.perf_counter()
    done = subprocess.run([str(script_path("agora")), "inbox", "--home", str(hub.home), "--as", agent],
                          stdin=subprocess.DEVNULL, capture_output=True)
    if done.returncode != 0:
        raise BenchError(f"agora inbox exited {done.returncode}: {done.stderr[-300:]!r}")
    return time.perf_counter() - t0


def _spawn_to_initialized(work: Path, hub: Hub, agent: str) -> float:
    command = [str(script_path("agora")), "mcp", "--home", str(hub.home), "--as", agent]

    async def body(_session):
        return time.perf_counter()

    t0 = time.perf_counter()
    return asyncio.run(_session(command, work, body)) - t0


def _import_mcp() -> float:
    """A bare `python -c 'import mcp'`, timed to the end of the import (a line it prints then), not to the
    process's exit: the server's figure stops at its initialize reply, and tearing 116 modules down at
    exit would flatter the server."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", "import mcp; print(flush=True)"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE)
    imported = proc.stdout.readline()
    elapsed = time.perf_counter() - t0
    proc.stdout.close()
    if proc.wait(timeout=30) != 0 or not imported:
        raise BenchError(f"`{sys.executable} -c 'import mcp'` exited {proc.returncode}: is the mcp extra installed?")
    return elapsed


def figures(work: Path, s) -> list[Figure]:
    calls = max(50, int(400 * s.duration))
    with Hub(work / "mcp", work / "mcp-hub.log") as hub:
        hub.start()
        (agent, _key), (peer, peer_key) = hub.register(2)
        from agorad.surface.client import Client

        with Client(hub.home, timeout=10) as sender:  # an inbox with something in it
            sender.hello(peer, peer_key)
            for i in range(5):
                sender.call("messages.send", target=f"@{agent}", title=f"bench {i}", ask=i == 0)
        progress(f"mcp: {s.rounds} alternating rounds of {calls} check_inbox and no-op calls over stdio")
        checks, noops, size = _round_trips(work, hub.home, agent, calls, s.rounds)
        progress(f"mcp: agora inbox as a process and agora mcp spawn to initialized, {s.spawn_runs} runs each, "
                 "beside python -c 'import mcp'")
        _spawn_to_initialized(work, hub, agent), _import_mcp(), _inbox_process(hub, agent)  # warm the caches
        spawned, bare, processes = alternate(s.spawn_runs, lambda: _spawn_to_initialized(work, hub, agent),
                                             _import_mcp, lambda: _inbox_process(hub, agent))
    c50, c99, n50, n99 = _pct(checks, .5), _pct(checks, .99), _pct(noops, .5), _pct(noops, .99)
    spawn, imported = statistics.median(spawned), statistics.median(bare)
    tokens = size / 4
    return [
        Figure(f"mcp check_inbox p50, {len(checks)} calls", "ms", c50, n50, "no-op tool, same server",
               f"<= {CALL_GOAL:g}x", c50 <= CALL_GOAL * n50),
        Figure(f"mcp check_inbox p99, {len(checks)} calls", "ms", c99, n99, "no-op tool, same server",
               f"<= {CALL_GOAL:g}x", c99 <= CALL_GOAL * n99),
        Figure("mcp check_inbox p50 beside agora inbox", "ms", c50, statistics.median(processes) * 1000,
               f"agora inbox process, median of {s.spawn_runs}"),
        Figure(f"agora mcp spawn to initialized, median of {s.spawn_runs}", "s", spawn, imported,
               "python -c 'import mcp'", f"<= {SPAWN_GOAL:g}x", spawn <= SPAWN_GOAL * imported),
        Figure("mcp tools/list size", "tokens", tokens, TOKEN_BUDGET, "the budget",
               f"< {TOKEN_BUDGET}", tokens < TOKEN_BUDGET),
        *_over_the_port(work, calls, s.rounds),
    ]


def _over_the_port(work: Path, calls: int, rounds: int) -> list[Figure]:
    """check_inbox for a seat on another host (its home's hub.url, `agora setup --url`): the same server over
    the hub's WebSocket port, beside its own no-op tool and beside check_inbox on the Unix socket. No goal:
    the difference is the port's (TCP and WebSocket framing each way), measured in `--only remote`."""
    from agorad.surface import filenames
    from agorad.surface.client import Client

    with Hub(work / "mcp-remote", work / "mcp-remote-hub.log", "--listen", "127.0.0.1:0") as hub:
        hub.start()
        (agent, key), (peer, peer_key) = hub.register(2)
        with Client(hub.home, timeout=10) as operator:
            url = operator.call("hub.status")["remote"]
        with Client(hub.home, timeout=10) as sender:
            sender.hello(peer, peer_key)
            for i in range(5):
                sender.call("messages.send", target=f"@{agent}", title=f"bench {i}", ask=i == 0)
        seat_home = work / "mcp-seat-host"
        (seat_home / "keys").mkdir(parents=True, mode=0o700)
        filenames.write_private(filenames.key_file(seat_home, agent), key + "\n")
        filenames.write_private(filenames.hub_url_file(seat_home), url + "\n")
        progress(f"mcp: {rounds} alternating rounds of {calls} check_inbox and no-op calls, a seat over the remote port")
        remote, noops, _ = _round_trips(work, seat_home, agent, calls, rounds, url)
        local, _, _ = _round_trips(work, hub.home, agent, calls, rounds)
    r50, n50, l50 = _pct(remote, .5), _pct(noops, .5), _pct(local, .5)
    return [
        Figure(f"mcp check_inbox p50 over the remote port, {len(remote)} calls", "ms", r50, n50,
               "no-op tool, same server"),
        Figure("mcp check_inbox p50 over the remote port beside the socket", "ms", r50, l50,
               "check_inbox, a seat on the hub's host"),
    ]
