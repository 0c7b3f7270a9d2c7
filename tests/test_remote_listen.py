"""What only the ws source has: a cut connection, a hub restart on the same port, catch-up by
delivery id; and `agora watch --notify-file`, which writes the notify lines from the remote port."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import time

import pytest

from agora_listen.wsource import Fatal, WsSource
from tests.hubproc import AGORA, Hub, wait_for
from tests.listenproc import Listener, fields
from tests.seats import send



def drained(source: WsSource, count: int) -> list[dict]:
    got: list[dict] = []
    wait_for(lambda: got.extend(source.read_new()) or len(got) >= count, what=f"{count} deliveries")
    return got


def test_a_cut_connection_reconnects_and_catches_up_without_a_repeat(remote):
    source = WsSource(remote.url, "alice", remote.keys["alice"], after=None)
    source.open()
    source.start()
    try:
        with remote.client("bob", remote.keys["bob"]) as bob:
            send(bob, "@alice", "before the cut")
            assert [d["title"] for d in drained(source, 1)] == ["before the cut"]
            source._client._sock.ws.socket.shutdown(socket.SHUT_RDWR)  # kill the socket under the reader
            send(bob, "@alice", "during the cut")
            send(bob, "@alice", "and another")
            got = drained(source, 2)
            send(bob, "@alice", "after")
            got += drained(source, 1)
        assert [d["id"] for d in got] == [2, 3, 4]
        assert source.offset() == {"source": "ws", "id": 4}
    finally:
        source.close()


def test_a_removed_seat_ends_the_source(remote):
    source = WsSource(remote.url, "alice", remote.keys["alice"], after=None)
    source.open()
    source.start()
    try:
        remote.call("agents.remove", agent="alice")
        with pytest.raises(Fatal, match="refused seat alice"):
            wait_for(lambda: source.read_new() and False, what="the refusal")
    finally:
        source.close()


def test_a_source_follows_its_seat_through_a_rename_and_then_a_rekey(remote):
    """A ws source (a listener's, a driver's doorbell, agora watch) said hello as the id it started with, and
    read that id's key file, which the rename had moved: after a rename and a rekey it was refused."""
    source = WsSource(remote.url, "alice", remote.keys["alice"], after=None, home=str(remote.home))
    source.open()
    source.start()
    try:
        remote.call("agents.rename", old="alice", new="al2", reason="r")
        source._client._sock.ws.socket.shutdown(socket.SHUT_RDWR)  # reconnects: redirected to al2
        with remote.client("bob", remote.keys["bob"]) as bob:
            send(bob, "@al2", "after the rename")
            assert [d["title"] for d in drained(source, 1)] == ["after the rename"]
            assert source.agent == "al2"
            remote.call("agents.rekey", agent="al2")  # the hub closes the connection; the source reconnects
            send(bob, "@al2", "after the rekey")
            assert [d["title"] for d in drained(source, 1)] == ["after the rekey"]
    finally:
        source.close()


def test_a_ws_listener_lives_through_a_hub_restart_and_rings_each_delivery_once(remote):
    ear = Listener(remote, "--as", "alice", "--source", "ws", "--url", remote.url, "--debounce", "0")
    assert ear.next_line() == f"AGORA_LISTEN armed source=ws agent=alice hub={remote.url}"
    with remote.client("bob", remote.keys["bob"]) as bob:
        send(bob, "@alice", "before")
    assert fields(ear.wait_for("AGORA_WAKE"))["channels"] == "dm:alice--bob#1"
    remote.stop()
    port = remote.url.rsplit(":", 1)[1].strip("/")
    again = Hub(remote.home, "--listen", f"127.0.0.1:{port}").start()
    try:
        with again.client("bob", remote.keys["bob"]) as bob:  # sent before the listener is back, most likely
            send(bob, "@alice", "while away 1")
            send(bob, "@alice", "while away 2")
            rung = []
            while sum(rung) < 2:
                wake = fields(ear.wait_for("AGORA_WAKE", timeout=30))
                rung.append(int(wake["n"]))
                assert wake["channels"] in ("dm:alice--bob#2", "dm:alice--bob#3")
            send(bob, "@alice", "after")
            assert fields(ear.wait_for("AGORA_WAKE"))["channels"] == "dm:alice--bob#4"  # nothing rang twice between
        code, lines, _ = ear.stop()
        assert code == 0 and lines[-1] == "AGORA_LISTEN ended reason=signal"
        assert (remote.home / "listen-alice.offset").read_text() == '{"source": "ws", "id": 4}'
    finally:
        again.stop()


