"""The commands a harness runs for a seat, rendered from one place into every artifact.

`agora setup` writes them into hook configs, rules and MCP entries; the
stop-hook backstop quotes them back to the model; tests compare against them.
Each is absolute (harnesses do not inherit the shell's PATH) and names the
home with --home (harnesses scrub the environment, AGORA_HOME included).
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from agorad.surface import settings
from agorad.surface.durations import format_duration
from agorad.surface.paths import listen_file

EXECUTABLE = "agora"


def agora_executable() -> str:
    """The absolute path of the `agora` being run (or installed beside this Python)."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name == EXECUTABLE and argv0.is_file():
        return os.path.abspath(argv0)
    beside = Path(sys.executable).parent / EXECUTABLE
    if beside.is_file():
        return str(beside.absolute())
    import shutil  # only when the usual places fail: a hook that renders a command pays for nothing else

    found = shutil.which(EXECUTABLE)
    if found:
        return os.path.abspath(found)
    raise FileNotFoundError("cannot find the `agora` executable to wire into hooks; install agora-hub so that "
                            "`agora` is beside its Python, or on PATH")


def seat_args(agent: str, home: Path) -> list[str]:
    return ["--home", str(home), "--as", agent]


def hook_listen(exe: str, agent: str, home: Path) -> list[str]:
    """The single-shot listener a SessionStart or Stop hook arms (Claude Code's asyncRewake).

    The seat's lock absorbs duplicate firings; the wait is long and the hook's
    timeout (settings.HOOK_TIMEOUT) longer, so an idle session stays armed.
    """
    return [exe, "listen", *seat_args(agent, home), "--once", "--important-only",
            "--max-wait", format_duration(settings.HOOK_MAX_WAIT),
            "--debounce", format_duration(settings.HOOK_DEBOUNCE),
            "--lock", str(listen_file(home, agent, "lock")),
            # Claude in plain -p waits for an asyncRewake hook: there the listener must not arm.
            "--background-only"]


def loop_listen(exe: str, agent: str, home: Path) -> list[str]:
    """One iteration of background reception's loop: no lock, so iterations never contend."""
    return [exe, "listen", *seat_args(agent, home), "--once", "--important-only",
            "--max-wait", format_duration(settings.LOOP_MAX_WAIT)]


def background_loop(exe: str, agent: str, home: Path) -> str:
    """The monitored background shell's command (Cursor): single-shots in a loop, stopped on a hard failure.

    Exit 0 (quiet) and 2 (woke) go round again after a pause; 1 (a hard failure:
    bad key, no notify file) ends the loop, since a tight error loop is worse than deafness.
    """
    once = shell(loop_listen(exe, agent, home))
    return f"while true; do {once}; [ $? -eq 1 ] && break; sleep {settings.LOOP_SLEEP}; done"


def backstop(exe: str, harness: str, agent: str, home: Path) -> list[str]:
    """The stop-hook backstop for a harness: `agora hook stop --harness H`."""
    return [exe, "hook", "stop", "--harness", harness, *seat_args(agent, home)]


def session_start(exe: str, harness: str, agent: str, home: Path) -> list[str]:
    """The session-start context hook for a harness: `agora hook start --harness H`."""
    return [exe, "hook", "start", "--harness", harness, *seat_args(agent, home)]


def mcp_server(exe: str, agent: str, home: Path) -> list[str]:
    """The MCP server a harness's MCP entry starts (.mcp.json, .cursor/mcp.json, .codex/config.toml)."""
    return [exe, "mcp", *seat_args(agent, home)]


def inbox(exe: str, agent: str, home: Path) -> list[str]:
    return [exe, "inbox", *seat_args(agent, home)]


def ack_all(exe: str, agent: str, home: Path) -> list[str]:
    return [exe, "ack", *seat_args(agent, home), "--all"]


def ack_refs(exe: str, agent: str, home: Path, refs: list[str]) -> list[str]:
    """Ack exactly these messages: what the backstop quotes, so mail that lands meanwhile stays unread."""
    return [exe, "ack", *seat_args(agent, home), *refs]


def reply(exe: str, agent: str, home: Path) -> list[str]:
    """A reply, with placeholders the model fills in: the channel (or @ID for a DM), the ref, the text."""
    return [exe, "send", *seat_args(agent, home), "TARGET", "--reply-to", "REF", "TEXT"]


def claim(exe: str, agent: str, home: Path, verb: str, *words: str) -> list[str]:
    """`agora claim VERB ...` as the seat: what a driven turn runs to open, show, receipt or close a claim."""
    return [exe, "claim", verb, *seat_args(agent, home), *words]


def shell(argv: list[str]) -> str:
    """A command line for a shell, each word quoted only where it must be."""
    return shlex.join(argv)
