"""The hook's fast path (agorad/cli/hook_fast.py) parses exactly as click does, or leaves the line to click."""

from __future__ import annotations

import os
import subprocess
import sys

import click
import pytest

from agorad.cli import hook_fast
from agorad.cli.group import main
from agorad.surface import hook_stamps

ACCEPTED = [
    ["hook", "stop", "--harness", "claude", "--as", "bob"],
    ["hook", "stop", "--harness", "codex", "--home", "/tmp/h", "--as", "bob"],
    ["hook", "start", "--as", "bob", "--home", "/tmp/h", "--harness", "gemini"],
    ["hook", "stop", "--harness=cursor", "--as=bob", "--home=/tmp/h h"],
    ["hook", "stop", "--harness", "opencode", "--as", "Not-An-Id"],  # click accepts it too; the run refuses it
]
LEFT_TO_CLICK = [
    ["hook", "stop", "--harness", "vim", "--as", "bob"],  # click's usage error names the choices
    ["hook", "stop", "--as", "bob"],  # missing --harness
    ["hook", "stop", "--harness", "claude"],  # missing --as
    ["hook", "stop", "--harness", "claude", "--as", "bob", "--help"],
    ["hook", "stop", "--harness", "claude", "--as", "bob", "--as", "eve"],
    ["hook", "stop", "--harness", "claude", "--as"],
    ["hook", "stop", "--harness", "claude", "--as", "--home", "/tmp/h"],
    ["hook", "stop", "--harness", "claude", "--as", "bob", "extra"],
    ["hook", "nope", "--harness", "claude", "--as", "bob"],
    ["--home", "/tmp/h", "hook", "stop", "--harness", "claude", "--as", "bob"],
    ["status"],
    [],
]


def click_params(argv: list[str]) -> dict:
    group = main.get_command(None, "hook")
    command = group.commands[argv[1]]
    ctx = command.make_context(argv[1], list(argv[2:]), parent=click.Context(main, info_name="agora"))
    return ctx.params


@pytest.mark.parametrize("argv", ACCEPTED, ids=" ".join)
def test_the_fast_parse_is_clicks(argv, monkeypatch):
    monkeypatch.delenv("AGORA_HOME", raising=False)
    which, harness, as_id, home = hook_fast.parse(argv)
    assert which == argv[1]
    assert click_params(argv) == {"harness": harness, "as_id": as_id, "home": home}


@pytest.mark.parametrize("argv", LEFT_TO_CLICK, ids=lambda a: " ".join(a) or "(none)")
def test_anything_else_is_left_to_click(argv):
    assert hook_fast.parse(argv) is None


# What the hook's path must never load, each measured with `python -X importtime` (bench/README.md,
# "The stop hook"): click (~45 ms), dataclasses through inspect (~16 ms), hashlib (~10 ms), shutil
# (~6 ms), typing (~5 ms), and pathlib with the chain it brings (urllib.parse, ipaddress, fnmatch: ~4.7 ms).
HEAVY = ("click", "dataclasses", "inspect", "hashlib", "typing", "shutil", "pathlib", "urllib.parse", "ipaddress",
         "fnmatch")

# The console script's own call, then which of HEAVY (and of the modules that prove the hook reached a
# hub) it loaded, as the last line of stdout.
PROBE = f"""
import sys
sys.argv = ["agora", *sys.argv[1:]]
import agorad.cli
try:
    agorad.cli.run()
except SystemExit as exit:
    sys.stderr.write(f"exit {{exit.code}}\\n")
print(sorted(m for m in {HEAVY + ("agorad.surface.client",)!r} if m in sys.modules))
"""


def probe(home, payload: bytes = b"{}") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("AGORA_KEY", "AGORA_HOME")}
    return subprocess.run([sys.executable, "-c", PROBE, "hook", "stop", "--harness", "codex", "--as", "bob",
                           "--home", str(home)], input=payload, capture_output=True, env=env, timeout=30)


def test_the_hook_against_no_hub_loads_nothing_heavy():
    done = probe("/nonexistent")
    assert "agora hook stop: there is no Agora home at /nonexistent; check --home" in done.stderr.decode()
    assert done.stdout.decode().splitlines()[-1] == "[]", done.stderr


def test_the_quiet_hook_against_a_hub_loads_nothing_heavy(hub):
    hub.add_agent("bob", liveness_mode="async")
    done = probe(hub.home)
    assert done.stderr.decode() == "exit 0\n"  # quiet: nothing waits, and the hub answered
    assert done.stdout.decode().splitlines() == ["['agorad.surface.client']"]  # it asked the hub, and loaded none of HEAVY
    assert hook_stamps.read(hub.home, "bob", "stop").get("fired")
