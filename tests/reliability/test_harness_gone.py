"""A listener whose harness is gone consumes nothing: the seat's next listener rings what it did not deliver.

Found with the real Claude Code: a session ended while its hook's `agora listen
--once` was armed; the listener lived on in its own process group, took the
next wake, printed it to nobody and recorded it as rung, and the next
session's listener stayed silent.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import psutil
import pytest

from tests.hubproc import AGORA
from tests.listenproc import Listener, fields, listen_once
from tests.seats import seats, send

# The harness in between: runs the listener as its child and is SIGKILLed by the test, while the
# listener's stdout (inherited) stays open, read by the test: only the parent's death can tell.
HARNESS = [sys.executable, "-c", "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"]
# The same listener where os.pidfd_open does not exist (macOS, the BSDs, Linux < 5.3).
NO_PIDFD = [sys.executable, "-c", "import os\ndel os.pidfd_open\nfrom agorad.cli import main\nmain(prog_name='agora')"]


@pytest.fixture
def pair(hub):
    with seats(hub, "memory", "runtime") as s:
        send(s["memory"], "commons", "make the file")
        assert listen_once(hub, "--as", "runtime", "--max-wait", "1")[0] == 0  # the seat's place: the file's end
        yield s


def seat_files(hub) -> dict[str, bytes | None]:
    found = {}
    for what in ("offset", "owedsig", "backoff"):
        path = hub.home / f"listen-runtime.{what}"
        found[what] = path.read_bytes() if path.exists() else None
    return found


def rings_next(hub, ref: str) -> None:
    """The seat's next --once listener rings `ref` at once."""
    code, lines, _ = listen_once(hub, "--as", "runtime", "--debounce", "0", "--max-wait", "5")
    assert code == 2 and fields(lines[1])["channels"] == ref, lines


def listener_pid(hub) -> int:
    return int((hub.home / "listen-runtime.pid").read_text().split()[0])


def test_stdout_closed_while_armed_ends_it_and_the_next_listener_rings(hub, pair):
    ear = Listener(hub, "--as", "runtime", "--once", "--debounce", "0", "--important-only")
    assert ear.next_line().startswith("AGORA_LISTEN armed")
    before = seat_files(hub)
    ear.proc.stdout.close()  # the session ended: nobody reads the listener's stdout any more
    assert ear.proc.wait(timeout=10) == 0  # it noticed at once, by itself: no delivery had to come
    stderr = ear.proc.stderr.read().decode()
    assert "agora listen: stdout closed" in stderr and "Traceback" not in stderr
    assert seat_files(hub) == before
    send(pair["memory"], "@runtime", "while no session listened")
    rings_next(hub, "dm:memory--runtime#1")


def test_a_wake_pending_when_stdout_closed_is_left_for_the_next_listener(hub, pair):
    ear = Listener(hub, "--as", "runtime", "--once", "--debounce", "0")
    assert ear.next_line().startswith("AGORA_LISTEN armed")
    before = seat_files(hub)
    ear.proc.send_signal(signal.SIGSTOP)  # the DM and the hang-up reach it in one poll
    try:
        ear.proc.stdout.close()
        send(pair["memory"], "@runtime", "into the void?")
    finally:
        ear.proc.send_signal(signal.SIGCONT)
    assert ear.proc.wait(timeout=10) == 0
    assert "stdout closed" in ear.proc.stderr.read().decode()
    assert seat_files(hub) == before  # neither the offset nor the owed signature moved
    rings_next(hub, "dm:memory--runtime#1")


