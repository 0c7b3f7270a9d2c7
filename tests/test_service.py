"""The systemd user unit: rendered, installed, verified by systemd-analyze."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from agorad.runtime.service import agorad_executable, render_unit
from tests.conftest import Cli

ROOT = Path(__file__).resolve().parent.parent


def test_shipped_unit_is_the_rendering_for_a_user_install():
    assert (ROOT / "share/systemd/agorad.service").read_text() == render_unit("%h/.local/bin/agorad")


def test_install_writes_the_unit_with_this_installations_agorad(tmp_path, home):
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    Cli(home)("service", "install", "--no-reload", "--home", str(home), env=env)
    unit = (tmp_path / "config/systemd/user/agorad.service").read_text()
    assert f"ExecStart={agorad_executable()}\n" in unit
    assert f'Environment="AGORA_HOME={home}"' in unit
    assert agorad_executable().is_absolute()
    removed = Cli(home)("service", "uninstall", "--no-reload", env=env)
    assert "removed" in removed.stdout
    assert not (tmp_path / "config/systemd/user/agorad.service").exists()


def test_percent_in_home_is_escaped():
    assert 'AGORA_HOME=/srv/100%%/agora"' in render_unit("/usr/bin/agorad", "/srv/100%/agora")


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze is not installed")
def test_generated_unit_passes_systemd_analyze_verify(tmp_path):
    unit = tmp_path / "agorad.service"
    unit.write_text(render_unit(str(agorad_executable()), str(tmp_path / "home")))
    # --man=no: the man pages ship in man/, not necessarily on this machine's MANPATH.
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)  # a user manager needs XDG_RUNTIME_DIR, which CI does not set
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}
    done = subprocess.run(["systemd-analyze", "verify", "--user", "--man=no", str(unit)], capture_output=True, text=True,
                          timeout=60, env=env)
    problems = [line for line in done.stderr.splitlines() if "agorad.service" in line]
    assert done.returncode == 0 and not problems, done.stderr
