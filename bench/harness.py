"""The woken harness: send -> a real Claude Code session's next model request, beside the listener's own wake.

Measured only when `make test-harness` has installed Claude Code into
.cache/harness (tests/harness/install.py); otherwise the part is skipped with
a note. The cycle is the harness tests' own (tests/harness/rewake.py): a
workspace wired by `agora setup`, an idle stream-json Claude session on the
scripted model server (tests/harness/model_server.py), one DM at a time from
a peer, each timed from the send's reply to the session's next model request,
then read and acked by the session's Bash tool before the next. That figure
includes the wired hook debounce (settings.HOOK_DEBOUNCE): the row names it.
Beside it, `agora listen --once --debounce 0` from the send's reply to its
AGORA_WAKE line, on the same hub, alternating with the session's wakes.

The bench does not enter a network namespace: Claude is pointed at the
scripted model and told to send nothing else (tests/harness/claude.py).
"""

from __future__ import annotations

import statistics
from pathlib import Path

from bench.figures import Figure, progress
from agorad.surface.client import Client
from bench.servers import BenchError, Hub

SEAT, PEER, EAR = "seat", "peer", "ear"


def figures(work: Path, wakes: int, notes: list[str]) -> list[Figure]:
    from tests.harness.install import NotInstalled, binary

    try:
        binary("claude")
    except NotInstalled as exc:
        line = f"harness: skipped, {exc}"
        progress(line)
        notes.append(line)
        return []
    from agorad.surface import settings
    from tests.harness import claude, hook_processes, rewake
    from tests.harness.model_server import ScriptedModel
    from tests.harness.wire import wire

    progress(f"harness: {wakes} wakes of an idle Claude Code session, alternating with agora listen --once wakes")
    with Hub(work / "harness", work / "harness.log") as hub, ScriptedModel() as model:
        hub.start()
        hub.add_agents([PEER, EAR], mode="always-on")
        workspace = work / "harness-ws"
        workspace.mkdir()
        wire("claude", workspace, SEAT, hub.home)
        session = claude.Session(workspace, claude.environment(model.url, work / "harness-private"))
        try:
            session_side, listener_side, listener = [], [], None
            with _seat(hub.home, PEER) as peer, _seat(hub.home, SEAT) as seat:
                for n in range(wakes):
                    seconds, listener = rewake.wake_once(model, session, peer, seat, SEAT, hub.home, f"bench {n}", listener)
                    session_side.append(seconds)
                    listener_side.append(rewake.listener_wake(hub.home, EAR, peer, f"bench {n}"))
        except AssertionError as exc:
            raise BenchError(f"harness: {exc}") from None
        finally:
            session.kill_group()
            hook_processes.end(hub.home, spare={hub.proc.pid})
    return [Figure(f"send -> Claude's next model request, median of {wakes} (hook debounce "
                   f"{settings.HOOK_DEBOUNCE:g} s included)", "ms", statistics.median(session_side) * 1000,
                   statistics.median(listener_side) * 1000, "listen --once --debounce 0 wake")]


def _seat(home: Path, agent: str) -> Client:
    client = Client(home, timeout=10).connect()
    client.hello(agent, (home / "keys" / f"{agent}.key").read_text().strip())
    return client
