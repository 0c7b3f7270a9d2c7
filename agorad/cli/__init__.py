"""The `agora` command line: thin adapters that parse, call the client, and print.

Importing this package costs nothing: the click group (group.py) loads when `main` is first
asked for. `run`, the console script, takes two shortcuts around click: the stop hook runs at
every turn's end, and importing click alone takes longer than the rest of its work (measured
in bench/hook.py), so a hook command line in the exact form `agora setup` writes goes straight
to it (hook_fast.py; tests/test_hook_fast.py holds that parse to click's); and an armed
`agora listen` keeps what it imported for as long as it waits, click a sixth of its memory, so
a listen command line click would accept as it stands goes straight to the listener
(listen_fast.py; tests/test_listen_fast.py).
"""

from __future__ import annotations

import sys

_LAZY = ("main", "COMMANDS", "LazyGroup")


def __getattr__(name: str):
    if name in _LAZY:
        from agorad.cli import group

        return getattr(group, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run():
    """The `agora` console script. Each fast path is imported only for its own command: an armed listener
    keeps every module it loaded."""
    if sys.argv[1:2] == ["hook"]:
        from agorad.cli import hook_fast

        parsed = hook_fast.parse(sys.argv[1:])
        if parsed is not None:
            sys.exit(hook_fast.answer(*parsed))
    if sys.argv[1:2] == ["listen"]:
        from agorad.cli import listen_fast

        listening = listen_fast.parse(sys.argv[1:])
        if listening is not None:
            listen_fast.answer(listening)
    from agorad.cli.group import main

    return main()
