"""The word loop the click-free fast paths share (hook_fast.py, listen_fast.py, up_fast.py): click's long
options, `--name value` or `--name=value`, in any order; and click.Path's test of a path. Imports only
`os` and `stat`, which the interpreter has loaded at its start: the stop hook runs it at every turn's end."""

from __future__ import annotations

import os
import stat


def options(words: list[str], values: dict[str, str], flags: dict[str, str] | None = None) -> dict | None:
    """{parameter: value} (True for a flag) from `words`, or None for anything click should judge: an
    option not in `values` or `flags`, one given twice, a flag with a value, a value missing or itself
    an option."""
    flags = flags or {}
    given, rest = {}, list(words)
    while rest:
        word = rest.pop(0)
        name, eq, value = word.partition("=")
        if name in flags and not eq and flags[name] not in given:
            given[flags[name]] = True
            continue
        if name not in values or values[name] in given:
            return None
        if not eq:
            if not rest or rest[0].startswith("-"):
                return None  # a missing value, or an option where a value should be: click says which
            value = rest.pop(0)
        given[values[name]] = value
    return given


def path_ok(value: str, kind: str) -> bool:
    """What click.Path(exists=False, ...) accepts: a name that is not there, or one of the right kind, readable."""
    if not value:
        return False
    try:
        mode = os.stat(value).st_mode
    except OSError:
        return True
    if stat.S_ISREG(mode) if kind == "directory" else stat.S_ISDIR(mode):
        return False
    return os.access(value, os.R_OK)
