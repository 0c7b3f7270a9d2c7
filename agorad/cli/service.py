"""`agora service install|uninstall`: run the hub as a systemd user unit."""

from __future__ import annotations

import click

from agorad.cli.common import fail, handles_errors, json_option, print_json, refuse_in_turn
from agorad.cli.shared import SharedOption


@click.group("service")
def service():
    """Install or remove the systemd user unit that runs agorad."""


@service.command("install")
@click.option("--home", "home", cls=SharedOption, envvar="AGORA_HOME", type=click.Path(file_okay=False),
              help="Run the hub on this home, written into the unit (default: $AGORA_HOME, else ~/.agora).")
@click.option("--no-reload", is_flag=True, help="Do not run `systemctl --user daemon-reload` afterwards.")
@json_option
@handles_errors
def install(home, no_reload, as_json):
    """Write agorad.service into the user's systemd directory."""
    refuse_in_turn()
    from pathlib import Path

    from agorad.runtime.service import UNIT_NAME, agorad_executable, render_unit, user_unit_dir

    home_path = str(Path(home).expanduser().absolute()) if home else None
    try:
        unit = render_unit(str(agorad_executable()), home_path)
    except ValueError as exc:  # a path systemd cannot take: nothing is written
        fail(f"cannot write the unit: {exc}")
    unit_dir = user_unit_dir()
    unit_dir.mkdir(parents=True, exist_ok=True)
    path = unit_dir / UNIT_NAME
    path.write_text(unit)
    reloaded = False if no_reload else _systemctl("daemon-reload")
    if as_json:
        print_json({"unit": str(path), "reloaded": reloaded})
        return
    click.echo(f"wrote {path}")
    click.echo("start it now and at every login with: systemctl --user enable --now agorad")


@service.command("uninstall")
@click.option("--no-reload", is_flag=True, help="Do not run systemctl (disable, daemon-reload).")
@json_option
@handles_errors
def uninstall(no_reload, as_json):
    """Stop and disable the unit, then remove its file."""
    refuse_in_turn()
    from agorad.runtime.service import UNIT_NAME, user_unit_dir

    path = user_unit_dir() / UNIT_NAME
    existed = path.exists()
    if existed and not no_reload:
        _systemctl("disable", "--now", "agorad")
    path.unlink(missing_ok=True)
    reloaded = False if no_reload else _systemctl("daemon-reload")
    if as_json:
        print_json({"unit": str(path), "removed": existed, "reloaded": reloaded})
    else:
        click.echo(f"removed {path}" if existed else f"nothing to remove: {path} does not exist")


def _systemctl(*args: str) -> bool:
    """Run `systemctl --user ARGS`; warn (not fail) when there is no user manager to talk to."""
    import shutil
    import subprocess

    if not shutil.which("systemctl"):
        click.echo("agora: systemctl not found; run the hub with `agora up` instead", err=True)
        return False
    done = subprocess.run(["systemctl", "--user", *args], capture_output=True, text=True)
    if done.returncode != 0:
        click.echo(f"agora: systemctl --user {' '.join(args)} failed: {done.stderr.strip()}", err=True)
    return done.returncode == 0
