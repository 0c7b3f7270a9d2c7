"""A listener through a hub restart, rotations under load and its own kill -9 misses no delivery."""

from __future__ import annotations

import pytest

from tests.hubproc import Hub
from tests.listenproc import Listener, fields
from tests.reliability.scale import report, scaled


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
    total = scaled(300, 3000)
    hub = Hub(home, "--notify-rotate-mb", "0.01").start()  # ~10 KiB: rotates every few dozen lines
    src_key = hub.add_agent("src", liveness_mode="always-on")
    hub.add_agent("sink", liveness_mode="always-on")
    wakes: list[str] = []
    ear = Listener(hub, "--as", "sink", "--debounce", "0")
    assert ear.next_line().startswith("AGORA_LISTEN armed")
    sent = 0
    try:
        for phase in ("before restart", "after restart", "after listener kill"):
            client = hub.client("src", src_key)
            for _ in range(total // 3):
                sent += 1
                client.call("messages.send", target="@sink", title=f"m{sent}", body="y" * 100)
            client.close()
            if phase == "before restart":
                drain(ear, wakes, sent)
                hub.stop()
                hub = Hub(home, "--notify-rotate-mb", "0.01").start()
            elif phase == "after restart":
                ear.proc.kill()  # kill -9 mid-stream: whatever it had not rung, the next one must
                ear.proc.wait()
                wakes += [line for line in ear.finish()[1] if line.startswith("AGORA_WAKE")]
                ear = Listener(hub, "--as", "sink", "--debounce", "0")
        drain(ear, wakes, sent)
        missing = set(range(1, sent + 1)) - covered(wakes)
        assert not missing, f"{len(missing)} deliveries never rang, e.g. {sorted(missing)[:5]}"
        rotations = len(list(home.glob("sink-inbox.log.1")))
        report("listener-faults", deliveries=sent, wake_lines=len(wakes), rung=len(covered(wakes)),
               rotated_files=rotations)
    finally:
        ear.stop()
        hub.stop()
