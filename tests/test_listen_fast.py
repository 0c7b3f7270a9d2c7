"""`agora listen`'s fast path (agorad/cli/listen_fast.py) parses exactly as click does, or leaves the
line to click; and an armed listener reached through it loads none of what it exists to avoid."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time

import click
import pytest

from agorad.cli import listen_fast
from agorad.cli.group import main
from agorad.surface import wiring
from agorad.surface.filenames import pathlib_form

ACCEPTED = [
    ["listen", "--as", "bob", "--home", "/tmp/h"],
    ["listen", "--home", "/tmp/h", "--as", "bob", "--debounce", "0", "--watcher", "inotify"],
    ["listen", "--as=bob", "--home=/tmp/h h/", "--once", "--max-wait", "2h", "--adaptive", "--preview"],
    ["listen", "--as", "bob", "--home", "/tmp/h", "--heartbeat", "90s", "--source", "file", "--important-only"],
    ["listen", "--as", "bob", "--home", "/tmp/h", "--notify-dir", "/tmp//n/", "--watcher", "watchdog"],
    wiring.hook_listen("agora", "bob", pathlib.Path("/tmp/h"))[1:],  # what `agora setup` writes
    wiring.loop_listen("agora", "bob", pathlib.Path("/tmp/h"))[1:],
    ["listen", "--as", "Not-An-Id", "--home", "/tmp/h"],  # click accepts it too; the run refuses it
    ["listen", "--as", "bob", "--home", "/tmp/h", "--max-wait", "30"],  # without --once: click accepts, the run refuses
    ["listen", "--as", "bob", "--home", "/tmp/h", "--source", "ws", "--url", "ws://127.0.0.1:7777/"],  # a remote seat
    ["listen", "--url=wss://hub.example:443/", "--as=bob", "--home=/tmp/h", "--once"],
    ["listen", "--as", "bob", "--home", "/tmp/h", "--url", "not-a-url"],  # click accepts any text; the run refuses it
    ["listen", "--as", "bob", "--home", "/tmp/h", "--url", ""],  # empty: as if not given, in both
]
LEFT_TO_CLICK = [
    ["listen", "--as", "bob", "--home", "/tmp/h", "--help"],
    ["listen", "--as", "bob", "--home", "/tmp/h", "--debounce", "soon"],  # click's usage error says why
    ["listen", "--as", "bob", "--home", "/tmp/h", "--max-wait", "0"],  # below the minimum
    ["listen", "--as", "bob", "--home", "/tmp/h", "--watcher", "kqueue"],
    ["listen", "--as", "bob", "--home", "/tmp/h", "--source", "ws2"],
    ["listen", "--as", "bob", "--home", "/tmp/h", "--as", "eve"],
    ["listen", "--as", "bob", "--home", "/tmp/h", "--once", "--once"],
    ["listen", "--as", "bob", "--home", "/tmp/h", "--once=yes"],
    ["listen", "--as", "bob", "--home", "/tmp/h", "extra"],
    ["listen", "--as", "--home", "/tmp/h"],
    ["listen", "--as", "bob", "--home"],
    ["listen", "--as", "bob", "--home", ""],
    ["listen", "--home", "/tmp/h"],  # no --as: click says it is missing (or the seat record supplies it)
    ["listen", "--as", "bob"],  # no --home and no $AGORA_HOME: the seat record may name it
    ["--home", "/tmp/h", "listen", "--as", "bob"],
    ["--url", "ws://127.0.0.1:7777/", "listen", "--as", "bob", "--home", "/tmp/h"],  # the group's: click's
    ["listen", "--as", "bob", "--home", "/tmp/h", "--url"],
    ["listen", "--as", "bob", "--home", "/tmp/h", "--url", "ws://a:1/", "--url", "ws://b:1/"],
    ["listen", "--as", "bob", "--home", "/tmp/h", "--url", "--once"],  # an option where the URL should be
    ["status"],
    [],
]


def click_params(argv: list[str]) -> dict:
    command = main.get_command(None, "listen")
    ctx = command.make_context("listen", list(argv[1:]), parent=click.Context(main, info_name="agora"))
    return ctx.params


def comparable(params: dict) -> dict:
    """Paths as the listener holds them (listen_run._text): click gives Paths, the fast parse text."""
    return {k: pathlib_form(os.fspath(v)) if k in ("lock", "notify_dir") and v is not None else v
            for k, v in params.items()}


@pytest.mark.parametrize("argv", ACCEPTED, ids=" ".join)
def test_the_fast_parse_is_clicks(argv, monkeypatch):
    monkeypatch.delenv("AGORA_HOME", raising=False)
    assert comparable(listen_fast.parse(argv)) == comparable(click_params(argv))


def test_agora_home_stands_in_for_home_as_in_click(monkeypatch, tmp_path):
    monkeypatch.setenv("AGORA_HOME", str(tmp_path))
    argv = ["listen", "--as", "bob", "--once"]
    assert listen_fast.parse(argv)["home"] == click_params(argv)["home"] == str(tmp_path)


@pytest.mark.parametrize("argv", LEFT_TO_CLICK, ids=lambda a: " ".join(a) or "(none)")
def test_anything_else_is_left_to_click(argv, monkeypatch):
    monkeypatch.delenv("AGORA_HOME", raising=False)
    assert listen_fast.parse(argv) is None


def test_paths_click_would_refuse_are_left_to_it(tmp_path, monkeypatch):
    monkeypatch.delenv("AGORA_HOME", raising=False)
    a_file = tmp_path / "file"
    a_file.write_text("")
    for argv in (["listen", "--as", "bob", "--home", str(a_file)],
                 ["listen", "--as", "bob", "--home", str(tmp_path), "--notify-dir", str(a_file)],
                 ["listen", "--as", "bob", "--home", str(tmp_path), "--lock", str(tmp_path)]):
        assert listen_fast.parse(argv) is None
        with pytest.raises(click.BadParameter):
            click_params(argv)


def agora_run(argv: list[str], env: dict) -> subprocess.CompletedProcess:
    """The console script's own call (agorad.cli.run: the fast path when it parses, else click)."""
    return subprocess.run([sys.executable, "-c", "import sys; sys.argv = ['agora', *sys.argv[1:]]; "
                           "import agorad.cli; agorad.cli.run()", *argv], capture_output=True, text=True,
                          env=env, timeout=30)


