"""`agora hook stop|start` without click: the parse of the one form `agora setup` writes, and the run.

Anything else (another order of words, --help, a missing or unknown option, a harness not in
the vocabulary) returns None from `parse`, and click handles it, with its usage errors and help.
So click stays the one definition of the command line; this is a fast path to the same
call, held to click's parse by tests/test_hook_fast.py.
"""

from __future__ import annotations

import sys

from agorad.cli.fast_parse import options
from agorad.surface.vocab import HARNESSES, HOOKS

EXIT_USAGE = 1
_OPTIONS = {"--harness": "harness", "--as": "as_id", "--home": "home"}


def parse(argv: list[str]) -> tuple[str, str, str, str | None] | None:
    """(hook, harness, as_id, home) for `hook HOOK --harness H --as ID [--home DIR]` in any option order."""
    if len(argv) < 2 or argv[0] != "hook" or argv[1] not in HOOKS:
        return None
    given = options(argv[2:], _OPTIONS)
    if given is None or given.get("harness") not in HARNESSES or not given.get("as_id"):
        return None
    return argv[1], given["harness"], given["as_id"], given.get("home")


def answer(which: str, harness: str, as_id: str, home: str | None) -> int:
    """Run hook `which` and write its reply; the exit status."""
    from agorad.surface.filenames import home_root
    from agorad.surface.protocol import is_agent_id

    if not is_agent_id(as_id):  # before any file is named after it
        sys.stderr.write(f"agora hook: --as {as_id!r} is not a valid agent id; check the hook's command in the "
                         "harness's config (`agora setup` writes it)\n")
        return EXIT_USAGE
    from agora_listen.hook_input import read_ready

    if which == "stop":
        from agora_listen.backstop import stop as run
    else:
        from agora_listen.session_start import start as run
    try:
        # The root as a string, not Home's Path: nothing on the quiet path loads pathlib (filenames.py).
        reply = run(harness, as_id, home_root(home), read_ready())
    except Exception as exc:  # a bug or an unforeseen fault must not break the harness's turn
        sys.stderr.write(f"agora hook {which}: failed ({type(exc).__name__}: {exc}); the turn goes on without it\n")
        return 0
    sys.stdout.write(reply.stdout)
    sys.stderr.write(reply.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    return reply.status