@pytest.mark.parametrize("agora", [[AGORA], NO_PIDFD], ids=["pidfd", "getppid"])
def test_parent_killed_ends_it_without_consuming_a_read_delivery(hub, pair, agora):
    # --debounce 30: the DM is read into an open window; the harness dies before it closes.
    heartbeat = [] if agora == [AGORA] else ["--heartbeat", "1"]  # without a pidfd: noticed at a wake-up
    ear = Listener(hub, "--as", "runtime", "--once", "--debounce", "30", *heartbeat, agora=HARNESS + agora)
    assert ear.next_line().startswith("AGORA_LISTEN armed")
    listener = psutil.Process(listener_pid(hub))
    try:
        before = seat_files(hub)
        send(pair["memory"], "@runtime", "review please", ask=True)
        ear.proc.kill()  # SIGKILL the harness; the listener, in the pipe's other end, lives on
        ear.proc.wait()
        tombstone = ear.wait_for("AGORA_LISTEN ended")
        assert tombstone == 'AGORA_LISTEN ended reason=harness-gone cause="parent\\u0020exited"'
        listener.wait(timeout=10)  # it ends (a grandchild: its status is init's to collect, not ours)
        assert not [line for line in ear.lines if line.startswith("AGORA_WAKE")]
        assert seat_files(hub) == before
    finally:
        if listener.is_running():
            listener.kill()
    rings_next(hub, "dm:memory--runtime#1")


def test_epipe_writing_the_wake_persists_nothing(hub, pair):
    ear = Listener(hub, "--as", "runtime", "--once", "--debounce", "0")
    assert ear.next_line().startswith("AGORA_LISTEN armed")
    before = seat_files(hub)
    ear.proc.stderr.close()  # the digest, the wake's message to the model, cannot be written: EPIPE
    send(pair["memory"], "@runtime", "lost on the way?", ask=True)
    assert ear.wait_for("AGORA_WAKE").startswith("AGORA_WAKE agent=runtime n=1")
    assert ear.next_line() == 'AGORA_LISTEN ended reason=harness-gone cause="stderr\\u0020closed"'
    assert ear.proc.wait(timeout=10) == 0
    assert seat_files(hub) == before  # written first, persisted after: nothing was persisted
    rings_next(hub, "dm:memory--runtime#1")


def test_a_persistent_listener_whose_stdout_closed_frees_the_seat(hub, pair):
    ear = Listener(hub, "--as", "runtime")
    assert ear.next_line().startswith("AGORA_LISTEN armed")
    ear.proc.stdout.close()
    assert ear.proc.wait(timeout=10) == 0
    assert not (hub.home / "listen-runtime.pid").exists()  # the lock and pidfile went with it
    again = Listener(hub, "--as", "runtime", "--debounce", "0")
    assert again.next_line().startswith("AGORA_LISTEN armed")  # not already-armed
    send(pair["memory"], "@runtime", "hello")
    assert fields(again.wait_for("AGORA_WAKE"))["channels"] == "dm:memory--runtime#1"
    again.stop()


def test_a_listener_whose_stdout_is_a_file_or_null_is_not_gone(hub, pair, tmp_path):
    """No false alarm: a regular file and /dev/null never report a hang-up (a supervisor's log, nohup)."""
    out = tmp_path / "out"
    with open(out, "w") as log, open(os.devnull, "w") as null:
        for stdout in (log, null):
            done = subprocess.run(
                [AGORA, "listen", "--home", str(hub.home), "--as", "runtime", "--once", "--max-wait", "1"],
                stdout=stdout, stderr=subprocess.PIPE, env=hub.env, timeout=15)
            assert done.returncode == 0 and b"harness" not in done.stderr
    assert out.read_text().splitlines()[-1] == "AGORA_LISTEN ended reason=max-wait"


def test_under_a_shell_that_outlives_the_session_stdout_closing_is_the_signal(hub, pair):
    """A hook command run by `/bin/sh -c`: the shell (not exec'ing: a command follows) stays the parent."""
    shell = ["/bin/sh", "-c", f'{AGORA} "$@"; status=$?; exit $status', "sh"]
    ear = Listener(hub, "--as", "runtime", "--once", "--debounce", "0", agora=shell)
    assert ear.next_line().startswith("AGORA_LISTEN armed")
    assert psutil.Process(listener_pid(hub)).ppid() == ear.proc.pid  # the shell is its parent, and lives on
    ear.proc.stdout.close()
    assert ear.proc.wait(timeout=10) == 0  # the listener ended harness-gone (0), and the shell with it
    assert "agora listen: stdout closed" in ear.proc.stderr.read().decode()
    send(pair["memory"], "@runtime", "after the session")
    rings_next(hub, "dm:memory--runtime#1")
