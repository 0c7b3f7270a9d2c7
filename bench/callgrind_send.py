"""Instructions per DM send, counted by callgrind on the hub's request loop in-process.

    python -m bench.callgrind_send [--clients 8] [--sends 800] [--keep FILE]

Timings on a shared 2-core VM drift by 10-20% within a minute; instruction
counts repeat to a few in a million. This script starts a hub in-process on
a temporary home (the real `HubState`, database settings and migrations; no
socket, no checkpointer thread), registers a sink and `--clients` senders
through the operator's wire methods, says `hub.hello` for each sender on its
own `server.Connection` (with a transport that only collects bytes), and then
drives rounds: each round feeds one `messages.send` frame (the bench's
`SEND_FRAME`) to every connection from one loop callback, as the selector
would from one poll, and runs the event loop until every reply is written.
So the group commit, notify lines and replies run as in the hub; the socket
reads and writes themselves do not (they are the same code in every tree).

Only the measured rounds are counted: they run inside `sys.call_tracing`,
and callgrind collects only inside that C function
(`--collect-atstart=no --toggle-collect=sys_call_tracing`). Warm-up rounds
before it fill SQLite's page cache and the statement caches.

It runs itself under valgrind unless `AGORA_CALLGRIND_CHILD` is set, then
prints the instructions per send (Ir). `--keep FILE` keeps the callgrind
output for `callgrind_annotate --inclusive=yes FILE`.

It imports `agorad` from the interpreter it runs under, so one copy measures
any checkout: run it from this checkout with another checkout's venv python
to count that tree. Module paths before the regrouping (agorad.hub,
agorad.server...) are tried when the new ones are missing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.messaging import SEND_FRAME, SINK

CHILD = "AGORA_CALLGRIND_CHILD"
WARMUP_ROUNDS = 50


def _import_hub():
    """(HubState, Settings, Connection, Clock, Home, connect, migrate) from this tree's layout."""
    from agorad.store import connect
    from agorad.store.migrations import migrate
    try:
        from agorad.runtime.hub import HubState, Settings
        from agorad.runtime.server import Connection
        from agorad.runtime.clock import Clock
        from agorad.surface.paths import Home
    except ImportError:  # before the regrouping into surface/domain/store/runtime
        from agorad.hub import HubState, Settings
        from agorad.server import Connection
        from agorad.clock import Clock
        from agorad.paths import Home
    return HubState, Settings, Connection, Clock, Home, connect, migrate


class Transport:
    """Collects what a connection writes; tells the driver when the replies it waits for are in."""

    def __init__(self, driver: "Driver"):
        self.driver = driver
        self.lines: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.lines.append(data)
        self.driver.replied()

    def is_closing(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name, default=None):
        return default

    def can_write_eof(self) -> bool:
        return False

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


class Driver:
    def __init__(self, home: Path, clients: int):
        HubState, Settings, Connection, Clock, Home, connect, migrate = _import_hub()
        self.home = Home.resolve(home)
        self.home.ensure()
        self.db = connect(self.home.db, "NORMAL")
        self.db.execute("PRAGMA wal_autocheckpoint=0")  # as the hub: its checkpointer thread is left out here
        migrate(self.db)
        self.hub = HubState(self.home, self.db, Clock(), Settings())
        self.hub.notifier.start(self.db)
        self.Connection = Connection
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        self.waiting = 0
        self.done: asyncio.Future | None = None
        self.next_id = 1000
        operator = self.connection()
        keys = {}
        for agent in [SINK] + [f"sender-{i}" for i in range(clients)]:
            keys[agent] = self.call(operator, "agents.add", agent=agent, liveness_mode="always-on")["key"]
        self.senders = []
        for i in range(clients):
            sender = self.connection()
            self.call(sender, "hub.hello", agent=f"sender-{i}", key=keys[f"sender-{i}"])
            self.senders.append(sender)

    def connection(self):
        connection = self.Connection(self.hub)
        connection.transport = Transport(self)  # no connection_made: no socket, so no peer credentials to ask
        return connection

    def replied(self) -> None:
        self.waiting -= 1
        if self.waiting == 0 and self.done is not None and not self.done.done():
            self.done.set_result(None)

    def _feed(self, pairs) -> None:
        for connection, frame in pairs:
            connection.data_received(frame)

    def _run(self, pairs) -> None:
        self.waiting = len(pairs)
        self.done = self.loop.create_future()
        self.loop.call_soon(self._feed, pairs)
        self.loop.run_until_complete(self.done)

    def call(self, connection, method: str, **params) -> dict:
        frame = (json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}) + "\n").encode()
        self._run([(connection, frame)])
        reply = json.loads(connection.transport.lines[-1])
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    def rounds(self, n: int) -> None:
        for _ in range(n):
            pairs = []
            for sender in self.senders:
                self.next_id += 1
                pairs.append((sender, SEND_FRAME % self.next_id))
            self._run(pairs)
        for sender in self.senders:
            last = json.loads(sender.transport.lines[-1])
            if "result" not in last:
                raise RuntimeError(f"a send failed: {last}")
            sender.transport.lines.clear()

    def close(self) -> None:
        if self.hub.batch.effects or self.db.in_transaction:
            self.hub.batch.commit()
        self.hub.notifier.close()
        self.loop.close()
        self.db.close()


def child(clients: int, sends: int) -> None:
    home = Path(tempfile.mkdtemp(prefix="agcg", dir="/tmp"))
    try:
        driver = Driver(home / "home", clients)
        driver.rounds(WARMUP_ROUNDS)
        sys.call_tracing(driver.rounds, (sends // clients,))  # the only counted part
        driver.close()
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8, help="senders, each one request per round (a batch)")
    parser.add_argument("--sends", type=int, default=800, help="counted sends (rounded down to whole rounds)")
    parser.add_argument("--keep", metavar="FILE", help="keep the callgrind output here")
    args = parser.parse_args(argv)
    if os.environ.get(CHILD):
        child(args.clients, args.sends)
        return 0
    if not shutil.which("valgrind"):
        print("valgrind is not installed", file=sys.stderr)
        return 1
    sends = args.sends // args.clients * args.clients
    with tempfile.TemporaryDirectory() as tmp:
        out = args.keep or os.path.join(tmp, "callgrind.out")
        env = {**os.environ, CHILD: "1", "PYTHONHASHSEED": "0"}
        command = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=sys_call_tracing",
                   f"--callgrind-out-file={out}", sys.executable, "-m", "bench.callgrind_send",
                   "--clients", str(args.clients), "--sends", str(sends)]
        done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            print(done.stderr[-4000:], file=sys.stderr)
            return done.returncode
        total = None
        with open(out) as f:
            for line in f:
                if line.startswith(("summary:", "totals:")):
                    total = int(line.split()[1])
    if total is None:
        print(f"no totals in {out}", file=sys.stderr)
        return 1
    print(f"{total / sends:,.0f} instructions per send ({sends} sends from {args.clients} "
          f"client{'s' * (args.clients > 1)}, {total:,} in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
