"""Does the harness running this hook wait for it? (`agora listen --background-only`)

Claude Code runs an `asyncRewake` hook in the background, and wakes the idle
session when it exits 2, only in a session that stays open: interactive, or
`-p` with `--input-format stream-json`. In plain `-p` (print mode) it runs the
same hook in the foreground and waits for it: a SessionStart listener then
holds the turn before its first model request, and a Stop listener holds the
exit, each up to its --max-wait (measured with the real CLI, tests/harness/).
The hook's environment and stdin are the same in both modes; only Claude's own
command line tells them apart, so we read it from /proc (Linux; elsewhere this
says "no" and the listener arms, as before).
"""

from __future__ import annotations

import os

ANCESTORS = 4  # the hook runs under `sh -c` under Claude: a few steps up is enough
CLAUDE_NAMES = ("claude", "claude.exe")  # the native binary, and the name npm's install.cjs gives it


def harness_waits() -> bool:
    """True when the nearest Claude Code above this process runs in print mode without stream-json input."""
    pid = os.getppid()
    for _ in range(ANCESTORS):
        argv = _cmdline(pid)
        if not argv:
            return False
        if _is_claude(argv):
            return _print_mode(argv) and not _streams_input(argv)
        pid = _parent(pid)
        if pid is None or pid <= 1:
            return False
    return False


def _is_claude(argv: list[str]) -> bool:
    # argv[0] for the native binary; argv[1] for `node .../claude-code/cli.js` or a script named claude.
    return any(os.path.basename(word) in CLAUDE_NAMES or "claude-code" in word for word in argv[:2])


def _print_mode(argv: list[str]) -> bool:
    return "-p" in argv or "--print" in argv


def _streams_input(argv: list[str]) -> bool:
    if "--input-format=stream-json" in argv:
        return True
    return any(word == "--input-format" and following == "stream-json" for word, following in zip(argv, argv[1:]))


def _cmdline(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as source:
            raw = source.read()
    except OSError:
        return None
    return [word.decode(errors="replace") for word in raw.split(b"\0") if word]


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as source:
            stat = source.read()
    except OSError:
        return None
    # Fields after the command name, which is in parentheses and may hold spaces: state, then ppid.
    fields = stat[stat.rfind(b")") + 2:].split()
    return int(fields[1]) if len(fields) > 1 else None
