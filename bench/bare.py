"""The bare combined loop: what one durable send costs at the very least, in Python.

For each request line it does the three things a hub's send cannot avoid and
nothing else: `json.loads` the request, one apsw INSERT in its own
transaction (BEGIN IMMEDIATE / INSERT / COMMIT) into a WAL database at the
synchronous level the hub beside it runs (FULL by default, as the hub's
default; NORMAL for the opt-in), one `os.write` of a line to an
O_APPEND file (a notify line), then it writes a JSON-RPC reply line. Like the
hub and the echo server it is an `asyncio.Protocol` on the default event loop.
No validation, no dispatch, no fan-out, no group commit: one transaction per
request, so the hub's sends/s divided by its sends/s is the share of the raw
limit the hub keeps.

Run as a script:  python bench/bare.py SOCKET_PATH DB_PATH NOTIFY_PATH [FULL|NORMAL]
It stops on SIGTERM or SIGINT and removes its socket.

`insert_rate` is the database half alone: the same transaction in a loop in
one process, no socket.
"""

from __future__ import annotations

import json
import os
import sys
import time

import apsw

if __package__:  # imported as bench.bare (insert_rate)
    from bench import echo
else:  # run as a script beside echo.py
    import echo

MAX_INSERTS = 10_000_000  # a bound on the in-process loop, far above what a run reaches
SCHEMA = ("CREATE TABLE IF NOT EXISTS messages (pk INTEGER PRIMARY KEY, target TEXT NOT NULL, "
          "title TEXT NOT NULL, body TEXT NOT NULL, created_at REAL NOT NULL)")
INSERT = "INSERT INTO messages (target, title, body, created_at) VALUES (?, ?, ?, ?)"
_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC


LEVELS = ("FULL", "NORMAL")


def open_db(path: str, synchronous: str = "FULL") -> apsw.Connection:
    if synchronous not in LEVELS:
        raise ValueError(f"synchronous must be one of {LEVELS}")
    db = apsw.Connection(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={synchronous}")
    db.execute(SCHEMA)
    return db


def store(db: apsw.Connection, params: dict) -> int:
    """One message, one transaction."""
    db.execute("BEGIN IMMEDIATE")
    db.execute(INSERT, (params["target"], params["title"], params["body"], time.time()))
    pk = db.last_insert_rowid()
    db.execute("COMMIT")
    return pk


class Bare(echo.Lines):
    def __init__(self, db: apsw.Connection, notify_fd: int) -> None:
        super().__init__()
        self.db = db
        self.notify_fd = notify_fd

    def line_received(self, line: bytes) -> None:
        request = json.loads(line)
        params = request.get("params") or {}
        if "target" in params:  # a send; anything else (a hello) is only answered
            pk = store(self.db, params)
            os.write(self.notify_fd, line)
        else:
            pk = 0
        self.transport.write(
            (json.dumps({"jsonrpc": "2.0", "id": request.get("id"), "result": {"pk": pk}}) + "\n").encode())


async def serve(path: str, db_path: str, notify_path: str, synchronous: str = "FULL") -> None:
    db = open_db(db_path, synchronous)
    fd = os.open(notify_path, _APPEND, 0o600)
    try:
        await echo.serve(path, lambda: Bare(db, fd))
    finally:
        os.close(fd)
        db.close()


def insert_rate(db_path: str, params: dict, warmup: float, duration: float, synchronous: str = "FULL") -> float:
    """Transactions per second of `store(params)` in a loop, after `warmup` seconds of the same."""
    db = open_db(db_path, synchronous)
    clock = time.perf_counter
    try:
        deadline = clock() + warmup
        for _ in range(MAX_INSERTS):
            store(db, params)
            if clock() >= deadline:
                break
        count, start = 0, clock()
        deadline = start + duration
        now = start
        for _ in range(MAX_INSERTS):
            store(db, params)
            count += 1
            now = clock()
            if now >= deadline:
                break
        return count / (now - start)
    finally:
        db.close()


def main(argv: list[str]) -> int:
    if len(argv) not in (3, 4):
        sys.stderr.write("usage: python bench/bare.py SOCKET_PATH DB_PATH NOTIFY_PATH [FULL|NORMAL]\n")
        return 2
    return echo.run(argv[0], serve(*argv))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
