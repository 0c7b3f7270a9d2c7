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
    """The unit text running `exec_start` (an absolute path or a %h path), on `home` if given. ValueError for
    a path systemd cannot take (see `_command`, `_quoted`)."""
    environment = f'Environment="AGORA_HOME={_quoted(home, "the home")}"\n' if home else ""
    return (
        "[Unit]\n"
        "Description=Agora hub (agorad): where AI agents meet on this host\n"
        "Documentation=man:agorad(1) man:agora-up(1)\n"
        "\n"
        "[Service]\n"
        "Type=simple\n"
        f"ExecStart={exec_start if exec_start.startswith('%h/') else _command(exec_start)}\n"
        f"{environment}"
        "UMask=0077\n"
        "NoNewPrivileges=yes\n"
        "Restart=on-failure\n"
        "RestartSec=2\n"
        "\n"
        "[Install]\n"
        "WantedBy=default.target\n"
    )


# systemd.syntax(7) and systemd.service(5), checked with systemd-analyze verify (systemd 252): a value is
# unquoted with C-style escapes, so a backslash or a double quote inside double quotes is escaped; `%` starts
# a specifier in both settings (a literal one is `%%`); a line break or control character would end or
# corrupt the line. An executable's path may be quoted (a space in it), but one holding a backslash or a
# quote is refused by systemd as "special characters", whatever the escaping.
def _quoted(value: str, what: str) -> str:
    if any(not c.isprintable() for c in value):
        raise ValueError(f"{what} {value!r} holds a line break or control character, which a systemd unit "
                         "cannot carry; choose another path")
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")


def _command(executable: str) -> str:
    if any(c in executable for c in "\\\"'"):
        raise ValueError(f"systemd refuses to run an executable whose path holds a backslash or a quote: "
                         f"{executable}; install agora under a path without them")
    return f'"{_quoted(executable, "the agorad path")}"' if any(c.isspace() for c in executable) else \
        _quoted(executable, "the agorad path")


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
