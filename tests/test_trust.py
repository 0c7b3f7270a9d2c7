"""What another local user can plant must not get a seat's key: a seat record above the working directory
that is not the user's is passed over, and no client speaks to a socket another uid answers on.

Both need a second uid, so they run as root (as CI does) and are skipped otherwise.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.hubproc import AGORA, wait_for

NOBODY = 65534
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another uid")

# A "hub" run by uid 65534: it accepts connections and keeps every byte it is sent.
FAKE_HUB = """
import os, socket, sys
os.setgid(65534); os.setuid(65534)
listener = socket.socket(socket.AF_UNIX); listener.bind(sys.argv[1]); listener.listen()
with open(sys.argv[2], "ab", buffering=0) as caught:
    while True:
        connection, _ = listener.accept()
        connection.settimeout(2)
        try:
            while chunk := connection.recv(65536):
                caught.write(chunk)
        except OSError:
            pass
        connection.close()
"""


@pytest.fixture
def foreign_hub():
    """A home-shaped directory whose socket another uid answers on; yields (home, file of what it got)."""
    top = Path(tempfile.mkdtemp(prefix="agtr", dir="/tmp"))  # pytest's own directories are 0700: not theirs to reach
    os.chmod(top, 0o755)
    home = top / "theirs"
    home.mkdir()
    os.chown(home, NOBODY, NOBODY)
    caught = top / "caught"
    caught.touch()
    os.chmod(caught, 0o666)
    fake = subprocess.Popen([sys.executable, "-c", FAKE_HUB, str(home / "agorad.sock"), str(caught)])
    try:
        wait_for(lambda: (home / "agorad.sock").exists(), what="the foreign socket")
        yield home, caught
    finally:
        fake.kill()
        fake.wait()
        shutil.rmtree(top, ignore_errors=True)


def test_no_client_says_anything_to_a_socket_another_user_answers_on(foreign_hub):
    home, caught = foreign_hub
    env = {**os.environ, "AGORA_HOME": str(home), "AGORA_KEY": "agk_not_for_them"}
    done = subprocess.run([AGORA, "inbox", "--as", "alice"], env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 3 and f"runs as uid {NOBODY}, not as you" in done.stderr, done.stderr

    from agora_sdk import AsyncClient, Client, Unavailable

    with pytest.raises(Unavailable, match="not your hub"):
        Client("alice", key="agk_not_for_them", home=home).connect()

    async def async_client():
        async with AsyncClient("alice", key="agk_not_for_them", home=home):
            pass
    with pytest.raises(Unavailable, match="not your hub"):
        asyncio.run(async_client())
    assert caught.read_bytes() == b""  # not a byte, let alone the key


def test_a_seat_record_another_user_owns_is_passed_over(hub, tmp_path):
    """A record planted above the working directory (in /tmp, say) named a seat and a home of the planter's."""
    key = hub.add_agent("alice")
    shared = tmp_path / "shared"
    (shared / ".agora").mkdir(parents=True)
    (shared / "mine").mkdir()
    record = shared / ".agora" / "seat.toml"
    record.write_text(f'format = 1\nid = "alice"\nhub = "{hub.home}/agorad.sock"\nkey_file = "{hub.home}/keys/alice.key"\n')
    env = {k: v for k, v in os.environ.items() if k not in ("AGORA_HOME", "AGORA_KEY", "AGORA_URL")}
    inbox = [AGORA, "inbox", "--json"]
    assert subprocess.run(inbox, cwd=shared / "mine", env=env, capture_output=True, timeout=30).returncode == 0
    for planted in (record, record.parent):  # the file, or the directory holding it, is another user's
        os.chown(planted, NOBODY, NOBODY)
        done = subprocess.run(inbox, cwd=shared / "mine", env=env, capture_output=True, text=True, timeout=30)
        assert done.returncode == 2 and "Missing option '--as'" in done.stderr, done.stderr
        os.chown(planted, 0, 0)
    record.rename(shared / "elsewhere.toml")
    record.symlink_to(shared / "elsewhere.toml")  # a link is not a record either
    done = subprocess.run(inbox, cwd=shared / "mine", env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 2, done.stderr
    assert key


def test_a_notify_file_another_user_planted_is_not_written(hub):
    """In the notify directory (the home here), a seat's file made by another user: the hub writes none of
    the seat's titles into it, says why in its log, and serves every other seat as before."""
    from tests.seats import seats, send

    with seats(hub, "memory", "runtime", "bob") as s:
        hub.stop()
        planted = hub.home / "bob-inbox.log"
        planted.unlink(missing_ok=True)
        planted.touch()
        os.chown(planted, NOBODY, NOBODY)
        os.chmod(planted, 0o666)
    hub.start()
    with hub.client("memory") as memory:
        send(memory, "@bob", "secret title")
        send(memory, "@runtime", "for runtime")
    assert planted.read_bytes() == b"" and "belongs to uid 65534" in hub.log()
    assert "for runtime" in (hub.home / "runtime-inbox.log").read_text()


def test_a_notify_dir_another_user_owns_is_refused_as_theirs(home, tmp_path):
    from tests.hubproc import AGORAD

    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, NOBODY, NOBODY)
    done = subprocess.run([AGORAD, "--home", str(home), "--notify-dir", str(theirs)], capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 1 and f"{theirs} is another user's" in done.stderr, done.stderr
