"""`agora listen` without click: the parse of a command line click would accept as it stands, and the run.

An armed listener waits for hours and keeps every module it imported: click alone was 2.7 of
its 16 MiB (bench/README.md "Listener footprint"; a host with 50 seats runs 50 of them). So the
lines `agora setup` writes and the usual hand-typed ones go straight to listen_run.start with the
values click would have given it. Anything else returns None from `parse`, and click handles it:
--help, an option this parse does not know, a repeated one, a value click would refuse (a bad
duration or choice, a --home that is a file...), no --as, and no --home with no $AGORA_HOME (the
seat record decides then; with neither --url nor $AGORA_URL this parse leaves the url to start, which reads
the home's hub.url). So click stays the one definition of the command line; this is a fast
path to the same call, held to click's parse by tests/test_listen_fast.py.
"""

from __future__ import annotations

import os

from agorad.cli.fast_parse import options, path_ok
from agorad.surface import settings
from agorad.surface.durations import format_duration, parse_duration
from agorad.surface.vocab import LISTEN_SOURCES, WATCHERS

# click's option -> (parameter, kind). Kinds: a flag, a duration with its minimum, a choice, a path.
_FLAGS = {"--once": "once", "--important-only": "important_only", "--preview": "preview",
          "--adaptive": "adaptive", "--background-only": "background_only"}
_VALUES = {"--as": "as_id", "--max-wait": "max_wait", "--debounce": "debounce", "--heartbeat": "heartbeat",
           "--source": "source", "--watcher": "watcher", "--lock": "lock", "--notify-dir": "notify_dir",
           "--home": "home", "--url": "url"}
_DURATION_MINIMUM = {"max_wait": 1.0, "debounce": 0.0, "heartbeat": 1.0}  # common.DURATION, DURATION_OR_ZERO
_CHOICES = {"source": LISTEN_SOURCES, "watcher": WATCHERS}
_PATHS = {"lock": "file", "notify_dir": "directory", "home": "directory"}  # click.Path(dir_okay=False | file_okay=False)


def defaults() -> dict:
    """The values click gives what the command line leaves out (listen.py's option defaults, converted)."""
    return {"once": False, "max_wait": None, "debounce": parse_duration(format_duration(settings.DEBOUNCE), 0.0),
            "important_only": False, "preview": False, "source": "auto", "url": None, "lock": None, "adaptive": False,
            "heartbeat": parse_duration(format_duration(settings.LISTEN_HEARTBEAT), 1.0),
            "notify_dir": None, "watcher": "auto", "background_only": False}


def parse(argv: list[str]) -> dict | None:
    """start()'s keyword arguments for `listen [OPTIONS]` as click would give them, or None (see the module)."""
    if not argv or argv[0] != "listen":
        return None
    given = options(argv[1:], _VALUES, _FLAGS)
    if given is None:
        return None
    if "home" not in given:
        if not os.environ.get("AGORA_HOME"):
            return None  # the workspace's seat record may name the home: click's SharedOption reads it
        given["home"] = os.environ["AGORA_HOME"]
    if not given.get("as_id"):
        return None
    return _converted({**defaults(), **given})


def _converted(params: dict) -> dict | None:
    for name, minimum in _DURATION_MINIMUM.items():
        if isinstance(params[name], str):
            try:
                params[name] = parse_duration(params[name], minimum)
            except ValueError:
                return None
    for name, choices in _CHOICES.items():
        if params[name] not in choices:
            return None
    for name, kind in _PATHS.items():
        if params[name] is not None and not path_ok(params[name], kind):
            return None
    return params


def answer(params: dict):
    """Run the listener; exits with its status (listen_run.start). What escapes it ends as click's main
    would end it: Ctrl-C before the listener's own handlers are in place, and a broken pipe."""
    import sys

    from agorad.cli.listen_run import start

    try:
        start(**params)
    except KeyboardInterrupt:
        sys.stderr.write("\nAborted!\n")  # click writes the blank line too
        sys.exit(1)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing more to flush into the pipe
        sys.exit(1)
