"""A scripted stand-in for `claude`, `codex` and `cursor-agent`, for tests of agora drive and its adapters.

A test puts it on PATH under a harness's name with `install(bin_dir, role)` (a
small wrapper script), or runs it with AGORA_FAKE_HARNESS set to the role. It
first CHECKS its command line against what the adapter must send (print mode
and the stream format, the prompt after `--` or last, a resume naming a
session this fake issued, the unattended flags, stdin /dev/null) and exits 64
(EX_USAGE) saying what is wrong. An unknown flag gets the real CLI's own
answer (`error: unknown option ...` from claude, `error: unexpected argument
...` from codex), and `--help` and Claude's missing `--verbose` answer as the
real ones do, so preflights can be tested too; none of these uses a turn.

Then it plays the next behaviour of a script, a JSON list in the file named by
AGORA_FAKE_SCRIPT (one entry per turn, a name or {"do": name}, consumed in
order across runs), after recording the turn as one JSON line in the file
named by AGORA_FAKE_LOG (argv, the environment's keys, cwd, the session, the
behaviour): the test reads that log.

    ok            a correct stream: a session id and the terminal event, no tool call
    answer        really answers through the agora CLI (AGORA_FAKE_AGORA, else `agora` on PATH; --home
                  from AGORA_HOME; --as from AGORA_AGENT_ID when set): `inbox --json`, a `send --reply-to`
                  for each owed ask, `ack --all`; each command is a tool call in a good stream
    leave-debt    a good stream with tool calls (a real `inbox --json`), answering nothing
    crash         exit 3 after the session's first event, no terminal event
    hang          never ends: a grandchild that calls setsid() holds stdout open (its pid is in the log)
    429           the provider's rate limit, as the real harness reports it (measured streams)
    context-full  the context window overflowed, as the real harness reports it
    session-gone  (claude) a resume of a session it does not have: the result alone, exit 1 (the measured
                  stream claude-no-session.jsonl)
    no-terminal   exit 0 without the terminal event
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROLE_VARIABLE = "AGORA_FAKE_HARNESS"
SCRIPT_VARIABLE = "AGORA_FAKE_SCRIPT"
LOG_VARIABLE = "AGORA_FAKE_LOG"
AGORA_VARIABLE = "AGORA_FAKE_AGORA"
EX_USAGE = 64
ROLES = {"claude": "claude", "codex": "codex", "cursor": "cursor-agent"}  # role -> the program's name
BEHAVIOURS = ("ok", "answer", "leave-debt", "crash", "hang", "429", "context-full", "session-gone", "no-terminal")


class Misuse(Exception):
    """The adapter sent what the real harness would not take as a driven turn: exit 64 with this."""


class Answered(Exception):
    """The command line is one the real CLI answers by itself, spending no turn (help, a parse error)."""

    def __init__(self, status: int, stdout: str = "", stderr: str = ""):
        super().__init__(status)
        self.status, self.stdout, self.stderr = status, stdout, stderr


def install(bin_dir: Path, role: str, python: str = sys.executable) -> Path:
    """Write the wrapper that runs this fake as `role`'s program into bin_dir; returns its path."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    wrapper = bin_dir / ROLES[role]
    wrapper.write_text(f"#!/bin/sh\n{ROLE_VARIABLE}={role} exec {shlex.quote(python)} "
                       f"{shlex.quote(str(Path(__file__).resolve()))} \"$@\"\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return wrapper


# --- the command line -----------------------------------------------------------------------------

def _split(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """The words before `--`, and those after it (None when there is no `--`)."""
    if "--" not in argv:
        return argv, None
    cut = argv.index("--")
    return argv[:cut], argv[cut + 1:]


def _options(argv: list[str], known: dict[str, int], unknown_error) -> tuple[dict[str, list[str]], list[str]]:
    """Options (name -> values; arity -1 takes words up to the next option, as commander's variadic
    options do) and the positional words."""
    found: dict[str, list[str]] = {}
    positional: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if not word.startswith("-") or word == "-":
            positional.append(word)
            continue
        if word not in known:
            raise unknown_error(word)
        values = found.setdefault(word, [])
        if known[word] == -1:
            while i < len(argv) and not argv[i].startswith("-"):
                values.append(argv[i])
                i += 1
            continue
        if i + known[word] > len(argv):
            raise unknown_error(word, missing=True)
        values += argv[i:i + known[word]]
        i += known[word]
    return found, positional


def _claude_unknown(word: str, missing: bool = False) -> Answered:
    said = f"error: option '{word}' argument missing" if missing else f"error: unknown option '{word}'"
    return Answered(1, stderr=said + "\n")


def _codex_unknown(word: str, missing: bool = False) -> Answered:
    said = f"error: a value is required for '{word}'" if missing else f"error: unexpected argument '{word}' found"
    return Answered(2, stderr=said + "\n\nFor more information, try '--help'.\n")


def _help(role: str, known: dict[str, int]) -> Answered:
    flags = "\n".join(f"  {flag}" for flag in sorted(known))
    return Answered(0, stdout=f"Usage: {ROLES[role]} [options] [prompt]\n\nOptions:\n{flags}\n")


CLAUDE_FLAGS = {"-p": 0, "--print": 0, "--output-format": 1, "--verbose": 0, "--allowedTools": -1, "--resume": 1,
                "--model": 1, "--max-turns": 1, "--help": 0}
CODEX_FLAGS = {"--json": 0, "--skip-git-repo-check": 0, "-c": 1, "--config": 1, "--model": 1, "-m": 1, "--help": 0}
CURSOR_FLAGS = {"-p": 0, "--print": 0, "--output-format": 1, "--force": 0, "--approve-mcps": 0, "--trust": 0,
                "--workspace": 1, "--resume": 1, "--model": 1, "--help": 0}


def parse_claude(argv: list[str]) -> tuple[str, str | None]:
    head, prompt = _split(argv)
    options, positional = _options(head, CLAUDE_FLAGS, _claude_unknown)
    if "--help" in options:
        raise _help("claude", CLAUDE_FLAGS)
    if "-p" not in options and "--print" not in options:
        raise Misuse("claude was not run in print mode (-p)")
    if options.get("--output-format") != ["stream-json"]:
        raise Misuse(f"claude's --output-format is {options.get('--output-format')}, not stream-json")
    if prompt is not None and not "".join(prompt).strip() and not positional:  # before --verbose (measured, 2.1.197)
        raise Answered(1, stderr="Error: Input must be provided either through stdin or as a prompt argument "
                                 "when using --print\n")
    if "--verbose" not in options:  # the real message, before any hook or model request (measured, 2.1.197)
        raise Answered(1, stderr="Error: When using --print, --output-format=stream-json requires --verbose\n")
    allowed = options.get("--allowedTools", [])
    if "mcp__agora" not in allowed:
        raise Misuse(f"claude's --allowedTools {allowed} lack mcp__agora")
    if not any(rule.startswith("Bash(/") and rule.endswith("/agora *)") for rule in allowed):
        raise Misuse(f"claude's --allowedTools {allowed} lack Bash(<absolute agora> *)")
    if prompt is None or positional:
        raise Misuse(f"claude's prompt must be the one word after `--`; before it: {positional}")
    return _one_prompt(prompt), _last(options.get("--resume"))


def parse_codex(argv: list[str]) -> tuple[str, str | None]:
    if not argv or argv[0] != "exec":
        raise Misuse(f"codex was run as {argv[:2]}, not `codex exec`")
    resume = len(argv) > 1 and argv[1] == "resume"
    head, prompt = _split(argv[2 if resume else 1:])
    options, positional = _options(head, CODEX_FLAGS, _codex_unknown)
    if "--help" in options:
        raise _help("codex", CODEX_FLAGS)
    for flag in ("--json", "--skip-git-repo-check"):
        if flag not in options:
            raise Misuse(f"codex exec was run without {flag}")
    if 'approval_policy="never"' not in options.get("-c", []):
        raise Misuse('codex exec was run without -c approval_policy="never": an approval would wait for nobody')
    if prompt is None:
        raise Misuse("codex's prompt does not follow `--`")
    if resume and len(positional) != 1:
        raise Misuse(f"codex exec resume wants exactly one thread id before `--`, got {positional}")
    if not resume and positional:
        raise Misuse(f"codex exec (a new thread) got positional words before `--`: {positional}")
    return _one_prompt(prompt), positional[0] if resume else None


def parse_cursor(argv: list[str]) -> tuple[str, str | None]:
    options, positional = _options(argv, CURSOR_FLAGS, _claude_unknown)
    if "--help" in options:
        raise _help("cursor", CURSOR_FLAGS)
    if "-p" not in options and "--print" not in options:
        raise Misuse("cursor-agent was not run in print mode (-p)")
    if options.get("--output-format") != ["stream-json"]:
        raise Misuse(f"cursor-agent's --output-format is {options.get('--output-format')}, not stream-json")
    for flag in ("--force", "--approve-mcps", "--trust"):
        if flag not in options:
            raise Misuse(f"cursor-agent was run without {flag}: it would wait for an approval")
    if options.get("--workspace") != [os.getcwd()]:
        raise Misuse(f"cursor-agent's --workspace {options.get('--workspace')} is not its cwd {os.getcwd()}")
    return _one_prompt(positional), _last(options.get("--resume"))


def _one_prompt(words: list[str]) -> str:
    if len(words) != 1 or not words[0].strip():
        raise Misuse(f"wanted one non-empty prompt, got {words}")
    return words[0]


def _last(values: list[str] | None) -> str | None:
    return values[-1] if values else None


PARSERS = {"claude": parse_claude, "codex": parse_codex, "cursor": parse_cursor}


def stdin_is_devnull() -> bool:
    try:
        ours, null = os.fstat(0), os.stat(os.devnull)
    except OSError:
        return False
    return stat.S_ISCHR(ours.st_mode) and ours.st_rdev == null.st_rdev


# --- the script and the log -----------------------------------------------------------------------

class Log:
    """The turns played so far, one JSON line each; its length is the next script entry's index."""

    def __init__(self, path: Path):
        self.path = path

    def records(self) -> list[dict]:
        try:
            return [json.loads(line) for line in self.path.read_text().splitlines() if line.strip()]
        except FileNotFoundError:
            return []

    def turns(self) -> list[dict]:
        return [r for r in self.records() if "behaviour" in r]

    def note(self, record: dict) -> None:
        """A line that is not a turn (a grandchild's pid): the script's index ignores it."""
        with open(self.path, "a") as log:
            fcntl.flock(log, fcntl.LOCK_EX)
            log.write(json.dumps(record) + "\n")

    def claim(self, script: list, record: dict) -> str:
        """Take the next behaviour and append this turn's record, under a lock (turns may overlap in a test)."""
        with open(self.path, "a+") as log:
            fcntl.flock(log, fcntl.LOCK_EX)
            index = len(self.turns())
            if index >= len(script):
                raise Misuse(f"the script has {len(script)} turns; this is turn {index + 1}")
            entry = script[index]
            behaviour = entry if isinstance(entry, str) else entry.get("do")
            if behaviour not in BEHAVIOURS:
                raise Misuse(f"script entry {index} is {entry!r}; one of {BEHAVIOURS}")
            log.write(json.dumps({**record, "turn": index, "behaviour": behaviour}) + "\n")
            log.flush()
            return behaviour


def issued_sessions(log: Log) -> set[str]:
    return {r["session"] for r in log.turns() if r.get("session")}


# --- what each harness prints (shapes from the recorded streams, tests/drive/streams/) -------------

def emit(event: dict) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


class ClaudeStream:
    """Claude Code 2.1.197's stream-json (tests/drive/streams/claude-*.jsonl)."""

    def start(self, session: str) -> None:
        emit({"type": "system", "subtype": "init", "cwd": os.getcwd(), "session_id": session, "tools": ["Bash"],
              "mcp_servers": [{"name": "agora", "status": "connected"}], "claude_code_version": "fake"})

    def tool(self, session: str, command: str, output: str) -> None:
        call = f"toolu_{uuid.uuid4().hex[:8]}"
        emit({"type": "assistant", "session_id": session, "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": command}}]}})
        emit({"type": "user", "session_id": session, "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call, "content": output}]}})

    def finish(self, session: str, text: str) -> None:
        emit({"type": "assistant", "session_id": session, "message": {"role": "assistant",
                                                                       "content": [{"type": "text", "text": text}]}})
        emit({"type": "result", "subtype": "success", "is_error": False, "api_error_status": None, "result": text,
              "session_id": session, "permission_denials": []})

    def rate_limited(self, session: str) -> int:
        text = "API Error: Request rejected (429) · This request would exceed your rate limit."
        emit({"type": "system", "subtype": "api_retry", "attempt": 1, "error_status": 429, "error": "rate_limit",
              "session_id": session})
        return self._api_error(session, text, "rate_limit", 429)

    def context_full(self, session: str) -> int:
        text = "Prompt is too long · the request is ~215000 tokens (limit 200000)"
        return self._api_error(session, text, "invalid_request", 400)

    def session_gone(self, session: str) -> int:
        emit({"type": "result", "subtype": "error_during_execution", "is_error": True, "num_turns": 0,
              "session_id": session, "permission_denials": [],
              "errors": [f"No conversation found with session ID: {session}"]})
        return 1

    def _api_error(self, session: str, text: str, kind: str, status: int) -> int:
        emit({"type": "assistant", "session_id": session, "error": kind, "message": {
            "model": "<synthetic>", "role": "assistant", "content": [{"type": "text", "text": text}]}})
        emit({"type": "result", "subtype": "success", "is_error": True, "api_error_status": status, "result": text,
              "session_id": session, "permission_denials": []})
        return 1


class CodexStream:
    """Codex 0.171.0's `exec --json` events (tests/drive/streams/codex-*.jsonl)."""

    def start(self, session: str) -> None:
        emit({"type": "thread.started", "thread_id": session})
        emit({"type": "turn.started"})

    def tool(self, session: str, command: str, output: str) -> None:
        item = {"id": f"item_{uuid.uuid4().hex[:6]}", "type": "command_execution", "command": command}
        emit({"type": "item.started", "item": {**item, "aggregated_output": "", "exit_code": None,
                                                 "status": "in_progress"}})
        emit({"type": "item.completed", "item": {**item, "aggregated_output": output, "exit_code": 0,
                                                   "status": "completed"}})

    def finish(self, session: str, text: str) -> None:
        emit({"type": "item.completed", "item": {"id": "item_last", "type": "agent_message", "text": text}})
        emit({"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}})

    def rate_limited(self, session: str) -> int:
        return self._failed("exceeded retry limit, last status: 429 Too Many Requests")

    def context_full(self, session: str) -> int:
        return self._failed("Codex ran out of room in the model's context window. Start a new thread or clear "
                            "earlier history before retrying.")

    def _failed(self, message: str) -> int:
        emit({"type": "error", "message": message})
        emit({"type": "turn.failed", "error": {"message": message}})
        return 1


class CursorStream:
    """cursor-agent's stream-json as cursor.com/docs/cli/reference/output-format documents it; its failures
    as that page says (a non-zero exit, words on stderr, maybe no terminal event), in words of our own."""

    def start(self, session: str) -> None:
        emit({"type": "system", "subtype": "init", "apiKeySource": "env", "cwd": os.getcwd(), "session_id": session,
              "model": "fake", "permissionMode": "default"})

    def tool(self, session: str, command: str, output: str) -> None:
        call = f"call_{uuid.uuid4().hex[:8]}"
        emit({"type": "tool_call", "subtype": "started", "call_id": call, "session_id": session,
              "tool_call": {"shellToolCall": {"args": {"command": command}}}})
        emit({"type": "tool_call", "subtype": "completed", "call_id": call, "session_id": session,
              "tool_call": {"shellToolCall": {"args": {"command": command},
                                              "result": {"success": {"stdout": output, "exitCode": 0}}}}})

    def finish(self, session: str, text: str) -> None:
        emit({"type": "assistant", "session_id": session, "message": {"role": "assistant",
                                                                       "content": [{"type": "text", "text": text}]}})
        emit({"type": "result", "subtype": "success", "is_error": False, "result": text, "session_id": session})

    def rate_limited(self, session: str) -> int:
        sys.stderr.write("Error: 429 Too Many Requests: rate limit exceeded\n")
        return 1

    def context_full(self, session: str) -> int:
        sys.stderr.write("Error: Prompt is too long for this model's context window\n")
        return 1


STREAMS = {"claude": ClaudeStream, "codex": CodexStream, "cursor": CursorStream}


# --- the behaviours -------------------------------------------------------------------------------

def agora(*args: str) -> tuple[str, str]:
    """Run the real agora CLI on the seat's hub: (its command line, its stdout)."""
    exe = os.environ.get(AGORA_VARIABLE) or shutil.which("agora")
    if not exe:
        raise Misuse(f"no agora executable: set {AGORA_VARIABLE} or put agora on PATH")
    seat = ["--home", os.environ["AGORA_HOME"]] if os.environ.get("AGORA_HOME") else []
    if os.environ.get("AGORA_AGENT_ID"):
        seat += ["--as", os.environ["AGORA_AGENT_ID"]]
    argv = [exe, *args[:1], *seat, *args[1:]]
    done = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"{shlex.join(argv)} exited {done.returncode}: {done.stderr.strip()}")
    return shlex.join(argv), done.stdout


def answer(stream, session: str) -> int:
    command, listing = agora("inbox", "--json")
    stream.tool(session, command, listing)
    for ask in json.loads(listing).get("owed") or []:
        channel = ask["ref"].rsplit("#", 1)[0]
        target = f"@{ask['asker']}" if channel.startswith("dm:") else channel
        stream.tool(session, *agora("send", target, "--reply-to", ask["ref"], "answered by the fake harness"))
    stream.tool(session, *agora("ack", "--all"))
    stream.finish(session, "answered")
    return 0


def leave_debt(stream, session: str) -> int:
    stream.tool(session, *agora("inbox", "--json"))
    stream.finish(session, "read the inbox, answered nothing")
    return 0


def hang(stream, session: str) -> int:
    while True:  # the grandchild already holds stdout in its own session; this one waits to be killed
        time.sleep(3600)


def holder() -> subprocess.Popen:
    """A grandchild of the driver in a session of its own, holding our stdout: killing the turn's process
    group leaves it, and the pipe stays open until someone ends it."""
    return subprocess.Popen([sys.executable, "-c", "import os, time\nos.setsid()\nwhile True: time.sleep(3600)"],
                            stdin=subprocess.DEVNULL)


def play(behaviour: str, stream, session: str) -> int:
    if behaviour == "ok":
        stream.finish(session, "ok")
        return 0
    if behaviour == "answer":
        return answer(stream, session)
    if behaviour == "leave-debt":
        return leave_debt(stream, session)
    if behaviour == "crash":
        sys.stderr.write("fake harness: crashing as scripted\n")
        return 3
    if behaviour == "hang":
        return hang(stream, session)
    if behaviour == "429":
        return stream.rate_limited(session)
    if behaviour == "context-full":
        return stream.context_full(session)
    return 0  # no-terminal: the session started, then nothing


def main(argv: list[str]) -> int:
    role = os.environ.get(ROLE_VARIABLE) or next((r for r, name in ROLES.items() if Path(sys.argv[0]).name == name), "")
    if role not in PARSERS:
        sys.stderr.write(f"fake harness: run as one of {sorted(ROLES.values())} or set {ROLE_VARIABLE}\n")
        return EX_USAGE
    try:
        prompt, resumed = PARSERS[role](argv)
        if not stdin_is_devnull():
            raise Misuse("stdin is not /dev/null: a driven turn has nobody typing")
        log = Log(Path(os.environ[LOG_VARIABLE]))
        if resumed is not None and resumed not in issued_sessions(log):
            raise Misuse(f"resume of {resumed!r}, a session this fake never issued")
        script = json.loads(Path(os.environ[SCRIPT_VARIABLE]).read_text())
        session = resumed or str(uuid.uuid4())
        record = {"harness": role, "argv": argv, "env": sorted(os.environ), "cwd": os.getcwd(), "prompt": prompt,
                  "resumed": resumed, "session": session, "pid": os.getpid()}
        behaviour = log.claim(script, record)
    except Answered as answered:
        sys.stdout.write(answered.stdout)
        sys.stderr.write(answered.stderr)
        return answered.status
    except Misuse as misuse:
        sys.stderr.write(f"fake harness ({role}): {misuse}\n")
        return EX_USAGE
    stream = STREAMS[role]()
    if behaviour == "session-gone":
        return stream.session_gone(session)
    stream.start(session)
    if behaviour == "hang":
        log.note({"turn_of": session, "grandchild": holder().pid})
    try:
        return play(behaviour, stream, session)
    except RuntimeError as failed:  # an agora command of `answer` failed: say so, as a crashing harness would
        sys.stderr.write(f"fake harness: {failed}\n")
        return 70


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
