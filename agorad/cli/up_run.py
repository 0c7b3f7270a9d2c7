"""The hub's start once its command line is parsed: by click (`agora up`, `agorad`: up.py) or, for the
usual `agorad` lines, by the fast path (up_fast.py). No click on the way to serving: the hub would carry
it for its life, and loading it was about a third of the hub's cold start (bench/README.md "The hub's
cold start"). Only `fail`, on the way out, loads it to word a refused start as click.echo does."""

from __future__ import annotations

import os
import sys

EXIT_ERROR = 1  # common.EXIT_ERROR, whose module loads click


def hub_settings(sweep_interval: float, ephemeral_ttl: float, synchronous: str, notify_dir: str | None,
                 notify_rotate_mb: float, max_body_kib: int, escalation: str, liveness_flush: float,
                 listen: str | None, tls_cert: str | None, tls_key: str | None, insecure: bool, listen_idle: float):
    """The hub's Settings from `agora up`'s option values; ValueError (its words) for a bad --escalate."""
    from agorad.domain.obligations import parse_schedule
    from agorad.runtime.hub import Settings

    return Settings(
        sweep_interval=sweep_interval, ephemeral_ttl=ephemeral_ttl, synchronous=synchronous.upper(),
        test_clock=os.environ.get("AGORA_TEST_CLOCK") == "1", notify_dir=_absolute(notify_dir),
        notify_rotate_mb=notify_rotate_mb, max_body=max_body_kib * 1024, escalation=parse_schedule(escalation),
        liveness_flush=liveness_flush, listen=listen, tls_cert=_absolute(tls_cert), tls_key=_absolute(tls_key),
        insecure=insecure, listen_idle=listen_idle,
    )


def serve(where, settings, program: str):
    """Run the hub in the foreground until it stops; exits with its status, or 1 with a line on stderr
    (`<program>: ...`, as click's commands say it) when it cannot start."""
    from agorad.runtime.daemon import StartupError, run

    try:
        status = run(where, settings)
    except StartupError as exc:
        fail(program, str(exc))
    except OSError as exc:
        fail(program, f"cannot start the hub: {exc}")
    sys.exit(status)


def fail(program: str, message: str):
    """As common.fail says it: through click.echo, which drops escape sequences (a home's name may hold
    some) when stderr is not a terminal. Loaded only here, on the way out."""
    import click

    click.echo(f"{program}: {message}", err=True)
    sys.exit(EXIT_ERROR)


def _absolute(path: str | None) -> str | None:
    """A path option made absolute, spelled as a home is (a detached hub works from `/`); None and '' as given."""
    from agorad.surface.filenames import home_root

    return home_root(path) if path else path
