"""A listener through a hub restart, rotations under load and its own kill -9 misses no delivery."""

from __future__ import annotations

import pytest

from tests.hubproc import Hub
from tests.listenproc import Listener, fields
from tests.reliability.scale import report, scaled

pytestmark = pytest.mark.usefixtures("watcher")  # under each watcher


def covered(wake_lines: list[str]) -> set[int]:
    """Seqs of the single DM channel covered by wake lines (each names its newest seq and a count)."""
    seqs = set()
    for line in wake_lines:
        wake = fields(line)
        newest = int(wake["channels"].rsplit("#", 1)[1])
        seqs.update(range(newest - int(wake["n"]) + 1, newest + 1))
    return seqs


def drain(ear: Listener, wakes: list[str], until_seq: int) -> None:
    while max(covered(wakes), default=0) < until_seq:
        line = ear.next_line(timeout=15)
        if line.startswith("AGORA_WAKE"):
            wakes.append(line)


@pytest.mark.timeout(1800)
def test_no_wake_is_lost_to_restart_rotation_or_listener_kill(home):
    third = scaled(100, 1000)
    hub = Hub(home, "--notify-rotate-mb", "0.01").start()  # ~10 KiB: rotates every few dozen lines
    src_key = hub.add_agent("src", liveness_mode="always-on")
    hub.add_agent("sink", liveness_mode="always-on")
    wakes: list[str] = []
    sent = 0

    def send_some(count: int) -> None:
        nonlocal sent
        with hub.client("src", src_key) as client:
            for _ in range(count):
                sent += 1
                client.call("messages.send", target="@sink", title=f"m{sent}", body="y" * 100)

    ear = Listener(hub, "--as", "sink", "--debounce", "0")
    assert ear.next_line().startswith("AGORA_LISTEN armed")
    try:
        send_some(third)  # 1. a plain stream, then a hub restart under the listener
        drain(ear, wakes, sent)
        hub.stop()
        hub = Hub(home, "--notify-rotate-mb", "0.01").start()
        send_some(third)  # 2. after the restart, with rotations under load
        send_some(third // 2)  # 3. kill -9 the listener mid-stream...
        ear.proc.kill()
        ear.proc.wait()
        wakes += [line for line in ear.finish()[1] if line.startswith("AGORA_WAKE")]
        send_some(third)  # ...while it is down the file rotates at least twice: lines leave both generations
        ear = Listener(hub, "--as", "sink", "--debounce", "0")
        send_some(third // 2)
        drain(ear, wakes, sent)
        missing = set(range(1, sent + 1)) - covered(wakes)
        assert not missing, f"{len(missing)} deliveries never rang, e.g. {sorted(missing)[:5]}"
        gaps = [line for line in wakes if "missed=" in line]
        assert gaps, "no wake had to count rotated-away lines: the test did not exercise that path"
        report("listener-faults", deliveries=sent, wake_lines=len(wakes), rung=len(covered(wakes)),
               wakes_with_missed=len(gaps))
    finally:
        ear.stop()
        hub.stop()
