"""Wire a workspace's harness for a seat the way a user does: `agora setup`, the real CLI, files untouched after."""

from __future__ import annotations

import subprocess
from pathlib import Path

from agorad.surface import wiring


def wire(harness: str, workspace: Path, agent: str, home: Path) -> None:
    """`agora setup AGENT --harness HARNESS --dir WORKSPACE --home HOME`; registers the seat if needed."""
    argv = [wiring.agora_executable(), "setup", agent, "--harness", harness, "--dir", str(workspace),
            "--home", str(home), "--mode", "always-on"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"agora setup exited {done.returncode}\nstdout: {done.stdout}\nstderr: {done.stderr}"
