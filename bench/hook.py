"""The stop hook's figure: `agora hook stop`, the whole process, when there is nothing to say.

It runs at every turn's end of every wired session, so its cost is its process: start-up,
imports, one connection with hub.hello and inbox.check, a stamp written. Goal: a median of at
most 60 ms. Beside it, in alternating rounds, the two raw limits it is judged against: a bare
`python -c pass` (what any Python hook costs), and a bare client process (the same interpreter,
importing only socket and json, doing the same connect, hello and inbox.check): what any Python
hook that asks the hub costs.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.figures import Figure, alternate, progress
from bench.servers import BenchError, Hub, python_pass, script_path

GOAL_S = 0.060
SEAT = "hooked"
PAYLOAD = b'{"hook_event_name": "Stop", "stop_hook_active": false}'  # what Codex sends, in short

BARE_CLIENT = """
import json, socket, sys
key = sys.stdin.read().strip()  # never in argv
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f = s.makefile("rb")
for i, (m, p) in enumerate((("hub.hello", {"agent": sys.argv[2], "key": key}),
                            ("inbox.check", {"important": True, "limit": 20}))):
    s.sendall(json.dumps({"jsonrpc": "2.0", "id": i, "method": m, "params": p}).encode() + b"\\n")
    assert "result" in json.loads(f.readline())
"""


# An installed agora has its bytecode (pip compiles at install); a shell with PYTHONDONTWRITEBYTECODE
# (this workplace sets it) would make every run compile each of the hook's modules from source, a
# cost no installed hook pays. So the hook runs without it, and its unmeasured warm-up run writes the
# bytecode (into __pycache__, which git ignores).
HOOK_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _timed(command: list[str], what: str, **kw) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(command, capture_output=True, timeout=30, **kw)
    elapsed = time.perf_counter() - t0
    if done.returncode != 0 or done.stdout:
        raise BenchError(f"{what} exited {done.returncode} with {done.stdout[:200]!r} {done.stderr[:200]!r}")
    return elapsed


def figures(work: Path, s) -> list[Figure]:
    progress(f"agora hook stop with nothing to say, {s.hook_runs} runs, beside python -c pass and a bare "
             "client process, alternating")
    with Hub(work / "hook", work / "hook.log") as hub:
        hub.start()
        (agent, key), = hub.add_agents([SEAT])
        hook = [str(script_path("agora")), "hook", "stop", "--harness", "codex", "--as", agent, "--home", str(hub.home)]
        bare = [sys.executable, "-c", BARE_CLIENT, str(hub.home / "agorad.sock"), agent]

        def run_hook() -> float:
            return _timed(hook, "agora hook stop", input=PAYLOAD, env=HOOK_ENV)

        def run_bare() -> float:
            return _timed(bare, "the bare client", input=key.encode())

        for warm in (run_hook, run_bare, python_pass):  # page cache and bytecode caches, unmeasured
            warm()
        hooks, passes, bares = alternate(s.hook_runs, run_hook, python_pass, run_bare)
    h = statistics.median(hooks)
    return [
        Figure(f"hook stop, nothing to say, median of {s.hook_runs}", "s", h, statistics.median(passes),
               "python -c pass", f"<= {GOAL_S * 1000:g} ms", h <= GOAL_S),
        Figure(f"hook stop, beside a bare client, median of {s.hook_runs}", "s", h, statistics.median(bares),
               "python: socket+json, hello, inbox.check"),
    ]
