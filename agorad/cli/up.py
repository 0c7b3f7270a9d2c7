"""`agora up` / `agorad`: run the hub in the foreground."""

from __future__ import annotations

import os

import click

from agorad.cli.common import DURATION, fail, home_option
from agorad.paths import Home


@click.command("up", context_settings={"help_option_names": ["-h", "--help"]})
@home_option
@click.option("--sweep-interval", type=DURATION, default="5m", show_default=True,
              help="How often the sweeper writes dormant and expired transitions.")
@click.option("--ephemeral-ttl", type=DURATION, default="1h", show_default=True,
              help="How long an ephemeral agent stays listed without a heartbeat.")
@click.option("--synchronous", type=click.Choice(["normal", "full"]), default="normal", show_default=True,
              help="SQLite durability: normal survives a hub crash; full also survives power loss, slower.")
def up(home, sweep_interval, ephemeral_ttl, synchronous):
    """Run the hub in the foreground on the home directory.

    Creates the home (0700), the database and the socket (0600). Stops
    cleanly on SIGTERM or SIGINT. Logs one line per event on stderr.
    """
    from agorad.daemon import StartupError, run
    from agorad.hub import Settings

    settings = Settings(
        sweep_interval=sweep_interval, ephemeral_ttl=ephemeral_ttl, synchronous=synchronous.upper(),
        test_clock=os.environ.get("AGORA_TEST_CLOCK") == "1",
    )
    try:
        raise SystemExit(run(Home.resolve(home), settings))
    except StartupError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot start the hub: {exc}")


def agorad_main():
    """The `agorad` console script: the same command as `agora up`."""
    up(prog_name="agorad")
