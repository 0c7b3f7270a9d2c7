"""Drive the real Codex CLI (`codex exec`) against the scripted model, from a private CODEX_HOME.

Codex speaks only the Responses API, to a provider declared in config.toml.
Project-local config (.codex/hooks.json) is read only for a project trusted
in CODEX_HOME's config, and each hook only when trusted itself: the tests
trust the workspace in the private config and bypass hook trust per run with
--dangerously-bypass-hook-trust, which a user's real setup does not do.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import threading
import time
from pathlib import Path

from tests.harness.install import binary

PROVIDER = "scripted"
KEY_VARIABLE = "SCRIPTED_MODEL_KEY"
# Test-side flags: the model's shell runs unsandboxed (the workspace's hooks and commands reach the
# hub's socket outside it), and hook trust is bypassed for the test, as said above.
EXEC_FLAGS = ["--skip-git-repo-check", "--sandbox", "danger-full-access", "--dangerously-bypass-hook-trust"]


def _toml(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def config(model_url: str, workspace: Path) -> str:
    """config.toml for a private CODEX_HOME: the scripted provider, nothing that phones home, the workspace trusted."""
    return "\n".join([
        f"model = {_toml('scripted')}",
        f"model_provider = {_toml(PROVIDER)}",
        "check_for_update_on_startup = false",
        "",
        f"[model_providers.{PROVIDER}]",
        f"name = {_toml('scripted model')}",
        f"base_url = {_toml(model_url + '/v1')}",
        'wire_api = "responses"',
        f"env_key = {_toml(KEY_VARIABLE)}",
        "",
        "[features]",
        "plugins = false",
        "",
        "[analytics]",
        "enabled = false",
        "",
        "[feedback]",
        "enabled = false",
        "",
        "[otel]",
        'exporter = "none"',
        "",
        f"[projects.{_toml(str(workspace))}]",
        'trust_level = "trusted"',
        "",
    ])


def environment(model_url: str, private: Path, workspace: Path) -> dict[str, str]:
    codex_home = private / "codex-home"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(config(model_url, workspace))
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(private),
        "CODEX_HOME": str(codex_home),
        KEY_VARIABLE: "scripted-model-key",
    }


def exec_turn(workspace: Path, env: dict, prompt: str, timeout: float = 60,
              extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """One `codex exec` turn in `workspace`, hooks and all, waited for; `extra`: more flags before the prompt."""
    argv = [str(binary("codex")), "exec", *EXEC_FLAGS, *extra, prompt]
    try:
        return subprocess.run(argv, cwd=workspace, env=env, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"codex exec did not finish within {timeout}s; the end of its stderr: {_tail(exc.stderr)!r}") from None


def _tail(output, limit: int = 2000) -> str:
    """The end of a process's output: a harness looping on a blocking hook writes megabytes."""
    text = output.decode(errors="replace") if isinstance(output, bytes) else (output or "")
    return text[-limit:]


# The TUI tells the terminal its state in an OSC 7501 sequence: `state=working` while it starts its
# MCP servers or runs a turn, `state=idle` when it waits for the user (0.171, measured).
_IDLE = b"\x1b]7501;state=idle"
_WORKING = b"\x1b]7501;state=working"
_BLOCKED = b"\x1b]7501;state=blocked"  # `...:kind=permission` under an approval prompt
# Terminal queries the TUI makes at start and the answers a terminal would give.
_ANSWERS = {b"\x1b[6n": b"\x1b[1;1R", b"\x1b[c": b"\x1b[?62;c", b"\x1b[?u": b"\x1b[?0u"}


class Tui:
    """The interactive Codex (no subcommand) in a pseudo-terminal of 120x40: what a user runs.

    Unlike `codex exec` (approval: never), it runs under the approval policy a
    trusted workspace gets, so a tool call that wants approval shows a prompt
    and waits for a key. A thread drains the terminal and answers its queries.
    """

    def __init__(self, workspace: Path, env: dict):
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        argv = [str(binary("codex")), *EXEC_FLAGS[1:]]  # the TUI knows no --skip-git-repo-check
        self.proc = subprocess.Popen(argv, cwd=workspace, env={**env, "TERM": "xterm-256color"}, stdin=slave,
                                     stdout=slave, stderr=slave, start_new_session=True)
        os.close(slave)
        self._master = master
        self._screen = bytearray()
        self._changed = threading.Condition()
        threading.Thread(target=self._drain, daemon=True).start()

    def wait_idle(self, timeout: float = 30) -> None:
        """Until the TUI has started and gone idle, waiting for the user. With a required MCP server (as
        setup writes agora's) it starts the server before it first says anything, so `idle` may come with no
        `working` before it; without one, it says `working` while starting servers, then `idle`."""
        def idle(screen: bytes) -> bool:
            return screen.rfind(_IDLE) > screen.rfind(_WORKING)
        self._wait(idle, timeout, "the TUI to start and go idle")

    def submit(self, text: str, timeout: float = 10) -> None:
        """Type `text`, wait for its echo, press Enter (a paste with Enter in the same burst is not sent)."""
        os.write(self._master, text.encode())
        self._wait(lambda screen: text.encode() in screen, timeout, f"the echo of {text!r}")
        os.write(self._master, b"\r")

    def blocked(self) -> bool:
        """Whether the TUI has waited on the user mid-turn (an approval prompt: `state=blocked:...:kind=permission`)."""
        with self._changed:
            return _BLOCKED in self._screen

    def text(self) -> str:
        """What the TUI drew, escape sequences out: for a failure's message."""
        with self._changed:
            raw = bytes(self._screen)
        plain = re.sub(rb"\x1b\[[0-9;?<>=]*[A-Za-z$]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)", b" ", raw)
        return re.sub(r"\s+", " ", plain.decode(errors="replace"))

    def kill(self) -> None:
        """Everything it started (its MCP server and hooks share its process group)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=10)
        os.close(self._master)

    def _wait(self, predicate, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        with self._changed:
            while not predicate(bytes(self._screen)):
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise AssertionError(f"no {what} within {timeout}s (exit {self.proc.poll()}); "
                                         f"the screen's end: {self.text()[-1500:]!r}")
                self._changed.wait(min(left, 0.5))

    def _drain(self) -> None:
        while True:
            try:
                ready, _, _ = select.select([self._master], [], [], 0.5)
                data = os.read(self._master, 65536) if ready else b""
            except OSError:
                return  # the terminal closed
            if not data:
                if self.proc.poll() is not None:
                    return
                continue
            for query, answer in _ANSWERS.items():
                if query in data:
                    os.write(self._master, answer)
            with self._changed:
                self._screen.extend(data)
                self._changed.notify_all()
