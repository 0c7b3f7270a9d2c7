"""A backup taken during an eight-client send storm holds every send acknowledged before it began.

Eight threads send DMs through the real client as fast as the hub answers; `agora backup` runs in
the middle (in-process, through click), the hub is stopped, `agora restore` installs the copy and a
new hub serves it: every send acknowledged before the backup began reads back with its title, and
every send whose request left after the backup returned is absent (the restore really replaced the
database). More sends before the backup under `make soak`, so the copy is larger and the storm
longer.
"""

from __future__ import annotations

import json
import os
import stat
import threading
import time

import pytest

from agorad.surface.errors import AgoraError
from tests.hubproc import Hub, wait_for
from tests.reliability.scale import report, scaled
from tests.seats import seats, send

SENDERS = [f"s{i}" for i in range(8)]
BEFORE = scaled(400, 20_000)  # acknowledged sends before the backup starts
AFTER = scaled(100, 2_000)  # sends whose requests left after it returned


def mode_of(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


class Storm:
    """Eight clients sending DMs to `r` as fast as the hub answers, each send recorded with the
    times its request left and its acknowledgement came back."""

    def __init__(self, clients: dict):
        self.records: list[tuple[str, str, float, float]] = []  # (ref, title, sent, acknowledged)
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.threads = [threading.Thread(target=self._run, args=(clients[name], name)) for name in SENDERS]

    def _run(self, client, name: str) -> None:
        try:
            for n in range(1_000_000):
                if self.stop.is_set():
                    return
                sent = time.monotonic()
                receipt = send(client, "@r", f"{name}-{n}")
                self.records.append((receipt["ref"], f"{name}-{n}", sent, time.monotonic()))
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.errors.append(exc)

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=30)


def test_a_backup_during_an_eight_client_storm_holds_every_send_acknowledged_before_it(hub, cli, tmp_path):
    target = tmp_path / "storm.db"
    with seats(hub, "r", *SENDERS) as clients, Storm(clients) as storm:
        wait_for(lambda: len(storm.records) >= BEFORE, timeout=600, what=f"{BEFORE} acknowledged sends")
        began = time.monotonic()
        facts = json.loads(cli("backup", str(target), "--json").stdout)
        ended = time.monotonic()
        wait_for(lambda: sum(r[2] > ended for r in storm.records) >= AFTER, timeout=600, what="sends after the backup")
    assert not storm.errors, storm.errors
    before = [r for r in storm.records if r[3] < began]
    during = [r for r in storm.records if r[3] >= began and r[2] <= ended]
    after = [r for r in storm.records if r[2] > ended]
    assert mode_of(target) == 0o600 and facts["path"] == str(target) and facts["bytes"] == target.stat().st_size
    assert facts["agents"] == 9 and facts["messages"] >= len(before)
    assert facts["last_delivery_id"]["r"] == facts["messages"]  # every message was a DM to r

    hub.stop()
    cli("restore", str(target))
    restored = Hub(hub.home).start()
    try:
        with restored.client("r") as r:
            for ref, title, _, _ in before:
                assert r.call("messages.read", ref=ref)["title"] == title
            for ref, _, _, _ in after:  # sent after the copy was taken: the restore really replaced the database
                with pytest.raises(AgoraError):
                    r.call("messages.read", ref=ref)
            assert restored.call("hub.status")["counts"]["messages"] == facts["messages"]
    finally:
        restored.stop()
    report("backup storm", acknowledged=len(storm.records), before=len(before), restored=len(before),
           during=len(during), after=len(after), after_restored=0, backup_s=f"{ended - began:.3f}",
           bytes=facts["bytes"], messages=facts["messages"])
