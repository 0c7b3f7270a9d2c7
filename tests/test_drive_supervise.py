"""One harness turn as a bounded, supervised process tree (agora_drive/supervise.py, tree.py).

Each test runs a small Python child written to tmp_path. Timings are asserted only as generous upper
bounds: the machine may be loaded.
"""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from agora_drive.supervise import LINE_LIMIT, run_turn, scrubbed_environment
from agora_drive.tree import TURN_TOKEN
from agorad.surface import settings

MARGIN = 3.0  # seconds a loaded machine may add to any bound


def child(tmp_path: Path, body: str, name: str = "child") -> list[str]:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    return [sys.executable, str(path)]


def turn(argv, tmp_path, **options):
    lines: list[str] = []
    options.setdefault("limit", 60.0)
    started = time.monotonic()
    done = run_turn(argv, cwd=tmp_path, env=dict(os.environ), on_line=lines.append, **options)
    return done, lines, time.monotonic() - started


def ended(pid: int) -> bool:
    """The process is gone or a zombie (a parent that does not reap is not ours to judge)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_until(condition, timeout: float = MARGIN) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def pid_in(path: Path) -> int:
    assert wait_until(lambda: path.exists() and path.read_text().strip()), f"no pid written to {path}"
    return int(path.read_text())


# A grandchild that leaves the group (setsid), ignores SIGTERM, writes its pid and sleeps, keeping
# whatever stdout it was given. argv: pidfile [--no-pipes]
GRANDCHILD = """
    import os, signal, sys, time
    os.setsid()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if "--no-pipes" in sys.argv:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    time.sleep(120)
