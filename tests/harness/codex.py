"""Drive the real Codex CLI (`codex exec`) against the scripted model, from a private CODEX_HOME.

Codex speaks only the Responses API, to a provider declared in config.toml.
Project-local config (.codex/hooks.json) is read only for a project trusted
in CODEX_HOME's config, and each hook only when trusted itself: the tests
trust the workspace in the private config and bypass hook trust per run with
--dangerously-bypass-hook-trust, which a user's real setup does not do.
"""

from __future__ import annotations

import json
import os
import subprocess
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
