"""Checks a driver makes at arm, before any wake, that spend no model request.

Each harness's `preflight` composes these: flags the user passed that would
take over the adapter's own, an MCP entry for agora that `agora mcp` could not
serve, and a run of the harness's own option parser that stops before it
starts a session.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from agora_setup.harnesses.common import MCP_NAME, mcp_installed

PROBE_TIMEOUT = 20.0  # seconds: an option parser answers in well under 1 s (claude 0.3 s, codex 0.05 s here)


@dataclass(frozen=True)
class Probe:
    status: int
    stdout: str
    stderr: str

    @property
    def said(self) -> str:
        """Everything it printed, stderr last: where a refusal is."""
        return (self.stdout + "\n" + self.stderr).strip()


def run(argv: list[str], workspace: Path, env: dict | None, timeout: float = PROBE_TIMEOUT) -> Probe | str:
    """Run a probe command line as a turn would run (workspace, stdin /dev/null); a str says why it could not.

    Its own process group, killed whole at the deadline: a probe that did not stop at the
    option parser must not leave a harness running."""
    try:
        proc = subprocess.Popen(argv, cwd=workspace, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
    except OSError as exc:
        return f"cannot run {argv[0]}: {exc.strerror or exc}"
    except ValueError as exc:  # a NUL byte in an argument the user gave
        return f"cannot run {argv[0]}: {exc}"
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return f"{argv[0]} did not stop at its option check within {timeout:g}s"
    return Probe(proc.returncode, out, err)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:  # a descendant that left the group may still hold the pipes: never wait for it
        proc.communicate(timeout=1)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def owned_flags(args: tuple[str, ...], owned: tuple[str, ...], harness: str) -> str | None:
    """Refuse --harness-arg flags the adapter sets itself: a second --output-format or --resume would
    change what the reader reads, or which session runs, behind the driver's back."""
    taken = sorted({arg.split("=", 1)[0] for arg in args if arg.split("=", 1)[0] in owned})
    if not taken:
        return None
    return f"{', '.join(taken)} {'is' if len(taken) == 1 else 'are'} set by agora drive for {harness}; " \
           "leave it out of --harness-arg"


def names_agora_server(text: str) -> bool:
    """Whether a JSON MCP config (Claude's .mcp.json, Cursor's .cursor/mcp.json) names agora's server.
    An invalid one names none: Claude ignores it silently (measured), so there is no server to serve."""
    import json

    try:
        return MCP_NAME in (json.loads(text).get("mcpServers") or {})
    except (ValueError, AttributeError, RecursionError):
        return False


def mcp_unserved(entry_in: Path, has_agora_entry=names_agora_server) -> str | None:
    """When `entry_in` (a harness's MCP config) names agora's server but `agora mcp` cannot start here.

    A harness runs on without a server that does not start, silently (common.mcp_installed; measured
    with Claude Code: a server not up in time leaves its tools out of the request), so the seat would
    run its turns without its mailbox tools."""
    try:
        text = entry_in.read_text()
    except OSError:
        return None
    if not has_agora_entry(text) or mcp_installed():
        return None
    return (f"{entry_in} names the {MCP_NAME!r} MCP server, but `agora mcp` cannot start: the optional `mcp` "
            "package is not installed (pip install 'agora-hub[mcp]'), or run `agora setup` again to drop the entry")
