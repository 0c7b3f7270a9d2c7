"""Record tests/drive/streams/ again from the real Claude Code and Codex CLIs: `python -m tests.drive.record_streams`.

Each case runs the adapter's own command line (agora_setup.harnesses.<name>.DRIVE)
in a workspace wired by `agora setup` on a real hub, against the scripted model
(tests/harness/model_server.py), and keeps the turn's stdout with local paths
scrubbed. It needs the CLIs in .cache/harness (`python -m tests.harness.install
claude codex`); run it under `unshare -n` (as `make test-harness` does) to be
sure nothing leaves the machine.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from agora_setup.harnesses import drivable
from agora_setup.harnesses.turns import Turn, environment
from agorad.surface import wiring
from tests.harness import claude, codex
from tests.harness.install import binary
from tests.harness.model_server import ScriptedModel
from tests.harness.wire import wire
from tests.hubproc import Hub, short_home

HERE = Path(__file__).parent / "streams"
RATE_LIMITED = {"type": "error", "error": {"type": "rate_limit_error", "message": "This request would exceed your rate limit."}}
OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
SERVER_ERROR = {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}
TOO_LONG = {"type": "error", "error": {"type": "invalid_request_error",
                                       "message": "prompt is too long: 215000 tokens > 200000 maximum"}}
OPENAI_429 = {"error": {"message": "Rate limit reached for requests", "type": "requests", "param": None,
                        "code": "rate_limit_exceeded"}}
OPENAI_500 = {"error": {"message": "The server had an error while processing your request.", "type": "server_error",
                        "param": None, "code": None}}
OPENAI_CONTEXT = {"error": {"message": "Your input exceeds the context window of this model.",
                            "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}}
NO_RETRIES = ["-c", "model_providers.scripted.request_max_retries=0", "-c", "model_providers.scripted.stream_max_retries=0"]


@dataclass
class Case:
    name: str
    harness: str
    replies: list  # the scripted model's replies; "INBOX" in a shell reply is the seat's `agora inbox`
    resume: bool = False  # record the second of two turns, the first's session resumed
    args: tuple[str, ...] = ()
    env: dict = field(default_factory=dict)
    session: str | None = None  # resume this id without a first turn


INBOX = {"shell": "INBOX"}
CASES = [
    Case("claude-new", "claude", [INBOX, {"tool": "check_inbox"}, {"text": "all done"}]),
    Case("claude-resume", "claude", [{"text": "first"}, {"text": "resumed fine"}], resume=True),
    Case("claude-429", "claude", [{"status": 429, "body": RATE_LIMITED}] * 2, env={"CLAUDE_CODE_MAX_RETRIES": "1"}),
    Case("claude-529", "claude", [{"status": 529, "body": OVERLOADED}], env={"CLAUDE_CODE_MAX_RETRIES": "0"}),
    Case("claude-500", "claude", [{"status": 500, "body": SERVER_ERROR}], env={"CLAUDE_CODE_MAX_RETRIES": "0"}),
    Case("claude-context", "claude", [{"status": 400, "body": TOO_LONG}], env={"CLAUDE_CODE_MAX_RETRIES": "0"}),
    Case("claude-no-session", "claude", [], session="1b0d7c52-9a6e-4c5c-9f39-8f0a0f0a0f0a"),
    Case("codex-new", "codex", [INBOX, {"tool": "check_inbox"}, {"text": "all done"}]),
    Case("codex-resume", "codex", [{"text": "first"}, INBOX, {"text": "resumed fine"}], resume=True),
    Case("codex-429", "codex", [{"status": 429, "body": OPENAI_429}], args=tuple(NO_RETRIES)),
    Case("codex-500", "codex", [{"status": 500, "body": OPENAI_500}], args=tuple(NO_RETRIES)),
    Case("codex-context", "codex", [{"status": 400, "body": OPENAI_CONTEXT}], args=tuple(NO_RETRIES)),
]


def record(case: Case) -> str:
    home = short_home()
    hub = Hub(home).start()
    try:
        hub.add_agent("peer", liveness_mode="always-on")
        workspace = home.parent / "ws"
        workspace.mkdir()
        wire(case.harness, workspace, "seat", home)
        inbox = wiring.shell(wiring.inbox(wiring.agora_executable(), "seat", home))
        replies = [{"shell": inbox} if reply is INBOX else reply for reply in case.replies]
        with ScriptedModel(replies) as model:
            env = (claude.environment(model.url, home.parent / "private") if case.harness == "claude"
                   else codex.environment(model.url, home.parent / "private", workspace))
            env.update(case.env)
            session, out = case.session, ""
            for prompt in (["first", "again"] if case.resume else ["hello"]):
                resumed = session
                out, session = _turn(case, Turn(prompt, workspace, session=session, args=case.args), env)
                if resumed and case.resume and session != resumed:
                    raise AssertionError(f"{case.name}: resumed {resumed} but the turn ran in {session}")
        return scrub(out, home.parent)
    finally:
        hub.stop()
        shutil.rmtree(home.parent, ignore_errors=True)


def _turn(case: Case, turn: Turn, env: dict) -> tuple[str, str | None]:
    drive = drivable(case.harness)
    done = subprocess.run(drive.argv(str(binary(case.harness)), turn), cwd=turn.workspace,
                          env={**env, **environment(drive, turn)}, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=120)
    reader = drive.reader()
    for line in done.stdout.splitlines():
        reader.feed(line)
    return done.stdout, reader.finish(done.returncode, done.stderr).session


def scrub(text: str, private: Path) -> str:
    text = text.replace(wiring.agora_executable(), "/usr/local/bin/agora").replace(str(private), "/tmp/agtXXXX")
    return re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", text)


def main(names: list[str]) -> int:
    for case in CASES:
        if names and case.name not in names:
            continue
        (HERE / f"{case.name}.jsonl").write_text(record(case))
        print(f"recorded {case.name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
