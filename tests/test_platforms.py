"""The branches that run off Linux, tested on Linux by simulating the platform.

macOS and the BSDs have no inotify and no os.pipe2, and name a Unix socket's
peer with LOCAL_PEERCRED or getpeereid instead of SO_PEERCRED. These tests
make this machine look like them (sys.platform, a missing os.pipe2, fake
getsockopt and getpeereid answers) and check what reception and the hub do.
watchdog's FSEvents and kqueue backends cannot be simulated here: where a
listener runs "as macOS", watchdog keeps the inotify backend it picked on import.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys

import psutil
import pytest

from agora_listen.watchers import choose, inotify, wake_pipe
from agorad.surface import inotify as surface_inotify
from agorad.surface import peercred
from agorad.surface.peercred import PeerUnknown, peer_uid
from tests.hubproc import Hub, wait_for
from tests.listenproc import Listener, fields
from tests.seats import seats, send

# Run the agora CLI as a system without inotify or os.pipe2 would. Modules that pick
# native code on import (psutil, watchdog's observer) are imported first, for this machine.
AS_MACOS = [sys.executable, "-c", (
    "import os, sys\n"
    "import psutil, watchdog.observers\n"
    "sys.platform = 'darwin'\n"
    "del os.pipe2\n"
    "from agorad.cli import main\n"
    "main(prog_name='agora')\n"
)]


# --- the watcher chosen, the wake pipe ----------------------------------------------------

def test_auto_is_inotify_on_linux(monkeypatch):
    assert choose("auto") == "inotify"
    assert (choose("inotify"), choose("watchdog")) == ("inotify", "watchdog")


@pytest.mark.parametrize("platform", ["darwin", "freebsd14", "openbsd7"])
def test_auto_is_watchdog_where_there_is_no_inotify(monkeypatch, platform):
    monkeypatch.setattr(sys, "platform", platform)
    assert choose("auto") == "watchdog"


def test_auto_is_watchdog_on_a_linux_whose_c_library_lacks_inotify(monkeypatch):
    monkeypatch.setattr(surface_inotify, "libc", lambda: object())
    assert choose("auto") == "watchdog"


def test_forcing_inotify_where_there_is_none_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "platform", "darwin")
    with pytest.raises(OSError, match="inotify is not available on this system .darwin.; use --watcher watchdog"):
        inotify.Inotify(str(tmp_path), str(tmp_path / "x-inbox.log"))


@pytest.mark.parametrize("has_pipe2", [True, False], ids=["pipe2", "no-pipe2"])
def test_the_wake_pipe_is_non_blocking_and_close_on_exec(monkeypatch, has_pipe2):
    if not has_pipe2:
        monkeypatch.delattr(os, "pipe2")
    read_fd, write_fd = wake_pipe()
    try:
        for fd in (read_fd, write_fd):
            assert not os.get_blocking(fd) and not os.get_inheritable(fd)
        with pytest.raises(BlockingIOError):
            os.read(read_fd, 1)
        os.write(write_fd, b"\0")
        assert os.read(read_fd, 16) == b"\0"
    finally:
        os.close(read_fd)
        os.close(write_fd)


def test_a_listener_as_on_macos_wakes_follows_rotations_and_ends(home):
    """No inotify and no os.pipe2: auto takes watchdog, the pipes take pipe(2), and the contract holds."""
    hub = Hub(home, "--notify-rotate-mb", "0.001").start()
    try:
        with seats(hub, "memory", "runtime") as s:
            ear = Listener(hub, "--as", "runtime", "--debounce", "0", agora=AS_MACOS)
            assert ear.next_line().startswith("AGORA_LISTEN armed source=file agent=runtime")  # no file yet
            assert psutil.Process(ear.proc.pid).num_threads() > 1  # watchdog's observer: inotify runs none
            seen = 0
            for i in range(15):  # about 2 KiB of lines: the file rotates at least once under the listener
                send(s["memory"], "commons", f"m{i}", "y" * 60)
                seen += int(fields(ear.wait_for("AGORA_WAKE"))["n"])
            assert seen == 15 and (home / "runtime-inbox.log.1").exists()
            code, lines, stderr = ear.stop()
            assert (code, lines[-1]) == (0, "AGORA_LISTEN ended reason=signal"), stderr
    finally:
        hub.stop()


# --- peer credentials ---------------------------------------------------------------------

class FakeSocket:
    """A socket whose getsockopt answers as another kernel would."""

    def __init__(self, answer: bytes | OSError, expect: tuple[int, int]):
        self.answer, self.expect = answer, expect

    def getsockopt(self, level, option, buflen):
        assert (level, option) == self.expect
        if isinstance(self.answer, OSError):
            raise self.answer
        return self.answer[:buflen]

    def fileno(self):
        return 99


def xucred(uid: int, version: int = 0, freebsd: bool = False) -> bytes:
    """A struct xucred as the kernel copies it out: macOS's, or FreeBSD's with the trailing pid union."""
    layout = "IIh16IP" if freebsd else "IIh16I"
    fields = (version, uid, 1, 20, *[0] * 15) + ((4242,) if freebsd else ())
    return struct.pack(layout, *fields)


def test_linux_asks_so_peercred():
    a, b = socket.socketpair(socket.AF_UNIX)
    with a, b:
        assert peercred.method() == "SO_PEERCRED"
        assert peer_uid(a) == os.getuid()


@pytest.mark.parametrize("platform,freebsd", [("darwin", False), ("freebsd14", True), ("dragonfly6", True)])
def test_macos_and_the_bsds_ask_local_peercred(monkeypatch, platform, freebsd):
    monkeypatch.setattr(sys, "platform", platform)
    assert peercred.method() == "LOCAL_PEERCRED"
    assert peer_uid(FakeSocket(xucred(501, freebsd=freebsd), expect=(0, 1))) == 501  # SOL_LOCAL, LOCAL_PEERCRED


def test_a_big_uid_is_read_unsigned(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    assert peer_uid(FakeSocket(xucred(2**32 - 3), expect=(0, 1))) == 2**32 - 3


@pytest.mark.parametrize("answer,why", [
    (xucred(501, version=7), "version 7"),
    (b"\0\0\0", "too few"),
    (OSError(22, "Invalid argument"), "LOCAL_PEERCRED.*Invalid argument"),
])
def test_an_unreadable_xucred_names_no_peer(monkeypatch, answer, why):
    monkeypatch.setattr(sys, "platform", "darwin")
    with pytest.raises(PeerUnknown, match=why):
        peer_uid(FakeSocket(answer, expect=(0, 1)))


def test_other_bsds_call_getpeereid(monkeypatch):
    calls = []

    def getpeereid(fd, euid, egid):
        calls.append(fd)
        euid.contents.value, egid.contents.value = 1000, 1000
        return 0

    monkeypatch.setattr(sys, "platform", "openbsd7")
    monkeypatch.setattr(peercred, "_getpeereid_function", lambda: getpeereid)
    assert peercred.method() == "getpeereid"
    assert peer_uid(FakeSocket(b"", expect=(None, None))) == 1000 and calls == [99]


def test_a_failing_getpeereid_names_no_peer(monkeypatch):
    monkeypatch.setattr(sys, "platform", "netbsd10")
    monkeypatch.setattr(peercred, "_getpeereid_function", lambda: lambda fd, euid, egid: -1)
    with pytest.raises(PeerUnknown, match="getpeereid"):
        peer_uid(FakeSocket(b"", expect=(None, None)))


def test_a_platform_with_no_way_to_ask_is_refused_in_words(monkeypatch):
    monkeypatch.setattr(sys, "platform", "sunos5")
    monkeypatch.setattr(peercred, "_getpeereid_function", lambda: None)
    assert peercred.method() is None
    with pytest.raises(PeerUnknown, match="offers no way to learn a Unix socket peer's uid"):
        peer_uid(FakeSocket(b"", expect=(None, None)))


def test_a_hub_that_cannot_name_its_peers_refuses_every_client_and_says_why(home):
    """On a platform with no SO_PEERCRED, LOCAL_PEERCRED or getpeereid (glibc has no getpeereid)."""
    launcher = (
        "import sys\n"
        "from agorad.cli.up import agorad_main\n"
        "import agorad.runtime.daemon\n"
        "sys.platform = 'sunos5'\n"
        "sys.argv[0] = 'agorad'\n"
        "agorad_main()\n"
    )
    hub = Hub(home)
    hub._log = open(hub.log_path, "ab")
    hub.proc = subprocess.Popen([sys.executable, "-c", launcher, "--home", str(home)], env=hub.env,
                                stdout=subprocess.DEVNULL, stderr=hub._log)
    try:
        wait_for(lambda: "ready" in hub.log() or hub.proc.poll() is not None, what="the hub to say ready")
        assert hub.proc.poll() is None, hub.log()
        with socket.socket(socket.AF_UNIX) as client:
            client.settimeout(10)
            client.connect(str(home / "agorad.sock"))
            client.sendall(b'{"jsonrpc":"2.0","id":1,"method":"agents.list"}\n')
            reply = b""
            while chunk := client.recv(65536):
                reply += chunk
        error = json.loads(reply.splitlines()[0])["error"]
        assert error["data"]["reason"] == "unauthorized", error
        assert "cannot tell who the peer is" in error["message"] and "offers no way" in error["message"]
        assert "refused reason=peer-unknown" in hub.log()
    finally:
        hub.stop()
