"""A seat on "another host": a home of its own, wired by `agora setup --url URL --key-stdin` against a hub's remote port."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

from tests.hubproc import AGORA


def free_port() -> int:
    """A loopback port free now: a hub that restarts on it keeps the URL its seats were wired with."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def seat_env() -> dict:
    """The seat host's environment as a harness gives it: no AGORA_HOME, AGORA_KEY or AGORA_URL."""
    return {k: v for k, v in os.environ.items() if k not in ("AGORA_HOME", "AGORA_KEY", "AGORA_URL")}


def remote_setup(*args: str, cwd: Path, key: str | None = None, code: int = 0) -> subprocess.CompletedProcess:
    """`agora setup` as on the seat's host, the key (if any) on stdin only."""
    done = subprocess.run([AGORA, "setup", *args], cwd=cwd, capture_output=True, text=True, env=seat_env(),
                          input=key, timeout=30)
    assert done.returncode == code, f"agora setup {' '.join(args)} -> {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def wire_remote_seat(url: str, key: str, workspace: Path, seat_home: Path, agent: str = "alice",
                     harness: str = "claude") -> dict:
    """Wire `agent`'s workspace for `harness` (its directory, .claude/ or .codex/, made by the caller) to the
    hub at `url`; setup's report."""
    done = remote_setup(agent, "--harness", harness, "--url", url, "--key-stdin", "--home", str(seat_home),
                        "--json", cwd=workspace, key=key + "\n")
    return json.loads(done.stdout)
