"""`agora listen` once its command line is parsed: by click (listen.py) or by the fast path
(listen_fast.py). No click here: an armed listener keeps every module it imported for as long as
it waits (bench/README.md "Listener footprint")."""

from __future__ import annotations

import os
import sys


def start(as_id: str, once: bool, max_wait, debounce: float, important_only: bool, preview: bool, source: str,
          lock, adaptive: bool, heartbeat: float, notify_dir, watcher: str, background_only: bool, home):
    """Listen as the command line says; exits with the listener's status."""
    from agora_listen.listener import end_on_signals_until_armed, run
    from agorad.surface.protocol import is_agent_id

    end_on_signals_until_armed()
    if not is_agent_id(as_id):
        fail(f"--as {as_id!r} is not a valid agent id")
    if (adaptive or max_wait) and not once:
        fail("--max-wait and --adaptive go with --once (a persistent listener runs until stopped)")
    if background_only and _harness_waits():  # before the hub is asked or any seat file touched
        from agora_listen import sentinels

        sentinels.emit(sentinels.ended("foreground"))
        sys.exit(0)
    options = _options(as_id, home, _text(notify_dir))
    options.once, options.max_wait, options.debounce = once, max_wait, debounce
    options.important_only, options.preview, options.source = important_only, preview, source
    options.lock, options.adaptive, options.heartbeat = _text(lock), adaptive, heartbeat
    options.watcher = watcher
    sys.exit(run(options))


def _text(path) -> str | None:
    """A path option as the listener holds it: text as pathlib spells it (click gives a Path)."""
    from agorad.surface.filenames import pathlib_form

    return None if path is None else pathlib_form(os.fspath(path))


def _harness_waits() -> bool:
    from agora_listen.foreground import harness_waits

    return harness_waits()


def fail(cause: str):
    from agora_listen import sentinels

    sys.stderr.write(f"agora listen: {cause}\n")
    sys.stderr.flush()
    sentinels.emit_last(sentinels.ended("error", cause))
    sys.exit(1)


def _options(as_id: str, home: str | None, notify_dir: str | None):
    """Ask the hub (if it answers) for the current id behind an alias and its notify directory.

    With no hub answering, the listener arms on the id as given and the home,
    and confirms both once the hub answers (agora_listen.identity).
    """
    from agora_listen.identity import ask
    from agora_listen.listener import Options
    from agorad.surface import keys
    from agorad.surface.errors import NotFound
    from agorad.surface.paths import Home

    where = Home.resolve(home)
    try:
        answer = ask(where.root_text, as_id)
    except NotFound as exc:
        fail(exc.message)
    agent = answer.agent if answer else as_id
    if answer and answer.redirected:
        r = answer.redirected
        sys.stderr.write(f"redirected: {r['from']} -> {r['to']} ({r['reason']})\n")
        sys.stderr.flush()
    if notify_dir is not None:
        directory = notify_dir
    elif answer:
        directory = answer.notify_dir
    else:
        directory = where.root_text
    return Options(agent=agent, home=where.root_text, notify_dir=directory, hub=where.socket_text,
                   key=keys.read_key(where, agent) or keys.read_key(where, as_id), confirmed=answer is not None,
                   notify_dir_given=notify_dir is not None)
