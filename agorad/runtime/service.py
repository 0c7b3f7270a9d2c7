"""The systemd user unit: rendered here, installed by `agora service install`.

`share/systemd/agorad.service` is this rendering for a `pip install --user`
layout; a test keeps the two identical.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

UNIT_NAME = "agorad.service"


def render_unit(exec_start: str, home: str | None = None) -> str:
    """The unit text running `exec_start` (an absolute path or a %h path), on `home` if given."""
    environment = f'Environment="AGORA_HOME={_escape(home)}"\n' if home else ""
    return (
        "[Unit]\n"
        "Description=Agora hub (agorad): where AI agents meet on this host\n"
        "Documentation=man:agorad(1) man:agora-up(1)\n"
        "\n"
        "[Service]\n"
        "Type=simple\n"
        f"ExecStart={_escape(exec_start) if not exec_start.startswith('%h/') else exec_start}\n"
        f"{environment}"
        "UMask=0077\n"
        "NoNewPrivileges=yes\n"
        "Restart=on-failure\n"
        "RestartSec=2\n"
        "\n"
        "[Install]\n"
        "WantedBy=default.target\n"
    )


def _escape(value: str) -> str:
    # systemd expands %-specifiers in these settings; a literal % is written %% (systemd.unit(5)).
    return value.replace("%", "%%").replace('"', '\\"')


def agorad_executable() -> Path:
    """The absolute path of this installation's `agorad` script."""
    beside = Path(sys.executable).parent / "agorad"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside.absolute()
    found = shutil.which("agorad")
    if found:
        return Path(found).absolute()
    raise FileNotFoundError("cannot find this installation's agorad script beside the Python interpreter or on PATH")


def user_unit_dir() -> Path:
    """Where systemd looks for a user's own units: $XDG_CONFIG_HOME/systemd/user (systemd.unit(5)).

    platformdirs resolves the XDG config directory ($XDG_CONFIG_HOME, else ~/.config).
    """
    import platformdirs  # only `agora service` pays for it

    return platformdirs.user_config_path() / "systemd" / "user"
