"""Fixtures of the harness tests: a scripted model, a wired workspace on a real hub, and cleanup of hook processes.

`make test` leaves this directory out (tests/conftest.py); `make test-harness`
installs the harness CLIs into .cache/harness and runs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from agorad.surface import wiring
from tests.harness import claude, codex, hook_processes as hooks, latency
from tests.harness.install import NotInstalled, binary
from tests.harness.model_server import ScriptedModel
from tests.harness.wire import wire

SEAT = "seat"
PEER = "peer"


@dataclass
class Wired:
    """A workspace wired for SEAT on a running hub, with PEER registered to write to it."""
    hub: object
    workspace: Path
    private: Path      # the harness's own HOME and config live under here
    agent: str = SEAT
    env: dict = field(default_factory=dict)  # the harness's environment (claude.environment, codex.environment)

    @property
    def home(self) -> Path:
        return self.hub.home

    def command(self, argv_for) -> str:
        """A shell command line of agorad.surface.wiring, e.g. `command(wiring.inbox)`, for the model to run."""
        return wiring.shell(argv_for(wiring.agora_executable(), self.agent, self.home))


def pytest_configure(config):
    config.addinivalue_line("markers", "harness(name): needs the named harness CLI installed in .cache/harness")


def pytest_runtest_setup(item):
    for mark in item.iter_markers("harness"):
        try:
            binary(mark.args[0])
        except NotInstalled as exc:
            pytest.fail(str(exc), pytrace=False)  # make test-harness installs first: a missing CLI is a failure


def pytest_terminal_summary(terminalreporter):
    for line in latency.summary():
        terminalreporter.write_line(line)


@pytest.fixture
def model():
    with ScriptedModel() as scripted:
        yield scripted


def _wired(hub, harness: str) -> Wired:
    hub.add_agent(PEER, liveness_mode="always-on")
    base = hub.home.parent
    workspace = base / "ws"
    workspace.mkdir()
    wire(harness, workspace, SEAT, hub.home)
    return Wired(hub, workspace, base / "private")


@pytest.fixture
def claude_seat(hub, model, hook_processes):
    seat = _wired(hub, "claude")
    seat.env = claude.environment(model.url, seat.private)
    return seat


@pytest.fixture
def codex_seat(hub, model, hook_processes):
    seat = _wired(hub, "codex")
    seat.env = codex.environment(model.url, seat.private, seat.workspace)
    return seat


@pytest.fixture
def hook_processes(hub):
    """After the test, end the `agora` processes its harnesses' hooks started on this hub's home."""
    yield
    hooks.end(hub.home, spare={hub.proc.pid})
