"""Helpers of tests/harness/test_drive.py: an ask to the seat, the hub's view of it, the model's answer, a driver.

The scripted answers use the commands and tools the driver's prompt names (agora_drive/prompt.py):
absolute `agora` commands with --home and --as, as agorad.surface.wiring renders them, or the
wired `agora mcp` server's tools.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from agora_drive.driver import Driver, Options
from agora_drive.ownership import Ownership
from agorad.surface import wiring
from tests.harness.conftest import PEER
from tests.harness.install import binary

TITLE = "review 0011?"
ANSWER = "0011 looks right to me"
DRIVE_MARK = "[agora drive]"


def ask(hub, agent: str) -> str:
    """PEER asks the seat in a DM: the seat owes a reply."""
    with hub.client(PEER) as peer:
        return peer.call("messages.send", target=f"@{agent}", title=TITLE, body="please look", ask=True,
                         to=[agent])["ref"]


def owed(hub, agent: str) -> int:
    with hub.client(agent) as seat:
        return seat.call("inbox.check", important=True)["owed_total"]


def unread(hub, agent: str) -> list[str]:
    with hub.client(agent) as seat:
        return [m["ref"] for c in seat.call("inbox.check")["channels"] for m in c["messages"]]


def dm_titles(hub) -> list[str]:
    """What PEER has unread: the seat's reply lands in their DM."""
    with hub.client(PEER) as peer:
        return [m["title"] for c in peer.call("inbox.check")["channels"] for m in c["messages"]]


def shell_answer(agent: str, home: Path, ref: str) -> list[dict]:
    """The model's turn through the harness's shell: the inbox, a reply to the ask, the ack, a last word."""
    exe = wiring.agora_executable()
    send = [exe, "send", *wiring.seat_args(agent, home), f"@{PEER}", "--reply-to", ref, ANSWER]
    return [{"shell": wiring.shell(wiring.inbox(exe, agent, home))},
            {"shell": wiring.shell(send)},
            {"shell": wiring.shell(wiring.ack_refs(exe, agent, home, [ref]))},
            {"text": "answered and acked"}]


def mcp_answer(ref: str) -> list[dict]:
    """The same turn through the wired `agora mcp` server's tools."""
    return [{"tool": "check_inbox", "input": {}},
            {"tool": "send_message", "input": {"target": f"@{PEER}", "title": ANSWER, "reply_to": ref}},
            {"tool": "ack_inbox", "input": {"refs": [ref]}},
            {"text": "answered and acked"}]


def user_texts(body: dict) -> list[str]:
    """Every text part of the user messages of a request: Anthropic's `messages`, the Responses API's `input`."""
    texts = []
    for message in [*(body.get("messages") or []), *(body.get("input") or [])]:
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        parts = [content] if isinstance(content, str) else content or []
        texts += [p if isinstance(p, str) else p.get("text", "") for p in parts if isinstance(p, (str, dict))]
    return texts


def driven_prompts(model) -> list[str]:
    """The user texts that begin with the driver's mark, from every main request (one per turn, repeated)."""
    return [t for s in model.main_requests() for t in user_texts(s.body) if t.startswith(DRIVE_MARK)]


# --- the driver as a process -----------------------------------------------------------------------

class DriverProcess:
    """`agora drive ...` in the workspace; a thread collects its stdout lines (only AGORA_DRIVE lines)."""

    def __init__(self, workspace: Path, env: dict, *args: str):
        argv = [wiring.agora_executable(), "drive", *args]
        self.proc = subprocess.Popen(argv, cwd=workspace, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.lines: list[str] = []
        self._queue: queue.Queue = queue.Queue()
        self._stderr: list[str] = []
        threading.Thread(target=self._drain, daemon=True).start()
        threading.Thread(target=lambda: self._stderr.extend(self.proc.stderr), daemon=True).start()

    def _drain(self) -> None:
        for line in self.proc.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def until(self, start: str, timeout: float = 60) -> str:
        """The next stdout line starting with `start`, waited for."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._queue.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {start!r} from the driver within {timeout}s: {self.lines}; "
                                     f"stderr: {self.stderr()[-2000:]}") from None
            if line is None:
                raise AssertionError(f"the driver ended (exit {self.proc.wait()}) before {start!r}: {self.lines}; "
                                     f"stderr: {self.stderr()[-2000:]}")
            self.lines.append(line)
            assert line.startswith("AGORA_DRIVE "), f"stdout carries only AGORA_DRIVE lines, got {line!r}"
            if line.startswith(start):
                return line

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM, then its last lines."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            raise AssertionError(f"the driver outlived SIGTERM by {timeout}s: {self.lines}") from None
        while (line := self._queue.get(timeout=5)) is not None:
            self.lines.append(line)
        return code

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=10)

    def stderr(self) -> str:
        return "".join(self._stderr)


def process_env(harness_env: dict) -> dict:
    """The harness's private environment plus what runs this worktree's agora (PYTHONPATH, when set), after
    the test's own (a sitecustomize in the harness's PYTHONPATH)."""
    env = dict(harness_env)
    paths = os.pathsep.join(filter(None, [harness_env.get("PYTHONPATH"), os.environ.get("PYTHONPATH")]))
    if paths:
        env["PYTHONPATH"] = paths
    return env


# --- the driver in this process --------------------------------------------------------------------

class Clock:
    def __init__(self, now: float = 1_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def in_process(seat, clock: Clock, harness: str = "claude", args: tuple[str, ...] = ()) -> Driver:
    options = Options(agent=seat.agent, home=seat.home, notify_dir=seat.home, harness=harness,
                      workspace=seat.workspace, executable=str(binary(harness)), turn_limit=90.0, grace=2.0,
                      args=args)
    return Driver(options, clock=clock)


@contextmanager
def owning(seat):
    """Own the seat as `agora drive` does (run()): its pidfile makes the wired listener and backstop stand down."""
    owner = Ownership(seat.home, seat.agent)
    owner.take(False)
    owner.announce(state="armed", reason="starting", harness="claude", turns=0, budget=12, until="-")
    try:
        yield owner
    finally:
        owner.release()
