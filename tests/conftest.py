"""Shared fixtures: a real hub on a temporary home, and the real CLI against it."""

from __future__ import annotations

import os
import shutil

import pytest
from click.testing import CliRunner

from agorad.cli import main
from tests import listenproc
from tests.hubproc import Hub, short_home

# The harness tests drive real harness CLIs for minutes: only `make test-harness` (which sets this) collects them.
collect_ignore = [] if os.environ.get("AGORA_HARNESS_TESTS") else ["harness"]


@pytest.fixture(autouse=True)
def no_listener_outlives_its_test():
    """Listeners a test started (not those of wider fixtures, set up before it) end with it."""
    mark = listenproc.started()
    yield
    listenproc.reap(mark)


@pytest.fixture
def home():
    path = short_home()
    yield path
    shutil.rmtree(path.parent, ignore_errors=True)


@pytest.fixture
def hub(home):
    running = Hub(home).start()
    yield running
    running.stop()


class Cli:
    """Runs `agora ...` in-process through click against a hub's home."""

    def __init__(self, home):
        self.home = home
        self.runner = CliRunner()

    def __call__(self, *args: str, input: str | None = None, env: dict | None = None, code: int = 0):
        result = self.runner.invoke(main, list(args), input=input, env={"AGORA_HOME": str(self.home), "AGORA_KEY": None, **(env or {})})
        assert result.exit_code == code, (
            f"agora {' '.join(args)} exited {result.exit_code}, wanted {code}\n"
            f"stdout: {result.stdout}\nstderr: {result.stderr}\n{result.exception!r}"
        )
        return result


@pytest.fixture
def cli(hub):
    return Cli(hub.home)


@pytest.fixture(params=["inotify", "watchdog"])
def watcher(request, monkeypatch):
    """Run the test once per watcher: every `agora listen` started through tests/listenproc.py gets --watcher."""
    monkeypatch.setattr(listenproc, "WATCHER", request.param)
    return request.param