def test_a_ws_seats_digest_names_the_url_its_environment_lacks(remote):
    with remote.client("bob", remote.keys["bob"]) as bob:
        ear = Listener(remote, "--as", "alice", "--source", "ws", "--url", remote.url, "--once", "--debounce", "0")
        ear.next_line()
        send(bob, "@alice", "review?")
        code, _, stderr = ear.finish()
    assert code == 2 and f"--url {remote.url} inbox --home {remote.home} --as alice`" in stderr


def test_a_ws_listener_with_a_wrong_key_ends_with_a_tombstone(remote):
    done = subprocess.run([AGORA, "listen", "--home", str(remote.home), "--as", "alice", "--source", "ws",
                           "--url", remote.url, "--once"], env={**remote.env, "AGORA_KEY": "agk_wrong"},
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 1
    assert done.stdout.splitlines()[-1].startswith("AGORA_LISTEN ended reason=error cause=")
    assert "authentication failed" in done.stderr


def test_source_ws_without_a_url_is_a_usage_failure(remote):
    env = {key: value for key, value in remote.env.items() if key != "AGORA_URL"}
    done = subprocess.run([AGORA, "listen", "--home", str(remote.home), "--as", "alice", "--source", "ws", "--once"],
                          env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and "--url" in done.stderr
    assert done.stdout.splitlines()[-1].startswith("AGORA_LISTEN ended reason=error")


def test_a_first_ws_arm_with_no_hub_answering_arms_and_waits(remote, tmp_path):
    elsewhere = tmp_path / "seat"
    done = subprocess.run([AGORA, "listen", "--home", str(elsewhere), "--as", "alice", "--source", "ws",
                           "--url", "ws://127.0.0.1:9/", "--once", "--max-wait", "1"],
                          env={**remote.env, "AGORA_KEY": "agk_any"}, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["AGORA_LISTEN armed source=ws agent=alice hub=ws://127.0.0.1:9/",
                                        "AGORA_LISTEN ended reason=max-wait"]
    assert "no hub is answering at ws://127.0.0.1:9/" in done.stderr and "retrying" in done.stderr
    # It never reached the hub: the next arm is a first arm too, not a replay of everything, from when this one
    # began (less the clocks' margin).
    saved = json.loads((elsewhere / "listen-alice.offset").read_text())
    assert saved["source"] == "ws" and saved["id"] is None and saved["since"] < time.time()


def test_a_next_first_arm_rings_what_landed_since_an_earlier_one_that_never_got_through(home):
    """A `--once` run armed while the hub was down ends at its max-wait, never having got through; a DM lands
    once the hub is up; the next run, on a hub that answers at once, still rings it (review finding: it
    started at the hub's newest)."""
    from tests.remote_seat import free_port

    hub = Hub(home, "--listen", f"127.0.0.1:{free_port()}").start()
    url = hub.call("hub.status")["remote"]
    keys = {agent: hub.add_agent(agent, liveness_mode="always-on") for agent in ("alice", "bob")}
    hub.stop()
    first = Listener(hub, "--as", "alice", "--source", "ws", "--url", url, "--once", "--max-wait", "1")
    assert first.finish()[0] == 0
    hub.start()
    try:
        with hub.client("bob", keys["bob"]) as bob:
            send(bob, "@alice", "while no listener got through")
        again = Listener(hub, "--as", "alice", "--source", "ws", "--url", url, "--once", "--debounce", "0",
                         "--max-wait", "20")
        code, lines, _ = again.finish()
        assert code == 2 and fields(lines[1])["channels"] == "dm:alice--bob#1", lines
    finally:
        hub.stop()


def test_a_first_ws_arm_while_the_hub_was_down_rings_what_landed_before_it_got_through(home):
    """Armed with no hub answering and no place saved, the listener's first subscription asks the hub for
    what it stored since shortly before the listener started (`inbox.subscribe {since}`): a DM that lands
    before the reader gets through still rings (it subscribed at the hub's newest, and missed it)."""
    import os

    from tests.remote_seat import free_port

    hub = Hub(home, "--listen", f"127.0.0.1:{free_port()}").start()
    url = hub.call("hub.status")["remote"]
    keys = {agent: hub.add_agent(agent, liveness_mode="always-on") for agent in ("alice", "bob")}
    hub.stop()
    ear = Listener(hub, "--as", "alice", "--source", "ws", "--url", url, "--debounce", "0")
    try:
        assert ear.next_line() == f"AGORA_LISTEN armed source=ws agent=alice hub={url}"
        os.kill(ear.proc.pid, signal.SIGSTOP)  # its reader cannot get through before the DM lands
        try:
            hub.start()
            with hub.client("bob", keys["bob"]) as bob:
                send(bob, "@alice", "landed before the listener got through")
        finally:
            os.kill(ear.proc.pid, signal.SIGCONT)
        assert fields(ear.wait_for("AGORA_WAKE", timeout=30))["channels"] == "dm:alice--bob#1"
    finally:
        ear.stop()
        hub.stop()


@pytest.mark.parametrize("url", ["http://127.0.0.1:1/", "ws://", "127.0.0.1:8765"])
def test_a_url_that_cannot_be_a_hubs_is_an_error_at_once(remote, url):
    done = subprocess.run([AGORA, "listen", "--home", str(remote.home), "--as", "alice", "--source", "ws",
                           "--url", url, "--once"], env=remote.env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and "is not a hub URL" in done.stderr
    assert done.stdout.splitlines()[-1].startswith("AGORA_LISTEN ended reason=error")


def test_source_auto_is_ws_when_no_hub_answers_here_and_a_url_is_set(remote, tmp_path):
    elsewhere = tmp_path / "seat"
    ear = Listener(remote, "--as", "alice", "--home", str(elsewhere), "--debounce", "0",
                   env={"AGORA_URL": remote.url, "AGORA_KEY": remote.keys["alice"]})
    assert ear.next_line().startswith("AGORA_LISTEN armed source=ws agent=alice")
    ear.stop()
    local = Listener(remote, "--as", "alice", "--debounce", "0", env={"AGORA_URL": remote.url})
    assert local.next_line().startswith("AGORA_LISTEN armed source=file")  # the hub answers here: its file
    local.stop()


# --- agora watch --notify-file ---------------------------------------------------------------


def watch(remote, path, *extra):
    return subprocess.Popen([AGORA, "watch", "--as", "alice", "--notify-file", str(path), "--url", remote.url, *extra],
                            env={**remote.env, "AGORA_KEY": remote.keys["alice"]},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_watch_writes_the_hubs_own_notify_lines_and_resumes_without_a_repeat(remote, tmp_path):
    path = tmp_path / "inbox" / "alice-inbox.log"  # its directory made as by `mkdir -p`, 0700
    watcher = watch(remote, path)
    wait_for(lambda: "writing alice's deliveries" in _stderr_line(watcher), what="the watcher to start")
    with remote.client("bob", remote.keys["bob"]) as bob:
        send(bob, "@alice", "one")
        send(bob, "@alice", "two", ask=True)
        hub_file = remote.home / "alice-inbox.log"
        wait_for(lambda: path.exists() and path.read_bytes() == hub_file.read_bytes(), what="the same two lines")
        watcher.send_signal(signal.SIGTERM)
        assert watcher.wait(timeout=10) == 0
        send(bob, "@alice", "three while no one watched")
        again = watch(remote, path)
        wait_for(lambda: path.read_bytes() == hub_file.read_bytes(), what="the third line, once")
        assert len(path.read_bytes().splitlines()) == 3
        again.send_signal(signal.SIGTERM)
        assert again.wait(timeout=10) == 0
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_watch_says_plainly_when_the_notify_files_directory_cannot_be_made(remote, tmp_path):
    (tmp_path / "plain").write_text("a file, not a directory\n")
    done = watch(remote, tmp_path / "plain" / "alice-inbox.log")
    _, stderr = done.communicate(timeout=30)
    assert done.returncode == 1 and f"cannot make {tmp_path / 'plain'}, the notify file's directory" in stderr
    assert "Errno" not in stderr and "choose a file where you can write" in stderr


def _stderr_line(process) -> str:
    return process.stderr.readline()


def test_watch_ends_with_0_on_each_signal_its_help_names_and_a_missing_option_is_status_2(remote, tmp_path):
    shown = subprocess.run([AGORA, "watch", "--help"], env=remote.env, capture_output=True, text=True, timeout=30)
    assert "SIGTERM, SIGINT or SIGHUP ends it (exit 0)" in " ".join(shown.stdout.split())
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        watcher = watch(remote, tmp_path / "alice-inbox.log")
        wait_for(lambda: "writing alice's deliveries" in _stderr_line(watcher), what="the watcher to start")
        watcher.send_signal(sig)
        assert watcher.wait(timeout=10) == 0, sig
    usage = subprocess.run([AGORA, "watch", "--as", "alice", "--url", remote.url], env=remote.env,
                           capture_output=True, text=True, timeout=30)
    assert usage.returncode == 2 and "Missing option '--notify-file'" in usage.stderr


def test_watch_refuses_a_hubs_own_notify_directory(remote):
    done = watch(remote, remote.home / "alice-inbox.log")
    _, stderr = done.communicate(timeout=30)
    assert done.returncode == 1 and "hub's home" in stderr
    assert (remote.home / "alice-inbox.log").read_bytes() == b""  # nothing written there (the add made it empty)


def test_watch_refuses_the_directory_the_hub_says_it_writes_to(home, tmp_path):
    notify_dir = tmp_path / "notes"
    hub = Hub(home, "--listen", "127.0.0.1:0", "--notify-dir", str(notify_dir)).start()
    try:
        hub.url = hub.call("hub.status")["remote"]
        hub.keys = {"alice": hub.add_agent("alice")}
        done = watch(hub, notify_dir / "mine.log")
        _, stderr = done.communicate(timeout=30)
        assert done.returncode == 1 and "the hub's own notify directory" in stderr
    finally:
        hub.stop()


def test_watch_started_with_no_hub_refuses_the_hubs_notify_directory_once_it_connects(home, tmp_path):
    """The hub says where it writes at each hello, so a watcher that started while no hub answered learned it
    only then: it wrote the hub's own lines into the hub's own file again (a review: delivery 2 twice)."""
    from tests.remote_seat import free_port

    notify_dir = tmp_path / "notes"
    hub = Hub(home, "--listen", f"127.0.0.1:{free_port()}", "--notify-dir", str(notify_dir)).start()
    hub.url = hub.call("hub.status")["remote"]
    hub.keys = {agent: hub.add_agent(agent, liveness_mode="always-on") for agent in ("alice", "bob")}
    with hub.client("bob", hub.keys["bob"]) as bob:
        send(bob, "@alice", "before")
    hub.stop()
    watcher = watch(hub, notify_dir / "alice-inbox.log")
    try:
        wait_for(lambda: "retrying" in _stderr_line(watcher), what="the watcher to find no hub")
        hub.start()
        with hub.client("bob", hub.keys["bob"]) as bob:
            send(bob, "@alice", "after")
        _, stderr = watcher.communicate(timeout=60)
        assert watcher.returncode == 1 and "the hub's own notify directory" in stderr, stderr
        ids = [json.loads(line)["id"] for line in (notify_dir / "alice-inbox.log").read_bytes().splitlines()]
        assert ids == [1, 2]  # the hub's own lines, each once
    finally:
        watcher.kill()
        hub.stop()


def test_watch_refuses_a_symbolic_link_as_its_notify_file(remote, tmp_path):
    """The file is never written through a link; one was taken at the start and ended the watch at its first
    delivery with a bare errno."""
    path = tmp_path / "alice-inbox.log"
    path.symlink_to(tmp_path / "target.log")
    done = watch(remote, path)
    _, stderr = done.communicate(timeout=30)
    assert done.returncode == 1 and f"{path} is a symbolic link" in stderr and "Errno" not in stderr, stderr
    assert not (tmp_path / "target.log").exists()


def test_watch_needs_a_url(remote, tmp_path):
    env = {key: value for key, value in remote.env.items() if key != "AGORA_URL"}
    done = subprocess.run([AGORA, "watch", "--as", "alice", "--notify-file", str(tmp_path / "f.log")], env=env,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and "--url" in done.stderr


def test_a_remote_seats_hook_without_its_key_names_the_remote_remedy(remote, tmp_path):
    """Its key comes from the hub's operator through `agora setup --key-stdin`; a rekey on this host
    (the old advice) writes the key into the hub's home, not here."""
    from agora_listen.inbox_view import Trouble, ask

    seat_home = tmp_path / "seathome"
    seat_home.mkdir(mode=0o700)
    (seat_home / "hub.url").write_text(remote.url + "\n")
    with pytest.raises(Trouble) as caught:
        ask(seat_home, "alice")
    assert caught.value.refusal == "no-key"
    assert f"agora setup alice --url {remote.url} --key-stdin" in str(caught.value) and "rekey" not in str(caught.value)


def test_watch_refuses_a_fifo_under_its_notify_file_at_the_start_and_later(remote, tmp_path):
    """Its open for appending waited for a reader, and no signal ended it (Python retries the open)."""
    path = tmp_path / "alice-inbox.log"
    os.mkfifo(path, 0o600)
    done = watch(remote, path)
    _, stderr = done.communicate(timeout=30)
    assert done.returncode == 1 and f"{path} is not a regular file; remove it" in stderr, stderr
    path.unlink()
    watcher = watch(remote, path)
    wait_for(lambda: "writing alice's deliveries" in _stderr_line(watcher), what="the watcher to start")
    os.mkfifo(path, 0o600)  # put there while it runs
    with remote.client("bob", remote.keys["bob"]) as bob:
        send(bob, "@alice", "one")
    _, stderr = watcher.communicate(timeout=30)
    assert watcher.returncode != 0 and "not a regular file; remove it" in stderr, stderr
