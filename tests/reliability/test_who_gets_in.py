"""Who gets in: seats are separate, keys never leak, every file is private, symlinks are not followed."""

from __future__ import annotations

import os
import stat
import subprocess

import pytest

from agorad.surface.errors import NotFound, Unauthorized
from tests.listenproc import Listener, listen_once
from tests.seats import seats, send


def test_agent_a_cannot_read_ack_or_act_as_b(hub):
    with seats(hub, "alice", "bob", "carol") as s:
        send(s["carol"], "@bob", "for bob only", "secret", ask=True)
        alice = s["alice"]
        with pytest.raises(NotFound):
            alice.call("messages.read", ref="dm:bob--carol#1")
        with pytest.raises(NotFound):
            alice.call("inbox.ack", ref="dm:bob--carol#1")
        with pytest.raises(NotFound):
            send(alice, "commons", "answering for bob", reply_to="dm:bob--carol#1")
        with pytest.raises(Unauthorized):
            alice.hello("bob", (hub.home / "keys" / "alice.key").read_text().strip())
        assert [d["debtor"] for d in s["carol"].call("owed.list")["owed_to_me"]] == ["bob"]
        assert s["bob"].call("inbox.check")["unread"] == 1


def test_keys_never_reach_logs_notify_lines_or_argv(hub, cli):
    key = hub.add_agent("runtime")
    peer = hub.add_agent("memory")
    cli("heartbeat", "--as", "runtime", "--status", "busy")
    cli("send", "--as", "memory", "@runtime", "--title", "hello", "body")
    ear = Listener(hub, "--as", "runtime")
    ear.next_line()
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    ear.stop()
    hub.stop()
    everything = [hub.log(), ps] + [p.read_text(errors="replace") for p in hub.home.glob("*.log*")]
    everything += [p.read_text(errors="replace") for p in hub.home.glob("listen-*") if p.is_file()]
    for secret in (key, peer):
        assert not any(secret in text for text in everything)
    hub.start()  # for the fixture's stop


def test_every_file_under_the_home_is_private(hub):
    with seats(hub, "memory", "runtime") as s:
        send(s["memory"], "@runtime", "make notify files")
        listen_once(hub, "--as", "runtime", "--max-wait", "1")
    hub.call("hub.sweep")
    found = 0
    for root, _dirs, files in os.walk(hub.home):
        assert stat.S_IMODE(os.stat(root).st_mode) == 0o700, root
        for name in files:
            path = os.path.join(root, name)
            assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600, path
            found += 1
    assert found >= 8  # db, wal, shm, pid, lock, socket? (a socket is a file here too), keys, notify, seat files


def test_symlinks_at_seat_file_paths_are_replaced_not_followed(hub, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("untouched")
    with seats(hub, "memory", "runtime") as s:
        send(s["memory"], "@runtime", "make the file")
        for suffix in ("offset", "owedsig", "backoff"):
            os.symlink(outside, hub.home / f"listen-runtime.{suffix}")
        # Unreadable seat files fail toward more wakes: the offset is re-read from the start.
        assert listen_once(hub, "--as", "runtime", "--adaptive", "--debounce", "0", "--max-wait", "1")[0] == 2
        assert outside.read_text() == "untouched"
        assert not (hub.home / "listen-runtime.offset").is_symlink()


def test_a_planted_symlink_at_the_lock_path_is_refused(hub, tmp_path):
    outside = tmp_path / "victim"
    outside.write_text("untouched")
    with seats(hub, "memory", "runtime") as s:
        send(s["memory"], "@runtime", "make the file")
        os.symlink(outside, hub.home / "listen-runtime.lock")
        code, lines, _ = Listener(hub, "--as", "runtime").finish()
        assert code == 1 and lines[-1].startswith("AGORA_LISTEN ended reason=error")
        assert outside.read_text() == "untouched"
