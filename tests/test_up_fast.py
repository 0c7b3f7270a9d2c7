"""`agorad`'s fast path (agorad/cli/up_fast.py) starts the hub exactly as click would, or leaves the
line to click; and a hub started through it loads no click."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from agorad.cli import up, up_fast, up_run
from agorad.surface.paths import Home
from tests.hubproc import AGORAD, wait_for


class Started(Exception):
    """What serve was given, instead of a hub."""


@pytest.fixture
def served(monkeypatch):
    """serve() records (home, settings, program) and raises Started instead of running a hub."""
    seen = []

    def record(where, settings, program):
        seen.append((where, settings, program))
        raise Started()

    monkeypatch.setattr(up_run, "serve", record)
    return seen


def by_click(argv: list[str], served) -> tuple:
    with pytest.raises(Started):
        up.up.main(argv, prog_name="agorad", standalone_mode=False)
    return served.pop()


def by_fast_path(argv: list[str], served, monkeypatch) -> tuple:
    monkeypatch.setattr(sys, "argv", ["agorad", *argv])
    with pytest.raises(Started):
        up_fast.main()
    return served.pop()


@pytest.mark.parametrize("argv, env_home", [
    (["--home", "{home}"], None),
    (["--home={home}"], None),
    ([], "{home}"),  # the systemd unit: `agorad` with $AGORA_HOME
    (["--home", "{home}"], "/elsewhere"),  # the command line wins, as in click
    (["--home", "{home}/new/"], None),  # not there yet: made at the start
])
def test_the_fast_path_starts_the_hub_click_would(argv, env_home, tmp_path, served, monkeypatch):
    home = str(tmp_path / "h")
    argv = [word.format(home=home) for word in argv]
    if env_home is None:
        monkeypatch.delenv("AGORA_HOME", raising=False)
    else:
        monkeypatch.setenv("AGORA_HOME", env_home.format(home=home))
    assert up_fast.parse(argv) == {"home": argv[-1].removeprefix("--home=") if argv else home}
    fast, clicked = by_fast_path(argv, served, monkeypatch), by_click(argv, served)
    assert fast == clicked
    assert isinstance(fast[0], Home) and fast[2] == "agorad"


@pytest.mark.parametrize("env_home", [None, ""])
def test_no_home_outside_a_workspace_is_the_default_home_as_in_click(env_home, tmp_path, served, monkeypatch):
    """The unit `agora service install` writes without a home: a bare `agorad`, no $AGORA_HOME (or an
    empty one, which click takes for none), run where no seat record is."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    if env_home is None:
        monkeypatch.delenv("AGORA_HOME", raising=False)
    else:
        monkeypatch.setenv("AGORA_HOME", env_home)
    assert up_fast.parse([]) == {"home": None}
    fast, clicked = by_fast_path([], served, monkeypatch), by_click([], served)
    assert fast == clicked and fast[0].root_text == str(tmp_path / ".agora")


@pytest.mark.parametrize("argv", [
    ["--help"], ["-h"], ["--version"],
    ["--home", "{home}", "--detach"],
    ["--home", "{home}", "--synchronous", "normal"],
    ["--home", "{home}", "--home", "{home}"],  # twice: click takes the last
    ["--home"], ["--home", "--detach"],
    ["--home", "{file}"],  # click: "is a file"
    ["--home", ""],
])
def test_anything_else_is_left_to_click(argv, tmp_path, monkeypatch):
    monkeypatch.delenv("AGORA_HOME", raising=False)
    (tmp_path / "f").write_text("")
    argv = [word.format(home=str(tmp_path / "h"), file=str(tmp_path / "f")) for word in argv]
    assert up_fast.parse(argv) is None


def test_a_workspace_with_a_seat_record_is_left_to_click(tmp_path, monkeypatch):
    """click's SharedOption takes the record's home when none is given (and words a broken record)."""
    monkeypatch.delenv("AGORA_HOME", raising=False)
    (tmp_path / ".agora").mkdir()
    (tmp_path / ".agora" / "seat.toml").write_text("not toml [")
    monkeypatch.chdir(tmp_path)
    assert up_fast.parse([]) is None
    monkeypatch.setenv("AGORA_HOME", str(tmp_path / "h"))  # $AGORA_HOME comes before the record, as in click
    assert up_fast.parse([]) == {"home": str(tmp_path / "h")}


def test_shell_completion_is_left_to_click(tmp_path, monkeypatch):
    """click completes by running the program with _AGORAD_COMPLETE set: it started a hub instead."""
    monkeypatch.setenv("AGORA_HOME", str(tmp_path / "h"))
    monkeypatch.setenv("_AGORAD_COMPLETE", "bash_source")
    assert up_fast.parse([]) is None
    done = subprocess.run([AGORAD], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "AGORA_HOME": str(tmp_path / "h"), "_AGORAD_COMPLETE": "bash_source"})
    assert done.returncode == 0 and "_agorad_completion" in done.stdout and not (tmp_path / "h").exists()


def test_a_hub_started_through_the_fast_path_serves_and_loads_no_click(tmp_path):
    """The console script's call as the systemd unit makes it (`agorad`, $AGORA_HOME), in a probe that
    says whether click is loaded once the hub's socket is there, then stops the hub with SIGTERM."""
    home = tmp_path / "h"
    probe = ("import sys, threading\n"
             "from agorad.cli import up_fast\n"
             "def report():\n"
             "    import os, socket, time\n"
             f"    path = {str(home / 'agorad.sock')!r}\n"
             "    while not os.path.exists(path): time.sleep(0.01)\n"
             "    print('click' in sys.modules, flush=True)\n"
             "    os.kill(os.getpid(), 15)\n"
             "threading.Thread(target=report, daemon=True).start()\n"
             "sys.argv = ['agorad']\n"
             "up_fast.main()\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                          env={"AGORA_HOME": str(home), "PATH": "/usr/bin:/bin"})
    assert done.stdout == "False\n", done.stderr
    assert "ready home=" in done.stderr and "stopped" in done.stderr


def test_a_start_refused_is_worded_as_clicks(tmp_path):
    """Another hub on the home: the same line, whichever path started the second."""
    home = tmp_path / "h"
    first = subprocess.Popen([AGORAD, "--home", str(home)], stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: (home / "agorad.sock").exists(), timeout=20)
        fast = subprocess.run([AGORAD, "--home", str(home)], capture_output=True, text=True, timeout=30)
        slow = subprocess.run([AGORAD, "--home", str(home), "--synchronous", "full"], capture_output=True,
                              text=True, timeout=30)
    finally:
        first.terminate()
        first.wait(timeout=20)
    assert fast.returncode == slow.returncode == 1
    assert fast.stderr == slow.stderr and fast.stderr.startswith("agorad: ")
