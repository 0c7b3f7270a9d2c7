"""Start and stop real hubs for tests: a subprocess `agorad` on a short temporary home."""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from agorad.surface.client import Client
from agorad.surface.errors import AgoraError

BIN = Path(sys.executable).parent
AGORAD = str(BIN / "agorad")
AGORA = str(BIN / "agora")


_SHORT_TOPS: list[str] = []  # each short_home's /tmp directory, removed when the test process ends


def short_home() -> Path:
    # Unix socket paths are capped near 107 bytes; pytest's tmp_path can be longer. pytest removes its own
    # directories, not these: a run of the suite left some 250 behind in /tmp.
    top = tempfile.mkdtemp(prefix="agt", dir="/tmp")
    _SHORT_TOPS.append(top)
    return Path(top) / "home"


@atexit.register
def _remove_short_homes() -> None:
    for top in _SHORT_TOPS:
        shutil.rmtree(top, ignore_errors=True)


@contextmanager
def stopped(hub):
    """The hub stopped (SIGSTOP) while the block queues work for it, or changes its files before it can
    answer (it makes a deleted notify directory again at once); it takes it all, in order, once it goes on."""
    hub.proc.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        hub.proc.send_signal(signal.SIGCONT)


def with_sitecustomize(env: dict, directory: Path, code: str) -> dict:
    """`env` with a sitecustomize.py holding `code` in `directory`, first on PYTHONPATH: a real process started
    with it runs `code` first (the tests' way to make one part of it misbehave, or stand for another host)."""
    directory.mkdir(exist_ok=True)
    (directory / "sitecustomize.py").write_text(code)
    return {**env, "PYTHONPATH": os.pathsep.join([str(directory), *filter(None, [env.get("PYTHONPATH")])])}


def wait_for(condition, timeout: float = 10.0, what: str = "condition"):
    """Poll `condition` until it returns a true value or `timeout` passes."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.01)


class Hub:
    """A running `agorad` process with a controllable clock."""

    def __init__(self, home: Path, *args: str, test_clock: bool = True):
        self.home = home
        self.args = args
        self.env = {**os.environ, "AGORA_HOME": str(home)}
        self.env.pop("AGORA_KEY", None)
        if test_clock:
            self.env["AGORA_TEST_CLOCK"] = "1"
        self.proc: subprocess.Popen | None = None
        self.log_path = home.parent / "agorad.log"

    def start(self) -> "Hub":
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([AGORAD, "--home", str(self.home), *self.args], env=self.env,
                                     stdout=subprocess.DEVNULL, stderr=self._log)
        wait_for(self._answers, what=f"the hub on {self.home} to answer")
        return self

    def _answers(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"agorad exited with {self.proc.returncode}: {self.log()}")
        try:
            with Client(self.home, timeout=2) as hub:
                hub.call("hub.hello")
            return True
        except AgoraError:
            return False

    def client(self, as_id: str | None = None, key: str | None = None) -> Client:
        client = Client(self.home).connect()
        if as_id:
            client.hello(as_id, key or (self.home / "keys" / f"{as_id}.key").read_text().strip())
        return client

    def call(self, method: str, **params):
        with self.client() as hub:
            return hub.call(method, **params)

    def add_agent(self, agent_id: str, **params) -> str:
        return self.call("agents.add", agent=agent_id, **params)["key"]

    def advance(self, seconds: float) -> float:
        return self.call("clock.advance", seconds=seconds)["now"]

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=10)
        self._log.close()
        return self.proc.returncode

    def kill9(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)
        self._log.close()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")
