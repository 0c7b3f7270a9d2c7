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


def test_a_home_and_an_agorad_path_are_quoted_as_systemd_unquotes_them():
    """A review: a home holding a backslash made systemd drop the Environment line (the hub ran on
    ~/.agora), and an agorad path with a space ran `/tmp/rn` (systemd.syntax(7): C-style escapes)."""
    unit = render_unit("/opt/my tools/bin/agorad", '/srv/a b\\y"q%/home')
    assert 'ExecStart="/opt/my tools/bin/agorad"\n' in unit
    assert 'Environment="AGORA_HOME=/srv/a b\\\\y\\"q%%/home"\n' in unit
    assert "ExecStart=/usr/bin/agorad\n" in render_unit("/usr/bin/agorad")  # a plain path stays plain


@pytest.mark.parametrize("executable, home, said", [
    ("/opt/a\\b/agorad", None, "backslash or a quote"),
    ("/opt/it's/agorad", None, "backslash or a quote"),
    ("/usr/bin/agorad", "/srv/a\nb", "line break or control character"),
    ("/opt/a\tb/agorad", None, "line break or control character"),
])
def test_a_path_a_unit_cannot_carry_is_refused_in_words(executable, home, said):
    with pytest.raises(ValueError) as refused:
        render_unit(executable, home)
    assert said in str(refused.value)


def test_install_refuses_a_home_a_unit_cannot_carry_and_writes_nothing(tmp_path, home):
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    done = Cli(home)("service", "install", "--no-reload", "--home", str(tmp_path / "a\nb"), env=env, code=1)
    assert "cannot write the unit: the home" in done.stderr and "line break" in done.stderr, done.stderr
    assert not (tmp_path / "config").exists()


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze is not installed")
@pytest.mark.parametrize("where", ["plain", "with space and 100%"])
def test_generated_unit_passes_systemd_analyze_verify(tmp_path, where):
    unit = tmp_path / "agorad.service"
    executable = agorad_executable()
    if where != "plain":  # an agorad systemd must find under a quoted path
        executable = tmp_path / where / "agorad"
        executable.parent.mkdir()
        shutil.copy(agorad_executable(), executable)
    unit.write_text(render_unit(str(executable), str(tmp_path / where / "h\\o\"me")))
    # --man=no: the man pages ship in man/, not necessarily on this machine's MANPATH.
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)  # a user manager needs XDG_RUNTIME_DIR, which CI does not set
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}
    done = subprocess.run(["systemd-analyze", "verify", "--user", "--man=no", str(unit)], capture_output=True, text=True,
                          timeout=60, env=env)
    problems = [line for line in done.stderr.splitlines() if "agorad.service" in line]
    assert done.returncode == 0 and not problems, done.stderr
