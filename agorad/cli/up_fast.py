"""`agorad` without click: the usual command lines go straight to the hub, with the values click gives.

The systemd unit runs `agorad` with $AGORA_HOME set (`agora service install`), and the docs and
scripts run `agorad --home DIR`: neither needs click, which was about a third of the hub's cold
start and stays loaded for the hub's life (bench/README.md "The hub's cold start"). Anything
else is left to click (up.py): --help, any other option, a repeated one, a --home click would
refuse (a file), and no home given at all (the workspace's seat record may name one: click's
SharedOption reads it). So click stays the one definition of the command line; this is a fast
path to the same call, held to click's by tests/test_up_fast.py.
"""

from __future__ import annotations

import os
import sys

from agorad.cli.fast_parse import options, path_ok
from agorad.surface import settings
from agorad.surface.durations import format_duration, parse_duration


def main():
    """The `agorad` console script."""
    home = parse(sys.argv[1:])
    if home is None:
        from agorad.cli.up import up

        return up(prog_name="agorad")
    from agorad.cli.up_run import hub_settings, serve
    from agorad.surface.paths import Home

    try:
        serve(Home.resolve(home), hub_settings(**defaults()), "agorad")
    except KeyboardInterrupt:  # before the hub's own handlers are in place: as click's main ends it
        sys.stderr.write("Aborted!\n")
        sys.exit(1)


def parse(argv: list[str]) -> str | None:
    """The home `agorad` is to serve, if its command line is one this path takes (the module's docstring)."""
    given = options(argv, {"--home": "home"})
    if given is None:
        return None
    home = given.get("home") or os.environ.get("AGORA_HOME")  # click: an empty $AGORA_HOME is none
    return home if home and path_ok(home, "directory") else None


def defaults() -> dict:
    """hub_settings' arguments as click gives them when the command line leaves every option out
    (up.py's option defaults, converted as its types convert them)."""
    return {
        "sweep_interval": parse_duration(format_duration(settings.SWEEP_INTERVAL), 1.0),
        "ephemeral_ttl": parse_duration(format_duration(settings.EPHEMERAL_TTL), 1.0),
        "synchronous": settings.SYNCHRONOUS, "notify_dir": None, "notify_rotate_mb": float(settings.NOTIFY_ROTATE_MB),
        "max_body_kib": int(settings.MAX_BODY_KIB),
        "escalation": ",".join(format_duration(s) for s in settings.ESCALATION),
        "liveness_flush": parse_duration(format_duration(settings.LIVENESS_FLUSH), 0.0),
        "listen": None, "tls_cert": None, "tls_key": None, "insecure": False,
        "listen_idle": parse_duration(format_duration(settings.REMOTE_IDLE), 1.0),
    }