"""


def test_a_normal_turn_gives_every_line_and_its_status(tmp_path):
    argv = child(tmp_path, r"""
        import sys
        sys.stdout.buffer.write(b"first\nsecond \xff byte\n\nlast without newline")
        sys.stderr.write("a warning\n")
    """)
    spawned = []
    done, lines, _ = turn(argv, tmp_path, on_spawn=spawned.append)
    assert lines == ["first", "second \ufffd byte", "", "last without newline"]
    assert (done.status, done.signal, done.timed_out, done.stopped, done.spawn_error) == (0, None, False, False, None)
    assert done.stderr_tail == "a warning\n"
    assert spawned == [done.pid] and ended(done.pid)
    assert done.duration > 0


def test_a_crash_is_its_exit_status_and_stderr(tmp_path):
    argv = child(tmp_path, """
        import sys
        print("working", flush=True)
        sys.stderr.write("boom: the model is overloaded")
        sys.exit(3)
    """)
    done, lines, _ = turn(argv, tmp_path)
    assert (done.status, done.signal, done.timed_out) == (3, None, False)
    assert lines == ["working"]
    assert done.stderr_tail == "boom: the model is overloaded"


def test_a_missing_harness_is_a_spawn_error_not_an_exception(tmp_path):
    spawned = []
    done, lines, _ = turn(["agora-no-such-harness", "-p"], tmp_path, on_spawn=spawned.append)
    assert done.spawn_error == "No such file or directory: 'agora-no-such-harness'"
    assert (done.status, done.signal, done.pid, done.stderr_tail) == (None, None, None, "")
    assert spawned == [] and lines == []


def test_a_missing_workspace_is_a_spawn_error(tmp_path):
    done = run_turn([sys.executable, "-c", "pass"], cwd=tmp_path / "gone", env=dict(os.environ), limit=10)
    assert "No such file or directory" in done.spawn_error and done.pid is None


def test_a_turn_past_its_limit_is_killed_with_its_group_even_ignoring_sigterm(tmp_path):
    pidfile = tmp_path / "sleeper.pid"
    argv = child(tmp_path, f"""
        import signal, subprocess, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        sleeper = subprocess.Popen(["sleep", "120"])  # stays in the group
        open({str(pidfile)!r}, "w").write(str(sleeper.pid))
        print("ready", flush=True)
        time.sleep(120)
    """)
    done, lines, elapsed = turn(argv, tmp_path, limit=0.5, grace=0.3)
    assert done.timed_out and not done.stopped
    assert lines == ["ready"], "the child did not reach its SIGTERM handler within the limit (machine too slow?)"
    assert (done.status, done.signal) == (None, signal.SIGKILL)
    assert elapsed < 0.5 + 0.3 + MARGIN
    assert ended(done.pid)
    assert wait_until(lambda: ended(pid_in(pidfile)))


def test_a_setsid_grandchild_holding_stdout_is_killed_after_pipe_grace(tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    grandchild = child(tmp_path, GRANDCHILD, "grandchild")
    argv = child(tmp_path, f"""
        import os, subprocess, time
        subprocess.Popen({grandchild!r} + [{str(pidfile)!r}])  # inherits our stdout and stderr
        while not os.path.exists({str(pidfile)!r}):
            time.sleep(0.01)
        print("leaving", flush=True)
    """)
    seen = {}
    done = run_turn(argv, cwd=tmp_path, env=dict(os.environ), limit=60.0, pipe_grace=0.5,
                    on_line=lambda line: seen.setdefault(line, time.monotonic()))
    returned = time.monotonic()
    assert "leaving" in seen and returned - seen["leaving"] < 0.5 + MARGIN
    assert (done.status, done.timed_out, done.stopped) == (0, False, False)
    assert wait_until(lambda: ended(pid_in(pidfile)))


def test_a_grandchild_that_drops_the_turns_token_is_found_while_the_harness_lives(tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    grandchild = child(tmp_path, GRANDCHILD, "grandchild")
    argv = child(tmp_path, f"""
        import os, subprocess, time
        subprocess.Popen({grandchild!r} + [{str(pidfile)!r}],
                         env={{k: v for k, v in os.environ.items() if k != "AGORA_DRIVE_TURN"}})
        while not os.path.exists({str(pidfile)!r}):
            time.sleep(0.01)
        time.sleep(2.5)  # long enough for the driver to list the harness's descendants
    """)
    done, _, _ = turn(argv, tmp_path, pipe_grace=0.5)
    assert done.status == 0 and not done.timed_out
    assert wait_until(lambda: ended(pid_in(pidfile)))


def test_a_leftover_holding_no_pipe_is_ended_after_pipe_grace(tmp_path):
    pidfile = tmp_path / "daemon.pid"
    grandchild = child(tmp_path, GRANDCHILD, "grandchild")
    argv = child(tmp_path, f"""
        import os, subprocess, time
        subprocess.Popen({grandchild!r} + [{str(pidfile)!r}, "--no-pipes"])
        while not os.path.exists({str(pidfile)!r}):
            time.sleep(0.01)
    """)
    done, _, _ = turn(argv, tmp_path, pipe_grace=0.5)
    assert done.status == 0 and not done.timed_out
    assert wait_until(lambda: ended(pid_in(pidfile)))


def test_a_byte_on_stop_fd_ends_the_turn_and_is_drained(tmp_path):
    argv = child(tmp_path, """
        import time
        print("ready", flush=True)
        time.sleep(120)
    """)
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    try:
        def on_line(line):
            if line == "ready":
                os.write(write_end, b"!")
        done = run_turn(argv, cwd=tmp_path, env=dict(os.environ), limit=60.0, grace=0.3, on_line=on_line,
                        stop_fd=read_end)
        assert done.stopped and not done.timed_out
        assert done.signal == signal.SIGTERM and done.status is None
        assert done.duration < 60.0
        with pytest.raises(BlockingIOError):
            os.read(read_end, 1)
    finally:
        os.close(read_end)
        os.close(write_end)


def test_an_exception_from_a_callback_ends_the_tree_before_it_propagates(tmp_path):
    argv = child(tmp_path, """
        import time
        print("ready", flush=True)
        time.sleep(120)
    """)
    spawned = []

    def on_line(line):
        raise RuntimeError("the driver's own bug")

    with pytest.raises(RuntimeError):
        run_turn(argv, cwd=tmp_path, env=dict(os.environ), limit=60.0, on_line=on_line, on_spawn=spawned.append)
    assert ended(spawned[0])


def test_a_stderr_flood_keeps_only_its_tail(tmp_path):
    argv = child(tmp_path, """
        import sys
        for _ in range(5000):
            sys.stderr.write("x" * 1023 + "\\n")
        sys.stderr.write("THE END\\n")
    """)
    done, _, _ = turn(argv, tmp_path)
    assert done.status == 0
    assert len(done.stderr_tail) == settings.DRIVE_STDERR_TAIL
    assert done.stderr_tail.endswith("x\nTHE END\n")


def test_a_huge_stdout_line_keeps_its_first_mebibyte(tmp_path):
    argv = child(tmp_path, f"""
        import sys
        sys.stdout.write("a" * ({LINE_LIMIT} * 3) + "\\nafter\\n" + "b" * ({LINE_LIMIT} + 5))
    """)
    done, lines, _ = turn(argv, tmp_path)
    assert done.status == 0
    assert [len(line) for line in lines] == [LINE_LIMIT, 5, LINE_LIMIT]
    assert lines[0] == "a" * LINE_LIMIT and lines[1] == "after" and set(lines[2]) == {"b"}


def test_scrubbing_drops_the_hubs_secrets_and_keeps_the_rest():
    env = {"AGORA_KEY": "k1", "AGORA_API_TOKEN": "t", "AGORA_SECRET_SALT": "s", "agora_key": "k2",
           "AGORA_HOME": "/srv/agora", "AGORA_AGENT_ID": "runtime", "ANTHROPIC_API_KEY": "a",
           "GITHUB_TOKEN": "g", "PATH": "/usr/bin"}
    assert scrubbed_environment(env) == {"AGORA_HOME": "/srv/agora", "AGORA_AGENT_ID": "runtime",
                                         "ANTHROPIC_API_KEY": "a", "GITHUB_TOKEN": "g", "PATH": "/usr/bin"}


def test_the_harness_gets_the_environment_it_is_given_and_the_turns_token(tmp_path):
    argv = child(tmp_path, """
        import os
        print(",".join(sorted(k for k in os.environ if k.startswith("AGORA_"))))
    """)
    env = scrubbed_environment({**os.environ, "AGORA_KEY": "secret", "AGORA_HOME": "/srv/agora"})
    names: list[str] = []
    done = run_turn(argv, cwd=tmp_path, env=env, limit=60.0, on_line=lambda line: names.extend(line.split(",")))
    assert done.status == 0
    assert "AGORA_KEY" not in names and "AGORA_HOME" in names and TURN_TOKEN in names

