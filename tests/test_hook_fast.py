"""The hook's fast path (agorad/cli/hook_fast.py) parses exactly as click does, or leaves the line to click."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest

from agorad.cli import hook_fast
from agorad.cli.group import main

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


def test_the_hook_does_not_import_click():
    code = ("import sys; sys.argv = ['agora', 'hook', 'stop', '--harness', 'codex', '--as', 'bob', '--home', '/nonexistent'];"
            "import agorad.cli\n"
            "try:\n    agorad.cli.run()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('click', 'dataclasses', 'inspect', 'hashlib', 'typing', 'shutil') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=30)
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stderr
