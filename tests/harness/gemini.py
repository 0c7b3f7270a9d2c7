"""Drive the real Gemini CLI against the scripted model, and wire a workspace for it as `agora setup` would.

Facts used (from @google/gemini-cli 0.61.0 as installed: bundle/docs and the
bundled code, bundle/chunk-*.js):
- Project settings (and so hooks) load only in a trusted folder; folder trust
  is on by default in this version (headless: exit 55 "not running in a
  trusted directory"; `--skip-trust` or GEMINI_CLI_TRUST_WORKSPACE=true bypass
  it; docs/cli/trusted-folders.md).
- Project settings are `<workspace>/.gemini/settings.json`; hooks live under
  `"hooks"`, one list of matcher groups per event, each `{"hooks": [{"type":
  "command", "command", "name", "timeout" (milliseconds, default 60000)}]}`
  (docs/hooks/reference.md). A project hook is fingerprinted by name and
  command (core hooks/trustedHooks.js): a new or changed one prints a warning
  once, then runs.
- AfterAgent fires once per turn after the model's final answer; stdin has
  session_id, transcript_path, cwd, hook_event_name, timestamp, prompt,
  prompt_response, stop_hook_active. `{"decision": "block", "reason": R}` on
  stdout (exit 0), or exit 2 with R on stderr and nothing on stdout, sends R
  to the model as a new user message in the same run (core client.js
  sendMessageStream). The runner parses stdout first and falls back to
  stderr only when stdout is empty (core hooks/hookRunner.js).
- SessionStart (stdin adds `source`: startup|resume|clear) may answer
  `{"hookSpecificOutput": {"additionalContext": T}}`: headless, T is added to
  the first prompt; interactive, it is the first turn (docs/hooks/reference.md).
- Hooks run synchronously: the CLI waits for them (docs/hooks/index.md); there
  is no background hook.
- `GOOGLE_GEMINI_BASE_URL` (http allowed only for localhost) and
  `GEMINI_API_KEY` point it at the scripted model; `security.auth.selectedType`
  "gemini-api-key" picks API-key auth headless; `privacy.usageStatisticsEnabled`
  false and `general.enableAutoUpdate(Notification)` false keep it off the
  network (docs/reference/configuration.md). With an explicit `-m` model every
  request seen was the conversation's own (streamed, with tools).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.harness.install import binary

MODEL = "gemini-2.5-flash"


def environment(model_url: str, private: Path, workspace: Path) -> dict[str, str]:
    """A private HOME (Gemini keeps ~/.gemini: settings, trusted folders and hooks, chats) and the scripted model.

    The workspace is trusted the way a user trusts it ("Trust folder" in the
    interactive dialog writes ~/.gemini/trustedFolders.json): folder trust is
    on in 0.61.0, and headless Gemini refuses an untrusted folder (exit 55).
    """
    home = private / "gemini-home"
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    user_settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    }
    (home / ".gemini" / "settings.json").write_text(json.dumps(user_settings, indent=2))
    trusted = {str(workspace.resolve()): "TRUST_FOLDER"}
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps(trusted, indent=2))
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "GEMINI_API_KEY": "scripted-model-key",
        "GOOGLE_GEMINI_BASE_URL": model_url,
        # The agora under test, if the test run imports it from elsewhere: hooks run `agora` with this env.
        **({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}),
    }


def wire(workspace: Path, agent: str, home: Path, after_agent: list[dict] | None = None,
         session_start: list[dict] | None = None) -> Path:
    """Wire the workspace with `agora setup --harness gemini`, its files untouched; a test that swaps in
    probe hooks (to prove Gemini's own hook contract) then puts them in place of setup's handlers of
    that event (none: the event goes).
    """
    from tests.harness.wire import wire as agora_setup

    agora_setup("gemini", workspace, agent, home)
    path = workspace / ".gemini" / "settings.json"
    swaps = {event: handlers for event, handlers in (("AfterAgent", after_agent), ("SessionStart", session_start))
             if handlers is not None}
    if swaps:
        settings = json.loads(path.read_text())
        for event, handlers in swaps.items():  # setup's grouped form: {"hooks": [handler, ...]} per group
            if handlers:
                settings["hooks"][event] = [{"hooks": handlers}]
            else:
                settings["hooks"].pop(event, None)
        path.write_text(json.dumps(settings, indent=2) + "\n")
    return path


def turn(workspace: Path, env: dict, prompt: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """One headless `gemini -p` run in `workspace`, hooks and all; --yolo lets the shell tool run unasked."""
    argv = [str(binary("gemini")), "-p", prompt, "-m", MODEL, "--yolo"]
    try:
        return subprocess.run(argv, cwd=workspace, env=env, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"gemini -p did not finish within {timeout}s; stderr so far: {exc.stderr!r}") from None


def start(workspace: Path, env: dict, prompt: str) -> subprocess.Popen:
    """A `gemini -p` run left running (a test waits on the model's requests, then on the process)."""
    argv = [str(binary("gemini")), "-p", prompt, "-m", MODEL, "--yolo"]
    return subprocess.Popen(argv, cwd=workspace, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
