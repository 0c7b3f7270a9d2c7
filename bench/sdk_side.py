"""One side of `python -m bench --only sdk`, in a process of its own:

    python bench/sdk_side.py runner|runner-async|bare HOME AGENT KEY

`runner`: an AgentRunner with a sync handler; `runner-async`: the same with an async handler;
`bare`: the surface client subscribed to pushes, nothing else. Each prints `ready` once it follows
pushes, then one line `PERF_COUNTER CHANNEL#SEQ` per message, the time taken as the handler is
called (runner) or the push is read (bare). time.perf_counter is CLOCK_MONOTONIC, shared by the
processes of one host, so the bench subtracts its own send time.
"""

from __future__ import annotations

import sys
import threading
import time


def say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def runner(home: str, agent: str, key: str, is_async: bool) -> None:
    from agora_sdk import AgentRunner

    def handle(message) -> None:
        say(f"{time.perf_counter()!r} {message.ref}")

    async def handle_async(message) -> None:
        say(f"{time.perf_counter()!r} {message.ref}")

    running = AgentRunner(agent, handle_async if is_async else handle, home=home, key=key)
    threading.Thread(target=lambda: running.ready.wait() and say("ready"), daemon=True).start()
    running.run()


def bare(home: str, agent: str, key: str) -> None:
    from agorad.surface.client import Client

    with Client(home, timeout=None) as hub:
        hub.hello(agent, key)
        hub.call("inbox.subscribe")
        say("ready")
        for push in hub.notifications():
            at = time.perf_counter()
            params = push["params"]
            say(f"{at!r} {params['channel']}#{params['seq']}")


if __name__ == "__main__":
    side, home, agent, key = sys.argv[1:5]
    if side == "bare":
        bare(home, agent, key)
    else:
        runner(home, agent, key, side == "runner-async")
