"""The hub process: files and modes, one hub per home, recovery, clean shutdown, logs."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys

import apsw

from tests.hubproc import AGORAD, Hub, short_home


def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_home_db_and_socket_are_private(hub):
    assert mode(hub.home) == 0o700
    assert mode(hub.home / "keys") == 0o700
    assert stat.S_ISSOCK(os.lstat(hub.home / "agorad.sock").st_mode)
    hub.add_agent("runtime")
    for name in ("agora.db", "agora.db-wal", "agora.db-shm", "agorad.sock", "agorad.pid", "agorad.lock", "keys/runtime.key"):
        assert mode(hub.home / name) == 0o600, name


def test_database_is_in_wal_mode(hub):
    db = apsw.Connection(str(hub.home / "agora.db"), flags=apsw.SQLITE_OPEN_READONLY)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_existing_loose_home_is_tightened(home):
    home.mkdir(mode=0o755)
    os.chmod(home, 0o755)
    running = Hub(home).start()
    try:
        assert mode(home) == 0o700
    finally:
        running.stop()


def test_files_found_wider_than_0600_are_tightened_at_start(home):
    """A database copied in as 0644 (SQLite then makes its -wal and -shm 0644 too) and a lock left 0666:
    every file in the home is 0600, as agora-files(5) says, whoever made it first."""
    Hub(home).start().stop()
    for name in ("agora.db", "agorad.lock"):
        os.chmod(home / name, 0o644 if name == "agora.db" else 0o666)
    running = Hub(home).start()
    try:
        assert {name: mode(home / name) for name in ("agora.db", "agora.db-wal", "agora.db-shm", "agorad.lock")} \
            == dict.fromkeys(("agora.db", "agora.db-wal", "agora.db-shm", "agorad.lock"), 0o600)
    finally:
        running.stop()


def test_a_new_homes_missing_parents_are_private_and_a_linked_keys_directory_is_refused(tmp_path):
    """mkdir -p gave a new home's parents the umask's mode (0777 under umask 0); a keys/ that is a symbolic
    link had the seats' keys written wherever it pointed, and its target made 0700."""
    from agorad.surface.paths import Home

    home = tmp_path / "deep" / "er" / "home"
    old = os.umask(0)
    try:
        Home.resolve(home).ensure()  # what the hub, `agora up --detach` and setup run first
    finally:
        os.umask(old)
    assert mode(home) == 0o700 and mode(home / "keys") == 0o700
    afile = tmp_path / "afile"
    afile.write_text("x")
    os.chmod(afile, 0o644)
    import pytest

    with pytest.raises(OSError, match="afile: it is not a directory"):
        Home.resolve(afile).ensure()
    assert mode(afile) == 0o644  # named as a home by mistake: left as it was
    assert mode(tmp_path / "deep") == 0o700 and mode(tmp_path / "deep" / "er") == 0o700
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    (home / "keys").rmdir()
    (home / "keys").symlink_to(elsewhere)
    done = subprocess.run([AGORAD, "--home", str(home)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and "keys: it is a symbolic link" in done.stderr, done.stderr
    assert mode(elsewhere) == 0o755 and list(elsewhere.iterdir()) == []


def test_pidfile_names_the_hub(hub):
    first = (hub.home / "agorad.pid").read_text().splitlines()[0]
    assert int(first) == hub.proc.pid


def test_second_hub_refuses_with_one_line(hub):
    done = subprocess.run([AGORAD, "--home", str(hub.home)], capture_output=True, text=True, timeout=10)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "already running" in lines[0] and str(hub.proc.pid) in lines[0]
    assert hub.call("hub.hello")["protocol"] == 1  # the first hub is untouched


def test_sigterm_removes_socket_and_pidfile(hub):
    assert hub.stop(signal.SIGTERM) == 0
    assert not (hub.home / "agorad.sock").exists()
    assert not (hub.home / "agorad.pid").exists()
    assert "stopped" in hub.log()


def test_sigint_also_stops_cleanly(hub):
    assert hub.stop(signal.SIGINT) == 0
    assert not (hub.home / "agorad.sock").exists()


def test_sighup_is_logged_and_hub_keeps_serving(hub):
    hub.proc.send_signal(signal.SIGHUP)
    assert hub.call("hub.hello")["protocol"] == 1
    assert "sighup" in hub.log()


def test_stale_socket_and_pidfile_from_killed_hub_are_recovered(hub):
    key = hub.add_agent("runtime")
    hub.kill9()
    assert (hub.home / "agorad.sock").exists() and (hub.home / "agorad.pid").exists()
    again = Hub(hub.home).start()
    try:
        assert "stale-socket" in again.log()
        assert again.call("agents.get", agent="runtime")["agent"]["id"] == "runtime"  # survived kill -9
        with again.client("runtime", key) as seat:
            seat.call("agents.heartbeat")
    finally:
        again.stop()


def test_a_lock_held_by_no_running_hub_is_said_as_such(home):
    """agorad.lock is also held by a hub starting or stopping and by an agora restore under way; with no live
    hub in the pidfile (here a killed hub's, and a test holding the lock) a start said "another hub is already
    running (pid ...)", naming a dead pid or "?", and sent the reader looking for a hub that was not there."""
    import fcntl

    home.mkdir(mode=0o700)
    (home / "agorad.pid").write_text("999999\nversion=0\n")  # a pid no process has (pid_max is lower)
    fd = os.open(home / "agorad.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        done = subprocess.run([AGORAD, "--home", str(home)], capture_output=True, text=True, timeout=10)
        assert done.returncode == 1 and "already running" not in done.stderr
        assert f"{home}/agorad.lock is held by another process" in done.stderr and "agora restore" in done.stderr
    finally:
        os.close(fd)


def test_a_non_socket_at_the_socket_path_is_never_deleted(home):
    home.mkdir(mode=0o700)
    (home / "agorad.sock").write_text("precious")
    done = subprocess.run([AGORAD, "--home", str(home)], capture_output=True, text=True, timeout=10)
    assert done.returncode == 1
    assert "not a socket" in done.stderr
    assert (home / "agorad.sock").read_text() == "precious"


def test_socket_path_too_long_is_a_clear_error(tmp_path):
    deep = tmp_path / ("d" * 100) / "home"
    done = subprocess.run([AGORAD, "--home", str(deep)], capture_output=True, text=True, timeout=10)
    assert done.returncode == 1
    assert "shorter AGORA_HOME" in done.stderr


def test_a_home_whose_path_is_not_utf8_is_a_clear_error(home):
    """SQLite takes only UTF-8 file names: a home whose name holds other bytes is refused with one line that
    names it (the hub died with apsw's UnicodeEncodeError, a traceback)."""
    odd = os.fsencode(str(home.parent)) + b"/h\xff"
    done = subprocess.run([AGORAD, "--home", odd], capture_output=True, text=True, errors="replace", timeout=10)
    assert done.returncode == 1
    assert "not valid UTF-8" in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_log_is_one_line_per_event_without_secrets(hub):
    key = hub.add_agent("runtime")
    with hub.client("runtime", key) as seat:
        seat.call("agents.heartbeat", status="busy")
    hub.stop()
    log = hub.log()
    assert key not in log
    assert all(line.startswith("agorad ") for line in log.splitlines())


def test_acknowledged_registration_survives_kill9(hub):
    hub.add_agent("memory", liveness_mode="always-on")
    with hub.client() as operator:
        operator.call("kb.put", key="note", value="kept")
    hub.kill9()
    again = Hub(hub.home).start()
    try:
        assert again.call("agents.get", agent="memory")["agent"]["liveness_mode"] == "always-on"
        assert again.call("kb.get", key="note")["entry"]["value"] == "kept"
    finally:
        again.stop()


def test_peer_with_another_uid_is_refused(hub):
    if os.getuid() != 0:
        import pytest

        pytest.skip("needs root to connect as another uid")
    # Open the path up so only SO_PEERCRED stands between uid 65534 and the hub.
    os.chmod(hub.home.parent, 0o711)
    os.chmod(hub.home, 0o711)
    os.chmod(hub.home / "agorad.sock", 0o666)
    script = (
        "import os, socket\n"
        "os.setgid(65534); os.setuid(65534)\n"
        "s = socket.socket(socket.AF_UNIX); s.connect(%r)\n"
        "s.sendall(b'{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"agents.list\"}\\n')\n"
        "data = b''\n"
        "while True:\n"
        "    chunk = s.recv(65536)\n"
        "    if not chunk: break\n"
        "    data += chunk\n"
        "print(data.decode())\n"
    ) % str(hub.home / "agorad.sock")
    done = subprocess.run(["python3", "-c", script], capture_output=True, text=True, timeout=10)
    assert '"unauthorized"' in done.stdout and "uid 65534" in done.stdout
    assert '"agents"' not in done.stdout
    assert "peer-uid" in hub.log()
    assert hub.call("hub.hello")["protocol"] == 1


def test_wal_is_checkpointed_off_the_request_path(hub):
    from tests.hubproc import wait_for

    # Autocheckpoint is off in the hub; the schema it wrote reaches the main file only
    # through the checkpoint thread.
    wait_for(lambda: (hub.home / "agora.db").stat().st_size > 8192, what="the checkpointer to copy the WAL")
    status = hub.call("hub.status")
    assert status["counts"]["messages"] == 0 and status["counts"]["channels"] == 1


def test_agora_down_stops_the_hub_as_sigterm_does_and_waits_for_it(hub):
    from tests.hubproc import AGORA

    env = {**os.environ, "AGORA_HOME": str(hub.home)}
    hub.add_agent("runtime")  # acknowledged before the stop: still there after it
    done = subprocess.run([AGORA, "down", "--json"], env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and json.loads(done.stdout) == {"stopped": True, "pid": hub.proc.pid,
                                                                 "home": str(hub.home)}
    assert hub.proc.poll() == 0  # exited before down returned (its parent here reaps it)
    assert not hub.home.joinpath("agorad.sock").exists() and not hub.home.joinpath("agorad.pid").exists()
    assert "stopped" in hub.log()
    again = subprocess.run([AGORA, "down"], env=env, capture_output=True, text=True, timeout=30)
    assert again.returncode == 3 and "nothing to stop" in again.stderr
    hub.start()
    assert [a["id"] for a in hub.call("agents.list")["agents"]] == ["runtime"]


def test_agora_down_says_so_when_the_signalled_hub_has_not_exited_within_the_timeout(hub, monkeypatch):
    """The hub answered and was signalled, but is still there at --timeout (stopped here just before its
    SIGTERM, as a hub stuck in a long write would be): exit 1, naming the pid and what to do, and the
    hub is not killed. Once it runs again it takes the pending SIGTERM and stops as usual."""
    from click.testing import CliRunner

    from agorad.cli import down as down_cli

    signals = []
    real_signal = down_cli._pidfd_signal

    def stopped_first(handle, pid):
        os.kill(pid, signal.SIGSTOP)
        signals.append(pid)
        real_signal(handle, pid)

    monkeypatch.setattr(down_cli, "_pidfd_signal", stopped_first)
    try:
        done = CliRunner().invoke(down_cli.down, ["--home", str(hub.home), "--timeout", "1", "--json"])
        assert signals == [hub.proc.pid], "the pidfd path was not taken on this kernel"
        assert done.exit_code == 1, done.output
        assert f"the hub (pid {hub.proc.pid}) has not exited after 1s" in done.output
        assert f"kill -9 {hub.proc.pid}" in done.output
        reported = json.loads(done.output[:done.output.index("agora: ")])  # the JSON, then the error on stderr
        assert reported["stopped"] is False and "has not exited" in reported["error"]
        assert hub.proc.poll() is None  # waited for, never killed
    finally:
        os.kill(hub.proc.pid, signal.SIGCONT)
    assert hub.proc.wait(timeout=30) == 0  # the pending SIGTERM: a clean stop
    hub.start()

def test_agora_down_signals_nothing_it_cannot_tie_to_the_homes_hub(hub, tmp_path):
    """Each refusal exits 1 and leaves the hub running: a URL in effect (a remote hub is not this host's to
    stop); a socket path that is a symbolic link (into another home); a process that does not answer
    hub.status within --timeout (stopped here; a hung hub); and, where a PID namespace can be made, a hub the
    kernel cannot name from inside it (its pid there would be some other process's)."""
    from tests.hubproc import AGORA

    env = {**os.environ, "AGORA_HOME": str(hub.home)}

    def down(*args, code=1, run_env=None, prefix=()):
        done = subprocess.run([*prefix, AGORA, *args], env=run_env or env, capture_output=True, text=True, timeout=60)
        assert done.returncode == code, (args, done.returncode, done.stdout, done.stderr)
        assert hub.proc.poll() is None, f"the hub stopped on {args}"
        return done.stderr

    assert "names a hub on another host" in down("--url", "ws://127.0.0.1:9/", "down")
    elsewhere = tmp_path / "other"
    elsewhere.mkdir(mode=0o700)
    (elsewhere / "agorad.sock").symlink_to(hub.home / "agorad.sock")
    assert "is a symbolic link" in down("down", "--home", str(elsewhere))
    os.kill(hub.proc.pid, signal.SIGSTOP)
    try:
        stuck = down("down", "--timeout", "1")
    finally:
        os.kill(hub.proc.pid, signal.SIGCONT)
    assert f"(pid {hub.proc.pid}) but did not answer hub.status" in stuck
    assert hub.call("hub.status")["pid"] == hub.proc.pid  # never signalled: it serves on
    namespace = ("unshare", "--pid", "--fork", "--mount-proc")
    if subprocess.run([*namespace, "true"], capture_output=True).returncode == 0:
        assert "another PID namespace" in down("down", prefix=namespace)


def detached(home, *args, env=None, **run):
    """`agora up --detach` on `home`; the finished process. Tests stop what it started with `agora down`."""
    from tests.hubproc import AGORA

    return subprocess.run([AGORA, "up", "--detach", *args], env={**os.environ, "AGORA_HOME": str(home), **(env or {})},
                          capture_output=True, text=True, timeout=60, **run)


def stop_detached(home) -> subprocess.CompletedProcess:
    from tests.hubproc import AGORA

    return subprocess.run([AGORA, "down"], env={**os.environ, "AGORA_HOME": str(home)}, capture_output=True,
                          text=True, timeout=60)


def open_files(pid: int) -> list[str]:
    """What the process's descriptors name; one closed while they are listed (a connection) is left out."""
    found = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            found.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except FileNotFoundError:
            pass
    return found


def test_agora_up_detach_returns_once_the_hub_answers_and_down_stops_it():
    """`agora up --detach`: the hub in a session of its own, working from /, holding none of its caller's
    descriptors, its log in the home (0600); the command returns once that hub answers, and refuses (exit
    1, saying why) when a hub runs there already."""
    home = short_home()
    started = detached(home, stdin=subprocess.DEVNULL)
    try:
        assert started.returncode == 0, started.stderr
        pid = Hub(home).call("hub.status")["pid"]
        assert started.stdout == (f"the hub runs on {home} (pid {pid}); its log: {home}/agorad.log; "
                                  "stop it with `agora down`\n")
        assert "ready" in started.stderr  # what the hub logged while starting
        assert os.getsid(pid) == pid  # a session of its own: no terminal's hangup reaches it
        assert os.readlink(f"/proc/{pid}/cwd") == "/"  # it pins no directory
        assert len([target for target in open_files(pid) if target.startswith("pipe:")]) <= 1  # its refusal pipe
        assert mode(home / "agorad.log") == 0o600
        again = detached(home)
        assert again.returncode == 1 and f"another hub is already running on {home} (pid {pid})" in again.stderr
        assert Hub(home).call("hub.status")["pid"] == pid  # the first serves on
        assert "not-started reason=" in (home / "agorad.log").read_text()  # the refusal, in the log's own form
    finally:
        stopped = stop_detached(home)
    assert stopped.returncode == 0, stopped.stderr
    assert not (home / "agorad.sock").exists()


def test_agora_up_detach_holds_no_pipe_of_its_caller_open():
    """A caller reading the command's output through a pipe gets its end-of-file when the command exits,
    not when the hub does: the hub keeps no descriptor of its caller's, however it was started (here with
    stdin closed, stdout a pipe and a stray descriptor 5 on the same pipe)."""
    from tests.hubproc import AGORA

    home = short_home()

    reader = subprocess.Popen(["sh", "-c", f"exec <&- 5>&1; {AGORA} up --detach 2>&1"], stdout=subprocess.PIPE,
                              env={**os.environ, "AGORA_HOME": str(home)})
    try:
        output, _ = reader.communicate(timeout=30)  # hangs while the hub holds the pipe
        assert reader.returncode == 0 and b"the hub runs on" in output, output
    finally:
        stop_detached(home)


def test_agora_up_detach_refuses_before_touching_the_home_and_shows_its_warnings():
    """The refusals a foreground hub makes before anything is touched come before the fork, so a refused
    --detach creates nothing; a warning the starting hub logs reaches whoever ran it."""
    home = short_home()
    refused = detached(home, "--listen", "0.0.0.0:0")
    assert refused.returncode == 1 and "beyond loopback without TLS" in refused.stderr
    assert not home.exists()
    deep = home / ("d" * 120)  # its socket path is past what a Unix socket can bind (a review: it was made)
    refused = detached(deep)
    assert refused.returncode == 1 and "limit of Unix sockets" in refused.stderr, refused.stderr
    assert not home.exists()
    warned = detached(home, "--listen", "0.0.0.0:0", "--insecure")
    try:
        assert warned.returncode == 0, warned.stderr
        assert "WARNING: the remote port ws://0.0.0.0:" in warned.stderr
    finally:
        stop_detached(home)


def test_agora_up_detach_keeps_its_log_private_and_refuses_a_log_that_is_not_a_file(tmp_path):
    """A log left 0644 is made 0600; a FIFO or a symbolic link where the log goes is refused at once (the
    open could wait forever on a FIFO, and would write through a link), with one line and no traceback."""
    home = short_home()
    home.mkdir(mode=0o700)
    log = home / "agorad.log"
    log.write_text("")
    log.chmod(0o644)
    started = detached(home, "--home", str(home), env={"AGORA_HOME": str(tmp_path / "another")})
    try:
        assert started.returncode == 0, started.stderr
        assert started.stdout.endswith(f"stop it with `agora down --home {home}`\n")  # not the default home
        assert mode(log) == 0o600
    finally:
        stop_detached(home)
    log.unlink()
    os.mkfifo(log)
    fifo = detached(home)
    assert fifo.returncode == 1 and "is not a regular file" in fifo.stderr and "Traceback" not in fifo.stderr
    log.unlink()
    log.symlink_to(tmp_path / "elsewhere")
    linked = detached(home)
    assert linked.returncode == 1 and "is not a regular file" in linked.stderr and "Traceback" not in linked.stderr
    assert not (tmp_path / "elsewhere").exists() and not (home / "agorad.sock").exists()


def test_agora_up_detach_finds_a_refusal_under_a_parent_that_ignores_sigchld():
    """A parent that ignores SIGCHLD passes that on: the child would be reaped unseen, and the command
    would not learn why its hub did not start."""
    home = short_home()
    started = detached(home)
    try:
        from tests.hubproc import AGORA

        ignoring = ("import os, signal, sys; signal.signal(signal.SIGCHLD, signal.SIG_IGN); "
                    "os.execv(sys.argv[1], sys.argv[1:])")
        again = subprocess.run([sys.executable, "-c", ignoring, AGORA, "up", "--detach"], capture_output=True,
                               text=True, timeout=60, env={**os.environ, "AGORA_HOME": str(home)})
        assert again.returncode == 1 and "another hub is already running" in again.stderr, again.stderr
    finally:
        stop_detached(home)
    assert started.returncode == 0
