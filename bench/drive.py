"""The driver's figures: send to the harness's exec, beside `agora listen`'s send-to-wake; idle CPU.

One hub, three seats: `driven`, run by `agora drive --harness command --debounce 0` whose
scripted harness is a /bin/sh script that first appends `date +%s.%N` to a file (its first
action, about a millisecond after its exec) and then acks the seat's mail, so each turn
answers what woke it; `listened`, with a persistent `agora listen --debounce 0`; and a
sender on a raw socket. Rounds alternate: a DM to the listened seat, timed from the send's
reply to its AGORA_WAKE line; a DM to the driven seat, timed from the send's reply to the
harness's timestamp, then waited out to the driver's `turn_end` and its next armed line, so
each DM finds the driver asleep on its doorbell. Both are wall-clock (time.time), the
harness's clock being another process's. Goal: the driver's median within 50 ms of the
listener's.

Idle: the driver's CPU (psutil user+system) over a window after its last turn, beside the
bare inotify reader's (bench/bare_inotify.py) in the same window.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import time
from pathlib import Path

from bench.figures import Figure, alternate, progress
from bench.reception import BARE_SCRIPT, SETTLE, Lines, Sender, _process, send_frame
from bench.servers import BenchError, Hub, script_path

GOAL_MS = 50.0  # the driver's send-to-exec median, at most this above agora listen's send-to-wake
IDLE_GOAL_CPU = 0.001  # CPU seconds per idle second, as for the listener
DRIVEN, LISTENED, SENDER = "driven", "listened", "sender"
WARMUP = 2


def harness_script(path: Path, marks: Path, agora: str, home: Path) -> Path:
    path.write_text(f"""#!/bin/sh
date +%s.%N >> {marks}
exec {agora} ack --home {home} --as {DRIVEN} --all >/dev/null
""")
    path.chmod(0o700)
    return path


def figures(work: Path, s) -> list[Figure]:
    import psutil

    home = work / "drive"
    marks = work / "drive-marks"
    marks.touch()
    runs = max(3, s.drive_turns)
    progress(f"agora drive: send to the scripted harness's exec, {runs} turns, alternating with agora listen's "
             f"send-to-wake; then idle CPU over {s.reception_idle:g} s beside the bare inotify reader")
    with Hub(home, work / "drive-hub.log") as hub, contextlib.ExitStack() as stack:
        hub.start()
        keys = dict(hub.add_agents([DRIVEN, LISTENED, SENDER], "always-on"))
        agora = str(script_path("agora"))
        script = harness_script(work / "harness.sh", marks, agora, home)
        drive_log, listen_log = work / "drive.log", work / "drive-listen.log"
        driver = stack.enter_context(_process(
            [agora, "drive", "--home", str(home), "--as", DRIVEN, "--harness", "command", "--command", str(script),
             "--debounce", "0", "--budget", "100000"], drive_log))
        listener = stack.enter_context(_process(
            [agora, "listen", "--home", str(home), "--as", LISTENED, "--debounce", "0"], listen_log))
        bare_dir = work / "drive-bare"
        bare_dir.mkdir()
        (bare_dir / "f").touch()
        bare = stack.enter_context(_process([sys.executable, str(BARE_SCRIPT), str(bare_dir), str(bare_dir / "f")],
                                            work / "drive-bare.log"))
        said = Lines(driver, "agora drive", drive_log)
        heard = Lines(listener, "agora listen", listen_log)
        _expect(said, b"AGORA_DRIVE state=armed")
        _expect(heard, b"AGORA_LISTEN armed")
        _expect(Lines(bare, "the bare inotify reader"), b"ready")
        sender = Sender(hub.socket_path, SENDER, keys[SENDER])
        stack.callback(sender.close)

        def to_exec() -> float:
            before = marks.read_text().count("\n")
            sender.send(send_frame(DRIVEN))
            replied = time.time()
            _expect(said, b"AGORA_DRIVE state=turn")
            end = _expect(said, b"AGORA_DRIVE event=turn_end")
            if b"status=ok" not in end:
                raise BenchError(f"the scripted turn did not answer: {end[:200]!r}")
            _expect(said, b"AGORA_DRIVE state=armed")
            stamps = marks.read_text().splitlines()
            if len(stamps) != before + 1:
                raise BenchError(f"expected one harness start, found {len(stamps) - before}")
            return float(stamps[-1]) - replied

        def to_wake() -> float:
            sender.send(send_frame(LISTENED))
            replied = time.time()
            line, _ = heard.next()
            if not line.startswith(b"AGORA_WAKE "):
                raise BenchError(f"agora listen said {line[:200]!r}")
            return time.time() - replied

        for _ in range(WARMUP):
            to_exec(), to_wake()
        found = alternate(runs, to_exec, to_wake)
        drive_ms = statistics.median(found[0]) * 1e3
        listen_ms = statistics.median(found[1]) * 1e3

        watched = {"driver": psutil.Process(driver.pid), "bare": psutil.Process(bare.pid)}
        time.sleep(SETTLE)
        before = {name: p.cpu_times() for name, p in watched.items()}
        time.sleep(s.reception_idle)
        after = {name: p.cpu_times() for name, p in watched.items()}
        idle = {name: (after[name].user - before[name].user + after[name].system - before[name].system)
                / s.reception_idle for name in watched}
    return [
        Figure("agora drive: send to the harness's exec, median", "ms", drive_ms, listen_ms,
               "agora listen send-to-wake (same run)", f"<= +{GOAL_MS:g} ms", drive_ms - listen_ms <= GOAL_MS),
        Figure(f"idle driver CPU, {s.reception_idle:g} s", "cpu", idle["driver"], idle["bare"],
               "bare inotify reader (same window)", "~0", idle["driver"] < IDLE_GOAL_CPU),
    ]


def _expect(lines: Lines, start: bytes) -> bytes:
    """The next line that starts with `start`, skipping other lines of the same program."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line, _ = lines.next()
        if line.startswith(start):
            return line
    raise BenchError(f"{lines.what} never said {start!r}")
