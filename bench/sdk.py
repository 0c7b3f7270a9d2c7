"""The SDK's figure: push from a send to an AgentRunner's handler call, beside the bare Unix-socket push.

Three processes follow three seats of one hub (bench/sdk_side.py): an AgentRunner with a sync
handler (the goal is for it), one with an async handler, and the bare side, the surface client
subscribed with `inbox.subscribe` and reading its pushes. The bench sends one DM at a time to one
of them and reads back the time the side printed: the handler's call (the runner has read the
message with `messages.read` by then, as every handler gets its body) or the push's arrival
(bare), minus the time just before the send. Sends are a short gap apart, so each finds its side
idle (a runner acks and heartbeats after its handler), in alternating rounds.
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path

from bench.figures import Figure, alternate, progress
from bench.load import _percentile
from bench.reception import Lines, Sender, _process, send_frame
from bench.servers import BenchError, Hub

PUSH_GOAL_RATIO = 2.0
SIDE_SCRIPT = Path(__file__).with_name("sdk_side.py")
SENDER = "sdk-sender"
SIDES = {"runner": "sdk-runner", "runner-async": "sdk-runner-async", "bare": "sdk-bare"}  # side -> its seat
WARMUP = 5


def figures(work: Path, s) -> list[Figure]:
    home = work / "sdk"
    with Hub(home, work / "sdk.log") as hub, contextlib.ExitStack() as stack:
        hub.start()
        keys = dict(hub.add_agents([*SIDES.values(), SENDER], "always-on"))
        ears = {}
        for side, seat in SIDES.items():
            log = work / f"sdk-{side}.log"
            proc = stack.enter_context(_process([sys.executable, str(SIDE_SCRIPT), side, str(home), seat, keys[seat]], log))
            ears[side] = Lines(proc, f"the SDK's {side} side", log)
        for side, ear in ears.items():
            if ear.next()[0] != b"ready":
                raise BenchError(f"the SDK's {side} side did not say ready")
        sender = Sender(hub.socket_path, SENDER, keys[SENDER])
        stack.callback(sender.close)

        def push(side: str):
            seat, ear, frame = SIDES[side], ears[side], send_frame(SIDES[side])

            def once() -> float:
                time.sleep(s.wake_gap)
                start = time.perf_counter()
                seq, _ = sender.send(frame)
                line, _ = ear.next()
                at, ref = line.decode().split(" ", 1)
                if ref != f"dm:{'--'.join(sorted((SENDER, seat)))}#{seq}":
                    raise BenchError(f"the {side} side saw {ref}, not the message just sent (#{seq})")
                return float(at) - start
            return once

        def rounds(side: str, count: int):
            return lambda: [push(side)() for _ in range(count)]

        per_round = max(1, s.wakes // s.rounds)
        progress(f"SDK push: {s.rounds} rounds of {per_round} sends {s.wake_gap * 1000:g} ms apart to the bare "
                 "subscriber and to AgentRunners with a sync and an async handler, alternating")
        for side in SIDES:
            rounds(side, WARMUP)()
        found = alternate(s.rounds, *(rounds(side, per_round) for side in SIDES))
    latency = {side: sorted(x for r in runs for x in r) for side, runs in zip(SIDES, found)}
    bare50 = _percentile(latency["bare"], 0.50) * 1e3
    bare99 = _percentile(latency["bare"], 0.99) * 1e3
    figures = []
    for side, how in (("runner", "sync handler"), ("runner-async", "async handler")):
        p50 = _percentile(latency[side], 0.50) * 1e3
        graded = side == "runner"
        figures += [
            Figure(f"push to AgentRunner handler p50, {how}", "ms", p50, bare50, "bare Unix-socket push",
                   f"<= {PUSH_GOAL_RATIO:g}x" if graded else "", p50 <= PUSH_GOAL_RATIO * bare50 if graded else None),
            Figure(f"push to AgentRunner handler p99, {how}", "ms", _percentile(latency[side], 0.99) * 1e3, bare99,
                   "bare Unix-socket push"),
        ]
    return figures
