"""Shared fixtures: a real hub on a temporary home, and the real CLI against it."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from agorad.cli import main
from tests import listenproc
from tests.hubproc import Hub, short_home

# The harness tests drive real Claude Code and Codex CLIs and take minutes: `make test` leaves them out;
# `make test-harness` (which installs the CLIs and sets this) or naming tests/harness runs them.
HARNESS_TESTS = "AGORA_TEST_HARNESS"
collect_ignore = [] if os.environ.get(HARNESS_TESTS) else ["harness"]

# The suite run by a driven agent (agora drive) inherits its turn's environment: the turn's mark would make
# the CLI act as that seat (agora-drive(1) SECURITY), and its seat would be every command's default --as.
for _name in ("AGORA_DRIVE_TURN", "AGORA_AGENT_ID"):
    os.environ.pop(_name, None)


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


@pytest.fixture
def remote(home):
    """A hub that also serves its remote port on loopback (`--listen`), with seats alice and bob:
    `.url` is the port's URL, `.keys` their keys."""
    running = Hub(home, "--listen", "127.0.0.1:0").start()
    running.url = running.call("hub.status")["remote"]
    running.keys = {agent: running.add_agent(agent, liveness_mode="always-on") for agent in ("alice", "bob")}
    yield running
    running.stop()


@pytest.fixture
def certificate(tmp_path):
    """A self-signed certificate for 127.0.0.1 and localhost: (cert.pem, key.pem)."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    made = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                           "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                           "-keyout", str(key), "-out", str(cert)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"openssl cannot make a certificate here: {made.stderr[-200:]!r}")
    return cert, key


@pytest.fixture
def secure_remote(home, certificate):
    """`remote` on a wss:// port: `.url`, `.keys` (alice, bob), and `.tls`, a client context that trusts it."""
    import ssl

    cert, key = certificate
    running = Hub(home, "--listen", "127.0.0.1:0", "--tls-cert", str(cert), "--tls-key", str(key)).start()
    running.url = running.call("hub.status")["remote"]
    running.keys = {agent: running.add_agent(agent, liveness_mode="always-on") for agent in ("alice", "bob")}
    running.tls = ssl.create_default_context(cafile=str(cert))
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


@pytest.fixture(params=["inotify", "watchdog", "poll"])
def watcher(request, monkeypatch):
    """Run the test once per watcher: every `agora listen` started through tests/listenproc.py gets --watcher."""
    monkeypatch.setattr(listenproc, "WATCHER", request.param)
    return request.param
