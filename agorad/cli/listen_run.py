"""`agora listen` once its command line is parsed: by click (listen.py) or by the fast path
(listen_fast.py). No click here: an armed listener keeps every module it imported for as long as
it waits (bench/README.md "Listener footprint")."""

from __future__ import annotations

import os
import sys


def start(as_id: str, once: bool, max_wait, debounce: float, important_only: bool, preview: bool, source: str,
          lock, adaptive: bool, heartbeat: float, notify_dir, watcher: str, background_only: bool, home,
          url: str | None = None):
    """Listen as the command line says; exits with the listener's status. `url` is --url (click's path
    adds `agora --url`); with none, the home's own (its hub.url), else $AGORA_URL."""
    from agora_listen.listener import end_on_signals_until_armed, run
    from agorad.surface.protocol import AGENT_ID_RULE, is_agent_id

    end_on_signals_until_armed()
    if not is_agent_id(as_id):
        fail(f"--as {as_id!r} is not a valid agent id ({AGENT_ID_RULE})")
    if (adaptive or max_wait) and not once:
        fail("--max-wait and --adaptive go with --once (a persistent listener runs until stopped)")
    if background_only and _harness_waits():  # before the hub is asked or any seat file touched
        from agora_listen import sentinels

        sentinels.emit(sentinels.ended("foreground"))
        sys.exit(0)
    url = url or _home_url(home)
    if source == "ws" and not url:
        fail("--source ws needs the hub's URL: give --url ws://HOST:PORT/ or set AGORA_URL")
    if url and source != "file":
        _check_url(url)
    options = _options(as_id, home, _text(notify_dir), None if source == "file" else url, source)
    options.once, options.max_wait, options.debounce = once, max_wait, debounce
    options.important_only, options.preview = important_only, preview
    options.lock, options.adaptive, options.heartbeat = _text(lock), adaptive, heartbeat
    options.watcher = watcher
    sys.exit(run(options))


def _home_url(home) -> str | None:
    """The home's hub.url (`agora setup --url`), else $AGORA_URL (filenames.hub_url_for)."""
    from agorad.surface.filenames import home_root, hub_url_for

    return hub_url_for(home_root(None if home is None else os.fspath(home)))


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


def _check_url(url: str) -> None:
    from agorad.surface.errors import InvalidParams
    from agorad.surface.wsclient import check_url  # websockets itself loads only on connecting

    try:
        check_url(url)
    except InvalidParams as exc:
        fail(exc.message)


def _options(as_id: str, home: str | None, notify_dir: str | None, url: str | None, source: str):
    """Ask the hub (if it answers) for the current id behind an alias and its notify directory.

    With no hub answering, the listener arms on the id as given and the home,
    and confirms both once the hub answers (agora_listen.identity). `--source auto`
    becomes ws when no hub answers on this host and a URL is set: the hub is elsewhere.
    """
    from agora_listen.identity import ask
    from agora_listen.listener import Options
    from agorad.surface import keys
    from agorad.surface.errors import NotFound
    from agorad.surface.paths import Home

    where = Home.resolve(home)
    answer = None
    if source != "ws":
        try:
            answer = ask(where.root_text, as_id)
        except NotFound as exc:
            fail(exc.message)
        if answer is None and url:
            source = "ws"
    if source == "ws":
        return Options(agent=as_id, home=where.root_text, notify_dir=None, hub=url, url=url, source="ws",
                       key=keys.read_key(where, as_id), confirmed=True)
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
                   notify_dir_given=notify_dir is not None, source=source)
