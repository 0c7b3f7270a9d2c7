"""Drive the real Claude Code CLI against the scripted model: one-shot `-p` turns and idle stream-json sessions.

Everything Claude writes (config, sessions, transcripts) goes under a private
HOME and CLAUDE_CONFIG_DIR per test. The environment turns off telemetry,
error reports, non-essential traffic and the auto-updater, so with the
network namespace of `make test-harness` its only peer is the scripted model.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from pathlib import Path

from tests.harness.install import binary

# Test-side permission, not wiring: as root Claude refuses --dangerously-skip-permissions, and in
# -p mode an unpermitted tool call is denied, so the test's command line allows the Bash tool.
ALLOW_BASH = ["--allowedTools", "Bash"]
STREAM_JSON = ["--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]


def environment(model_url: str, private: Path) -> dict[str, str]:
    """The environment for one test's Claude runs: its own HOME, config dir, and the scripted model."""
    home = private / "claude-home"
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "ANTHROPIC_BASE_URL": model_url,
        "ANTHROPIC_API_KEY": "scripted-model-key",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }


def print_turn(workspace: Path, env: dict, prompt: str, timeout: float = 90,
               allow: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """One `claude -p` turn in `workspace`, hooks and all, waited for; killed with its hooks if it overruns.

    `allow`: more tools for --allowedTools beside Bash (e.g. `mcp__agora`)."""
    argv = [str(binary("claude")), "-p", prompt, *ALLOW_BASH, *allow]
    proc = subprocess.Popen(argv, cwd=workspace, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        # Measured with 2.1.197: under -p even an asyncRewake hook runs synchronously, so a hook that
        # waits (a listener) holds the turn, at SessionStart before any model request.
        raise AssertionError(f"claude -p did not finish within {timeout}s (a hook that waits holds a -p turn: "
                             "under -p asyncRewake hooks run synchronously)") from None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


class Session:
    """An idle Claude session in stream-json input mode: stdin held open, as an interactive session holds it.

    Only in this mode does an asyncRewake hook run in the background and wake
    the session (in plain -p the hook runs synchronously and the turn waits).
    Stdout (stream-json events) is drained by a thread so Claude never blocks on it.
    """

    def __init__(self, workspace: Path, env: dict):
        argv = [str(binary("claude")), "-p", *STREAM_JSON, *ALLOW_BASH]
        self.proc = subprocess.Popen(argv, cwd=workspace, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, start_new_session=True)
        self.events: list[dict] = []
        self._stderr: list[bytes] = []
        threading.Thread(target=self._drain_stdout, daemon=True).start()
        threading.Thread(target=lambda: self._stderr.extend(self.proc.stderr), daemon=True).start()

    def say(self, text: str) -> None:
        """A user turn, as a stream-json input line."""
        line = {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": text}]}}
        self.proc.stdin.write((json.dumps(line) + "\n").encode())
        self.proc.stdin.flush()

    def end_input(self) -> None:
        """Close stdin: the session's user has gone; Claude finishes and exits."""
        if not self.proc.stdin.closed:
            self.proc.stdin.close()

    def stop(self, timeout: float = 15) -> int:
        """End the session: close stdin, then terminate its process group if it lingers."""
        self.end_input()
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.terminate()
            return self.proc.wait(timeout=timeout)

    def terminate(self) -> None:
        """SIGTERM Claude itself (not its process group: the hook's fate is what a test looks at)."""
        if self.proc.poll() is None:
            self.proc.terminate()

    def kill_group(self) -> None:
        """Cleanup: everything this session started, hooks included (they share its process group)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=10)

    def turns_ended(self) -> int:
        """Turns finished so far: stream-json `result` events (emitted once the Stop hooks let the turn end)."""
        return sum(1 for event in list(self.events) if event.get("type") == "result")

    def stderr(self) -> str:
        return b"".join(self._stderr).decode(errors="replace")

    def _drain_stdout(self) -> None:
        for raw in self.proc.stdout:
            try:
                self.events.append(json.loads(raw))
            except ValueError:
                self.events.append({"type": "unparsed", "line": raw.decode(errors="replace")})

