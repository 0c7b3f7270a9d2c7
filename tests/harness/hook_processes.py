"""The processes a harness's hooks leave behind, ended by pid when a test or the bench is done with a hub."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import psutil


def end(home: Path, spare: set[int]) -> None:
    """End the processes a harness's hooks started on `home` (found by it in their command line), by pid.

    A hook listener runs in its own process group and may outlive its session,
    with a wait of hours: nothing else would end it.
    """
    spare = spare | {os.getpid()}
    mine = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        if process.info["pid"] not in spare and str(home) in " ".join(process.info["cmdline"] or ()):
            mine.append(process)
    for process in mine:
        try:
            process.send_signal(signal.SIGTERM)
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(mine, timeout=5)
    for process in alive:
        process.kill()
