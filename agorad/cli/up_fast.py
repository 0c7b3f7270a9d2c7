"""`agorad` without click: the usual command lines go straight to the hub, with the values click gives.

The systemd unit runs a bare `agorad` (`agora service install`; $AGORA_HOME set when it was given
a home), and the docs and scripts run `agorad --home DIR`: none needs click, which was about a
third of the hub's cold start and stays loaded for the hub's life (bench/README.md "The hub's
cold start"). Anything else is left to click (up.py): --help, any other option, a repeated one,
a --home click would refuse (a file), no home given in a workspace with a seat record (click's
SharedOption reads it), and click's shell completion. So click stays the one definition of the
command line; this is a fast path to the same call, held to click's by tests/test_up_fast.py.
"""

from __future__ import annotations

import os
import sys

from agorad.cli.fast_parse import options, path_ok
from agorad.surface import settings
from agorad.surface.durations import format_duration, parse_duration
from agorad.surface.keys import in_turn

_COMPLETE = "_AGORAD_COMPLETE"  # click's completion variable for a program named agorad


def main():
    """The `agorad` console script."""
    parsed = parse(sys.argv[1:])
    if parsed is None:
        from agorad.cli.up import up

        return up(prog_name="agorad")
    try:
        from agorad.cli.up_run import hub_settings, serve
        from agorad.surface.paths import Home

        serve(Home.resolve(parsed["home"]), hub_settings(**defaults()), "agorad")
    except KeyboardInterrupt:  # before the hub's own handlers are in place: as click's main ends it
        sys.stderr.write("\nAborted!\n")
        sys.exit(1)


def parse(argv: list[str]) -> dict | None:
    """{"home": the home to serve, None for the default} if the command line is one this path takes
    (the module's docstring), else None."""
    if _COMPLETE in os.environ:  # click's shell completion asks the program itself: click answers it
        return None
    if in_turn():  # a driven turn: click's `up` refuses it (agora-drive(1) SECURITY)
        return None
    given = options(argv, {"--home": "home"})
    if given is None:
        return None
    if "home" in given:
        home = given["home"]
    elif os.environ.get("AGORA_HOME"):  # click: an empty $AGORA_HOME is none
        home = os.environ["AGORA_HOME"]
    else:
        return _default_home()
    return {"home": home} if path_ok(home, "directory") else None


def _default_home() -> dict | None:
    """No home given: click's SharedOption takes the workspace's seat record's, so a workspace with one
    is left to click; with none (the systemd unit's working directory), the default home, as there."""
    from agorad.surface.seat_record import nearest

    return {"home": None} if nearest() is None else None


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