@pytest.mark.parametrize("url_env, given, cause", [
    (None, [], "--source ws needs the hub's URL"),
    ("ws://127.0.0.1:7777/", ["--url", "http://hub.example/"], "'http://hub.example/' is not a hub URL"),
    ("http://hub.example/", [], "'http://hub.example/' is not a hub URL"),  # $AGORA_URL stands in for --url
    ("ws://127.0.0.1:7777/", ["--url", ""], "no key for bob"),  # an empty --url is none: $AGORA_URL is taken
], ids=["no-url", "url-beats-env", "env-url", "empty-url-is-env"])
def test_the_url_is_resolved_alike_on_both_paths(url_env, given, cause, tmp_path):
    """The fast path and click (reached with the group's --home) take the same URL: --url, else $AGORA_URL."""
    env = {k: v for k, v in os.environ.items() if k not in ("AGORA_HOME", "AGORA_URL", "AGORA_KEY")}
    if url_env:
        env["AGORA_URL"] = url_env
    tail = ["--as", "bob", "--source", "ws", *given]
    fast = ["listen", "--home", str(tmp_path), *tail]
    assert listen_fast.parse(fast) is not None
    ends = [agora_run(argv, env) for argv in (fast, ["--home", str(tmp_path), "listen", *tail])]
    for done in ends:
        assert done.returncode == 1 and cause in done.stderr
        assert done.stdout.startswith("AGORA_LISTEN ended reason=error")
    assert ends[0].stdout == ends[1].stdout


# What an armed listener must not hold (bench/README.md "Listener footprint"): click, dataclasses with
# inspect, and pathlib with the chain it brings; json, re and enum, the Python layers of socket and
# signal, which load enum, and collections and functools (cjson.py, client.py, tests/test_cjson.py); and on
# the file source, websockets (the ws source's).
HEAVY = ("click", "dataclasses", "inspect", "pathlib", "urllib.parse", "ipaddress", "fnmatch", "typing", "websockets",
         "json", "re", "enum", "socket", "signal", "selectors", "collections", "functools")

# The console script's own call in a thread-free probe: armed, it prints which of HEAVY it holds to
# stderr from a SIGUSR1 handler, then the test stops it.
PROBE = f"""
import _signal, sys
def report(signum, frame):
    sys.stderr.write("holds " + repr(sorted(m for m in {HEAVY!r} if m in sys.modules)) + "\\n")
    sys.stderr.flush()
_signal.signal(_signal.SIGUSR1, report)
sys.argv = ["agora", *sys.argv[1:]]
import agorad.cli
agorad.cli.run()
"""


@pytest.mark.parametrize("url", [None, "ws://127.0.0.1:9/"], ids=["no-url", "agora-url-set"])
def test_an_armed_listener_holds_nothing_heavy(hub, url):
    """Also with $AGORA_URL set: the hub answers here, so --source auto is the file, and loads no websockets."""
    hub.add_agent("bob", liveness_mode="always-on")
    env = {k: v for k, v in os.environ.items() if k not in ("AGORA_HOME", "AGORA_URL")}
    if url:
        env["AGORA_URL"] = url
    ear = subprocess.Popen([sys.executable, "-c", PROBE, "listen", "--as", "bob", "--home", str(hub.home),
                            "--debounce", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        assert ear.stdout.readline().startswith(b"AGORA_LISTEN armed source=file ")
        ear.send_signal(__import__("signal").SIGUSR1)
        deadline = time.monotonic() + 10
        line = b""
        while not line.startswith(b"holds") and time.monotonic() < deadline:
            line = ear.stderr.readline()
        assert line == b"holds []\n"
    finally:
        ear.terminate()
        ear.wait(timeout=10)


def test_help_is_clicks():
    done = subprocess.run([sys.executable, "-c", "import sys; sys.argv = ['agora', 'listen', '--help']; "
                           "import agorad.cli; agorad.cli.run()"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and "Usage: agora listen [OPTIONS]" in done.stdout and "--watcher" in done.stdout
