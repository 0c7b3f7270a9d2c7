"""Drive the real opencode against the scripted model, and wire a workspace for it as `agora setup` would.

Facts used (opencode-ai 1.18.33; its program is a Bun-compiled binary whose
bundled JavaScript was read with strings(1), and opencode.ai/docs/plugins):
- Plugins are JS/TS modules in `<workspace>/.opencode/plugins/` (or
  `plugin/`), each loaded at start; every exported function is called with
  `{client, project, directory, worktree, serverUrl, $}` and returns hooks.
  Loaded from `{plugin,plugins}/*.{ts,js}` of every `.opencode` directory.
- The `event` hook sees every bus event, called without being awaited. A turn's
  end is `session.status` with `{type: "idle"}` followed by `session.idle
  {sessionID}`. There is no stop hook with a return contract: a plugin
  continues a session by prompting it, `client.session.promptAsync({path:
  {id}, body: {parts: [{type: "text", text}]}})`, which adds a user message and
  runs the loop (POST /session/{id}/prompt_async). Prompted while the session
  is busy, the message joins the running loop at its next model request
  (measured: it arrived with the pending tool result).
- `opencode run` ends at its session's first idle status, so a follow-up
  prompted at idle is never run there; a long-lived opencode (the TUI,
  `opencode serve`) runs it. `dispose` is called on the hooks at shutdown.
- Any OpenAI-compatible endpoint is a provider: `provider.<id>.npm`
  "@ai-sdk/openai-compatible" (bundled) with `options.baseURL`.
- Offline, opencode installs `@opencode-ai/plugin` into each `.opencode`
  directory with npm and waits (~70 s here) for that to fail before loading
  plugins; `npm_config_offline=true` makes it fail at once.
  OPENCODE_DISABLE_AUTOUPDATE, OPENCODE_DISABLE_MODELS_FETCH (models.dev),
  OPENCODE_DISABLE_LSP_DOWNLOAD and OPENCODE_DISABLE_SHARE keep it off the
  network otherwise.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import urllib.request
from pathlib import Path

from tests.harness.install import binary

PROVIDER, MODEL = "scripted", "m"

def wire(workspace: Path, agent: str, home: Path, listen: list[str] | None = None,
         backstop: list[str] | None = None, start: list[str] | None = None) -> Path:
    """Wire the workspace with `agora setup --harness opencode`, its files untouched; a test that swaps in
    a probe command (to prove opencode's own behaviour) then has setup's own plugin source made again with
    that command in place of setup's."""
    from agora_setup import opencode_plugin
    from agora_setup.harnesses import Seat, opencode as wired
    from agorad.surface import wiring
    from tests.harness.wire import wire as agora_setup

    agora_setup("opencode", workspace, agent, home)
    plugin = workspace / wired.PLUGIN
    if listen is not None or backstop is not None or start is not None:
        seat = Seat(agent=agent, home=home, exe=wiring.agora_executable(), workspace=workspace)
        setup_listen, setup_backstop, setup_start = wired.plugin_commands(seat)
        plugin.write_text(opencode_plugin.source(agent, setup_listen if listen is None else listen,
                                                 setup_backstop if backstop is None else backstop,
                                                 setup_start if start is None else start))
    return plugin


def environment(model_url: str, private: Path) -> dict[str, str]:
    """Private HOME and XDG dirs, the scripted model as the only provider, and every download off."""
    home = private / "opencode-home"
    config = home / ".config"
    (config / "opencode").mkdir(parents=True, exist_ok=True)
    user_config = {
        "$schema": "https://opencode.ai/config.json",
        "model": f"{PROVIDER}/{MODEL}", "small_model": f"{PROVIDER}/{MODEL}",
        "autoupdate": False, "share": "disabled",
        "provider": {PROVIDER: {"npm": "@ai-sdk/openai-compatible", "name": "Scripted model",
                                "options": {"baseURL": f"{model_url}/v1", "apiKey": "scripted-model-key"},
                                "models": {MODEL: {"name": MODEL, "tool_call": True}}}},
    }
    (config / "opencode" / "opencode.json").write_text(json.dumps(user_config, indent=2))
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(config),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        "npm_config_offline": "true",
        # The agora under test, if the test run imports it from elsewhere: hooks run `agora` with this env.
        **({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}),
    }


def run(workspace: Path, env: dict, prompt: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """One `opencode run` in `workspace`: it ends when its session first goes idle."""
    argv = [str(binary("opencode")), "run", prompt]
    try:
        return subprocess.run(argv, cwd=workspace, env=env, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"opencode run did not finish within {timeout}s; stderr so far: {exc.stderr!r}") from None


class Server:
    """`opencode serve` in a workspace: a long-lived opencode whose sessions idle between turns, as the TUI's do.

    Driven over its HTTP API: POST /session, POST /session/{id}/prompt_async.
    """

    LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")

    def __init__(self, workspace: Path, env: dict, timeout: float = 60):
        argv = [str(binary("opencode")), "serve", "--port", "0", "--hostname", "127.0.0.1"]
        self.proc = subprocess.Popen(argv, cwd=workspace, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.output: list[str] = []
        found = threading.Event()
        self.url = ""

        def drain() -> None:
            for line in self.proc.stdout:
                self.output.append(line)
                match = self.LISTENING.search(line)
                if match and not found.is_set():
                    self.url = match.group(1)
                    found.set()
            found.set()

        threading.Thread(target=drain, daemon=True).start()
        if not found.wait(timeout) or not self.url:
            self.stop()
            raise AssertionError(f"opencode serve did not listen within {timeout}s: {''.join(self.output)[-2000:]}")

    def call(self, method: str, path: str, body: dict | None = None) -> dict | None:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            raw = answer.read()
        return json.loads(raw) if raw else None

    def new_session(self) -> str:
        return self.call("POST", "/session", {})["id"]

    def prompt(self, session: str, text: str) -> None:
        self.call("POST", f"/session/{session}/prompt_async", {"parts": [{"type": "text", "text": text}]})

    def stop(self) -> None:
        """SIGTERM the server's process group (the plugin's children share it), then wait."""
        try:
            os.killpg(self.proc.pid, 15)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, 9)
            self.proc.wait(timeout=10)
