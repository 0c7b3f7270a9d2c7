"""Resource faults: a full disk, a database locked by another process, a corrupt database file,
an unwritable notify directory. The hub says what is wrong, keeps serving what it can, and never
acknowledges a send it did not store."""

from __future__ import annotations

import resource
import shutil
import subprocess

import apsw
import pytest

from agorad.surface.errors import AgoraError, InternalError
from tests.hubproc import AGORAD, Hub, stopped
from tests.reliability.scale import report
from tests.seats import seats, send


def limit_file_size(size: int):
    def apply():
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))  # writes past it fail with EFBIG
    return apply


class SizeLimitedHub(Hub):
    """A hub whose files cannot grow past `size` bytes: a disk that fills up."""

    def __init__(self, home, size: int):
        super().__init__(home)
        self.size = size

    def start(self):
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([AGORAD, "--home", str(self.home)], env=self.env, stdout=subprocess.DEVNULL,
                                     stderr=self._log, preexec_fn=limit_file_size(self.size))
        from tests.hubproc import wait_for

        wait_for(self._answers, what="the size-limited hub")
        return self


def test_a_full_disk_refuses_sends_and_acknowledges_only_what_it_stored(home):
    first = Hub(home).start()
    first.add_agent("memory", liveness_mode="always-on")
    first.add_agent("runtime", liveness_mode="always-on")
    first.stop()
    size = (home / "agora.db").stat().st_size + 400_000
    full = SizeLimitedHub(home, size).start()
    acked, refused = [], []
    try:
        with full.client("memory") as memory:
            for n in range(2000):
                try:
                    memory.call("messages.send", target="@runtime", title=f"m{n}", body="z" * 2000)
                    acked.append(f"m{n}")
                except InternalError as exc:
                    refused.append(exc.message)
                    if len(refused) >= 20:
                        break
        assert refused, "the disk never filled: the test proved nothing"
        assert "nothing was stored" in refused[0] or "could not store" in refused[0]
        assert full.call("hub.hello")["protocol"] == 1  # still serving
        with full.client("runtime") as runtime:
            assert runtime.call("inbox.check", limit=1)["unread"] >= len(acked)
    finally:
        full.stop()
    again = Hub(home).start()
    try:
        db = apsw.Connection(str(home / "agora.db"), flags=apsw.SQLITE_OPEN_READONLY)
        stored = {row[0] for row in db.execute("SELECT title FROM messages")}
        assert set(acked) <= stored, f"{len(set(acked) - stored)} acknowledged sends were lost"
        with again.client("memory") as memory:  # with room again, sends work
            memory.call("messages.send", target="@runtime", title="after", body="")
        report("disk-full", file_size_limit=size, acked=len(acked), refused=len(refused),
               stored=len(stored))
    finally:
        again.stop()


def test_a_database_locked_by_another_process_is_a_clear_error_then_recovers(hub):
    with seats(hub, "memory", "runtime") as s:
        other = apsw.Connection(str(hub.home / "agora.db"))
        other.execute("BEGIN EXCLUSIVE")
        try:
            with pytest.raises(InternalError, match="locked by another process"):
                send(s["memory"], "@runtime", "blocked")
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert send(s["memory"], "@runtime", "through")["ref"] == "dm:memory--runtime#1"


def test_a_corrupt_database_stops_the_start_with_a_clear_error(home):
    hub = Hub(home).start()
    hub.stop()
    for suffix in ("-wal", "-shm"):
        (home / f"agora.db{suffix}").unlink(missing_ok=True)
    (home / "agora.db").write_bytes(b"this is not a database" * 500)
    done = subprocess.run([AGORAD, "--home", str(home)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "agora.db" in lines[0] and "move it away" in lines[0]
    assert not (home / "agorad.sock").exists() and not (home / "agorad.pid").exists()


def test_an_unwritable_notify_directory_costs_no_send(home, tmp_path):
    notify_dir = tmp_path / "notify"
    hub = Hub(home, "--notify-dir", str(notify_dir)).start()
    try:
        with seats(hub, "memory", "runtime") as s:
            with stopped(hub):  # else it makes the directory again at once
                shutil.rmtree(notify_dir)  # with the empty files the adds made
                notify_dir.write_text("a file where the directory was")
            receipts = [send(s["memory"], "@runtime", f"m{i}") for i in range(5)]
            assert [r["seq"] for r in receipts] == [1, 2, 3, 4, 5]  # the sends themselves are fine
            assert "notify-write-failed" in hub.log()
            assert s["runtime"].call("inbox.check")["unread"] == 5
    finally:
        hub.stop()


def test_errors_never_leave_the_hub_half_way(hub):
    # After every fault above the hub kept its contract; here, the plain case: a refused send
    # leaves no trace at all, not even a used-up seq.
    with seats(hub, "memory", "runtime") as s:
        with pytest.raises(AgoraError):
            send(s["memory"], "@runtime", "x" * 300)
        assert send(s["memory"], "@runtime", "fine")["seq"] == 1
