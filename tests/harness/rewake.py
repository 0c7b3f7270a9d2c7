"""An idle Claude session woken by its hook listener: the wake cycle scenario (b) repeats and the bench times.

One cycle: wait until the seat's hook listener is armed (its pidfile live,
written after its read position is fixed, so nothing sent later is missed),
a peer sends the seat a DM, and the session's next model request must carry
the listener's digest naming that DM; the scripted turn then runs
`agora inbox` and `agora ack --all` through the Bash tool and ends, and the
Stop hook arms the next listener. Latency runs from the send's reply (the
hub has committed and appended the notify line by then) to that request's
arrival, the same origin as the bench's send-to-wake figure.
"""

from __future__ import annotations

import os
import re
import selectors
import subprocess
import time
from pathlib import Path

from agorad.surface import wiring
from agorad.surface.paths import listen_file
from agorad.surface.pidfiles import LIVE, pidfile_state, read_pidfile
from tests.harness.model_server import ScriptedModel
from tests.hubproc import wait_for

# The wake line itself (the rules in CLAUDE.md may name the word): the model gets the digest on stderr.
SENTINEL = re.compile(r"^AGORA_WAKE agent=", re.MULTILINE)
ARM_TIMEOUT = 30.0    # a hook listener's spawn to live pidfile, on a busy 2-core machine
WAKE_TIMEOUT = 30.0   # the wired debounce (1 s) and a model turn, with room


def armed_listener(home: Path, agent: str, other_than: int | None = None, timeout: float = ARM_TIMEOUT) -> int:
    """The pid of the seat's armed listener, once one other than `other_than` is."""
    pidfile = listen_file(home, agent, "pid")

    def armed():
        if pidfile_state(pidfile) != LIVE:
            return None
        read = read_pidfile(pidfile)
        return read[0] if read and read[0] != other_than else None

    return wait_for(armed, timeout=timeout, what=f"a hook listener armed for {agent} (pidfile {pidfile})")


def handling_script(agent: str, home: Path) -> list[dict]:
    """What the model does when woken: read the inbox, ack everything, end the turn."""
    exe = wiring.agora_executable()
    return [{"shell": wiring.shell(wiring.inbox(exe, agent, home))},
            {"shell": wiring.shell(wiring.ack_all(exe, agent, home))},
            {"text": "handled"}]


def wake_once(model: ScriptedModel, session, sender, seat_client, agent: str, home: Path, title: str,
              previous_listener: int | None) -> tuple[float, int]:
    """One wake cycle of `session` (claude.Session); returns (send -> next model request seconds, the listener pid that rang).

    It returns once the woken turn has ended, Stop hooks included: a DM sent
    while the Stop backstop still runs would reach the model through the
    backstop's re-prompt, not the listener's wake (seen: 43 ms).
    """
    listener = armed_listener(home, agent, other_than=previous_listener)
    turns = session.turns_ended()
    model.script(*handling_script(agent, home))
    before = len(model.seen)
    sent = sender.call("messages.send", target=f"@{agent}", title=title, body="wake cycle")
    sent_at = time.monotonic()
    ref = sent["ref"]
    woke = model.wait_for(lambda s: not s.side, WAKE_TIMEOUT, after=before, what=f"a model request after {ref} landed")
    assert ref in woke.user_text, f"the wake turn does not name {ref}: {woke.user_text[-600:]!r}"
    assert not SENTINEL.search(woke.user_text), f"the model was shown the sentinel line: {woke.user_text[-800:]!r}"
    listed = model.wait_for(lambda s: not s.side, WAKE_TIMEOUT, after=model.seen.index(woke) + 1,
                            what="the result of `agora inbox`")
    assert title in listed.user_text, f"`agora inbox` did not list {title!r}: {listed.user_text[-600:]!r}"
    wait_for(lambda: not unread(seat_client), timeout=WAKE_TIMEOUT, what=f"{agent}'s ack of {ref} to reach the hub")
    wait_for(lambda: session.turns_ended() > turns, timeout=WAKE_TIMEOUT, what="the woken turn to end")
    return woke.at - sent_at, listener


def unread(seat_client) -> list[str]:
    return [m["ref"] for c in seat_client.call("inbox.check")["channels"] for m in c["messages"]]


def listener_wake(home: Path, agent: str, sender, title: str, timeout: float = WAKE_TIMEOUT) -> float:
    """The listener alone: `agora listen --once --debounce 0` armed, one DM, send's reply -> its AGORA_WAKE line."""
    argv = [wiring.agora_executable(), "listen", "--home", str(home), "--as", agent, "--once", "--debounce", "0",
            "--max-wait", str(int(timeout))]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        lines = _lines(proc, timeout)
        assert next(lines).startswith("AGORA_LISTEN armed"), "agora listen did not arm first"
        sender.call("messages.send", target=f"@{agent}", title=title)
        sent_at = time.monotonic()
        woke = next(lines)
        woke_at = time.monotonic()
        assert woke.startswith("AGORA_WAKE"), f"agora listen printed {woke!r}, not a wake"
        assert proc.wait(timeout=timeout) == 2, f"agora listen --once exited {proc.returncode} after a wake, not 2"
        return woke_at - sent_at
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()


def _lines(proc: subprocess.Popen, timeout: float):
    """The process's stdout lines as they come, each within `timeout`."""
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    buffer = b""
    try:
        while True:
            while b"\n" not in buffer:
                if not selector.select(timeout):
                    raise AssertionError(f"no line from agora listen within {timeout}s")
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    raise AssertionError("agora listen closed its stdout")
                buffer += chunk
            line, buffer = buffer.split(b"\n", 1)
            yield line.decode()
    finally:
        selector.close()

