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

import re
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


def wake_once(model: ScriptedModel, sender, seat_client, agent: str, home: Path, title: str,
              previous_listener: int | None) -> tuple[float, int]:
    """One wake cycle; returns (send -> next model request seconds, the listener pid that rang)."""
    listener = armed_listener(home, agent, other_than=previous_listener)
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
    wait_for(lambda: not _unread(seat_client), timeout=WAKE_TIMEOUT, what=f"{agent}'s ack of {ref} to reach the hub")
    return woke.at - sent_at, listener


def _unread(seat_client) -> list[str]:
    return [m["ref"] for c in seat_client.call("inbox.check")["channels"] for m in c["messages"]]
