"""The detached hub's log, `<home>/agorad.log`: kept under `settings.LOG_KEEP_MIB` by rotating to `.1`
(agorad/runtime/log_file.py). The limit is reached with a sparse file (os.truncate), not megabytes written."""

from __future__ import annotations

import os
import signal
import stat
import subprocess

import pytest

from agorad.runtime import log as log_module
from agorad.runtime import log_file
from agorad.runtime.log_file import Rotation, open_append
from agorad.surface.settings import LOG_KEEP_MIB
from tests.hubproc import AGORA, short_home, wait_for

LIMIT = LOG_KEEP_MIB << 20


@pytest.fixture
def stream(tmp_path):
    """A log file open as a hub's stderr would be (O_APPEND), on a descriptor of the test's own."""
    path = tmp_path / "agorad.log"
    fd = open_append(path)
    yield path, fd
    os.close(fd)


def test_the_log_rotates_to_dot_one_once_it_holds_the_limit(stream):
    path, fd = stream
    rotation = Rotation(path, limit=100, streams=(fd,))
    os.write(fd, b"a" * 99)
    rotation.check()
    assert not (path.parent / "agorad.log.1").exists()
    os.write(fd, b"b\n")
    rotation.check()
    assert (path.parent / "agorad.log.1").read_bytes() == b"a" * 99 + b"b\n"
    os.write(fd, b"after\n")  # the descriptor now writes to the new file by the log's name
    assert path.read_bytes() == b"after\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    os.write(fd, b"c" * 100)
    rotation.check()  # the next rotation replaces the `.1` before: at most two files
    assert (path.parent / "agorad.log.1").read_bytes() == b"after\n" + b"c" * 100
    assert path.read_bytes() == b""


def test_a_log_moved_away_by_someone_else_is_left_where_it_is(stream):
    """logrotate or a user moved the file: the hub writes on into it, and renames nothing of theirs."""
    path, fd = stream
    rotation = Rotation(path, limit=10, streams=(fd,))
    moved = path.parent / "theirs.log"
    os.rename(path, moved)
    path.write_bytes(b"another file\n")
    os.write(fd, b"x" * 20)
    rotation.check()
    assert path.read_bytes() == b"another file\n" and not (path.parent / "agorad.log.1").exists()
    assert moved.read_bytes() == b"x" * 20


def test_a_rotation_that_cannot_make_the_new_file_keeps_the_log_by_its_name(stream, capsys, monkeypatch):
    """No new log can be made (a full disk): the old file gets its name back and takes the lines on, the
    failure is logged, and the next try waits for another quarter of the limit (not one a line)."""
    path, fd = stream
    rotation = Rotation(path, limit=100, streams=(fd,))
    os.write(fd, b"x" * 100)

    def refusing(where):
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(log_file, "open_append", refusing)
        rotation.check()
    assert path.read_bytes() == b"x" * 100 and not (path.parent / "agorad.log.1").exists()
    assert "log-rotate-failed" in capsys.readouterr().err
    os.write(fd, b"y" * 10)
    rotation.check()  # 110 bytes: not tried again yet
    assert not (path.parent / "agorad.log.1").exists()
    os.write(fd, b"z" * 15)
    rotation.check()
    assert (path.parent / "agorad.log.1").stat().st_size == 125 and path.read_bytes() == b""


def test_log_lines_are_checked_after_each_one_written(capsys):
    """keep_under hangs its check on `log`, after each line, until it is taken off."""
    checked = []
    log_module.after_each_line(lambda: checked.append(True))
    try:
        log_module.log("one", n=1)
        log_module.log("two", n=2)
    finally:
        log_module.after_each_line(None)
    assert checked == [True, True]
    log_module.log("three")
    assert checked == [True, True]


def detached(home, *args):
    return subprocess.run([AGORA, "up", "--detach", *args], env={**os.environ, "AGORA_HOME": str(home)},
                          capture_output=True, text=True, timeout=60)


def down(home):
    return subprocess.run([AGORA, "down"], env={**os.environ, "AGORA_HOME": str(home)}, capture_output=True,
                          text=True, timeout=60)


def test_a_detached_hub_sets_a_full_log_aside_at_start_and_rotates_its_own_past_the_limit():
    home = short_home()
    home.mkdir(mode=0o700)
    log, rotated = home / "agorad.log", home / "agorad.log.1"
    log.write_bytes(b"a line from long ago\n")
    os.truncate(log, LIMIT)
    started = detached(home)
    try:
        assert started.returncode == 0, started.stderr
        assert "log-rotated" in started.stderr  # what it logged while starting is still echoed, from the new file
        assert rotated.read_bytes().startswith(b"a line from long ago\n") and rotated.stat().st_size == LIMIT
        assert b" ready " in log.read_bytes() and log.stat().st_size < 64 << 10
        pid = int((home / "agorad.pid").read_text().split()[0])

        os.truncate(log, LIMIT)  # the hub's own log, grown to the limit (it appends at the end)
        os.kill(pid, signal.SIGHUP)  # a line logged: "sighup"
        wait_for(lambda: b"log-rotated" in log.read_bytes(), what="the log rotated")
        assert b" ready " in rotated.read_bytes() and b"sighup" in rotated.read_bytes()
        assert stat.S_IMODE(log.stat().st_mode) == 0o600
        os.kill(pid, signal.SIGHUP)
        wait_for(lambda: b"sighup" in log.read_bytes(), what="the next line, in the new file")

        os.truncate(log, LIMIT)  # another hub refused on this home leaves the running hub's log alone
        again = detached(home)
        assert again.returncode == 1 and "another hub is already running" in again.stderr
        assert b" ready " in rotated.read_bytes() and log.stat().st_size > LIMIT
    finally:
        down(home)
    assert b" stopped" in log.read_bytes()  # the hub wrote on into its own file to the end
