"""`agora setup`: register a seat, write the workspace's seat record, and wire its harnesses.

A thin adapter: agora_setup does the wiring; this registers the seat with the
hub (or says the hub is down and wires anyway) and prints what changed.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import click

from agorad.cli.common import EXIT_ERROR, fail, home_option, json_option, print_json, refuse_in_turn
from agorad.surface.vocab import HARNESSES, LIVENESS_MODES

SETUP_MODE = "async"  # a harness seat comes and goes with its sessions: dormant when silent, never expired


@click.command("setup")
@click.argument("agent_id", metavar="[ID]", required=False)
@click.option("--harness", "harness_names", multiple=True, type=click.Choice(HARNESSES),
              help="Wire this harness (repeatable). Default: those wired before, and every one the "
                   "workspace shows signs of (.claude/, .cursor/, .codex/, .gemini/, .opencode/ ...).")
@click.option("--dir", "workspace", type=click.Path(file_okay=False, path_type=Path), default=".",
              show_default=True, help="The workspace to wire.")
@click.option("--remove", is_flag=True, help="Take out everything setup wrote (or only --harness's), and nothing else.")
@click.option("--check", is_flag=True, help="Say what is wired, what is stale, and what would wake the seat.")
@click.option("--mode", type=click.Choice(LIVENESS_MODES), default=SETUP_MODE, show_default=True,
              help="The liveness mode of a seat setup registers.")
@click.option("--url", metavar="URL",
              help="The hub runs on another host: its remote port, ws://HOST:PORT/ or wss://HOST:PORT/ (`agora up "
                   "--listen` there). Setup then registers nothing (the hub's operator does, with `agora agent add ID` "
                   "on its host, which prints the key), checks the seat's key with the hub, and keeps the URL in "
                   "the home (HOME/hub.url), so "
                   "every command and hook in the workspace reaches the hub there. Default: `agora --url`, "
                   "else the home's hub.url (a home holds the seats of one hub); $AGORA_URL is not read here.")
@click.option("--key-stdin", is_flag=True,
              help="With a URL (--url, or the home's hub.url): read the seat's key from standard input and keep it in "
                   "HOME/keys/ID.key (0600) once the hub has accepted it (a key is never an argument: other users "
                   "can read arguments).")
@home_option
@json_option
def setup(agent_id, harness_names, workspace, remove, check, mode, url, key_stdin, home, as_json):
    """Wire WORKSPACE's harnesses to seat ID, so a session there wakes when mail lands."""
    refuse_in_turn()
    from agora_setup.targets import SetupError

    workspace = _spelled(workspace)
    if not workspace.is_dir():
        fail(f"the workspace {workspace} is not a directory")
    try:
        if check:
            return _check(workspace, home, as_json)
        if remove:
            return _remove(workspace, agent_id, list(harness_names), home, as_json)
        return _wire(workspace, agent_id, list(harness_names), mode, url, key_stdin, home, as_json)
    except SetupError as exc:
        fail(str(exc))


def _spelled(workspace: Path) -> Path:
    """The workspace as an absolute path without `.` and `..` (`--dir ../b/./` is shown `/.../b`), unless a
    symbolic link makes `..` mean another directory than the lexical one: then as given, made absolute."""
    given, tidy = workspace.absolute(), Path(os.path.abspath(workspace))
    try:
        return tidy if tidy == given or os.path.samefile(tidy, given) else given
    except OSError:  # one of them is missing: the is_dir check says so, in the words given
        return given


def _url(given: str | None, where) -> str | None:
    """--url or `agora --url`, else the home's hub.url; checked. $AGORA_URL is not read here: on a hub's
    own host it must not turn setup into a remote seat's."""
    from agorad.cli.shared import URL_META
    from agorad.surface.errors import InvalidParams
    from agorad.surface.wsclient import check_url

    url = given or click.get_current_context().meta.get(URL_META) or where.hub_url
    try:
        return None if url is None else check_url(url)
    except InvalidParams as exc:
        fail(f"--url: {exc.message}", 2)


def _wire(workspace: Path, agent_id, names: list[str], mode: str, url: str | None, key_stdin: bool, home,
          as_json: bool) -> None:
    from agora_setup import harnesses, plan
    from agora_setup.targets import SetupError
    from agorad.surface import wiring
    from agorad.surface.protocol import AGENT_ID_RULE, is_agent_id

    _refuse_home_directory(workspace)
    record = _record(workspace)
    agent_id = agent_id or (record.agent if record else None)
    if agent_id is None:
        fail("name the seat: `agora setup ID` (no seat record here to take it from)", 2)
    if not is_agent_id(agent_id):
        fail(f"{agent_id!r} is not a valid agent id ({AGENT_ID_RULE})", 2)
    where = _home(home, record)
    names = names or sorted(set((record.harnesses if record else ())) | set(harnesses.detected(workspace)))
    if not names:
        fail(f"no harness found in {workspace} (no .claude/, .cursor/, .codex/, .gemini/ or .opencode/); "
             f"name one: --harness {'|'.join(HARNESSES)}", 2)
    url = _url(url, where)
    if key_stdin and url is None:
        fail("--key-stdin is for a seat whose hub runs on another host: give --url too (on the hub's own host, "
             "`agora setup ID` registers the seat and keeps its key itself)", 2)
    # A remote seat's key is checked first: a refused one leaves even its home untouched (the lock makes it).
    hub = {} if url is None else _check_remote(where, agent_id, url, _read_stdin_key() if key_stdin else None)
    try:
        exe = wiring.agora_executable()
    except FileNotFoundError as exc:
        fail(str(exc))
    # A remote seat's `agora mcp --home` finds the hub's URL in the home (hub.url), as its hooks do.
    seat = harnesses.Seat(agent_id, where.root, exe, workspace, mcp=harnesses.mcp_installed())

    def register() -> None:  # once every file is read and found writable: a refused setup registers nothing
        if url is None:
            hub.update(_register(where, agent_id, mode))

    try:
        names, changes = plan.wire(seat, names, where.key_file(agent_id), before_writing=register)
    except SetupError:  # a file failed after the seat was registered: a refused setup leaves no seat it made
        if hub.get("registered") == "registered":
            _unregister(where, agent_id)
        raise
    if record is not None and _other_seat(record, where.root, agent_id):
        _forget_wired(record.home, record.agent, keep_schedules=True)  # the workspace no longer wires that seat
    _mark_wired(where.root, agent_id)
    _report(workspace, agent_id, where, hub, changes, names, as_json, seat.mcp)


def _refuse_home_directory(workspace: Path) -> None:
    """The home directory is no workspace: the harnesses read ~/.claude/settings.json, ~/.codex/config.toml and
    ~/.gemini/settings.json as the user's settings for every project, so wiring them there would arm the seat
    in every session anywhere."""
    try:
        is_home = os.path.samefile(workspace, Path.home())
    except (OSError, RuntimeError):  # no home to compare with: nothing user-wide to wire by mistake
        return
    if is_home:
        fail(f"{workspace} is your home directory: the harness files there (~/.claude/settings.json, "
             "~/.codex/config.toml, ~/.gemini/settings.json ...) are your settings for every project, and "
             "wiring them would arm this seat in every session; run setup in a project directory, or give "
             "--dir PROJECT (nothing was written)", 2)


def _register(where, agent_id: str, mode: str) -> dict:
    """Register the seat, or reuse it; with the hub down, say so (setup still wires)."""
    from agorad.surface.client import Client
    from agorad.surface.errors import AgoraError, Conflict, NotFound, Unavailable

    try:
        with Client(where).connect() as hub:
            try:
                shown = hub.call("agents.get", agent=agent_id)
                if not shown["agent"]["registered"]:  # listed from its profile alone: registered here
                    raise NotFound(f"{agent_id} is known from its profile alone")
                _refuse_renamed(shown.get("redirected"))
                registered = "reused"
            except NotFound:
                try:
                    hub.call("agents.add", agent=agent_id, liveness_mode=mode, meta={"wired_by": "agora setup"})
                    registered = "registered"
                except Conflict:  # a concurrent setup registered it between our two calls
                    registered = "reused"
    except Unavailable as exc:
        return {"up": False, "registered": "not-registered", "error": exc.message}
    except AgoraError as exc:
        fail(f"the hub refused to register {agent_id}: {exc.message}")
    return {"up": True, "registered": registered, "key_file_exists": where.key_file(agent_id).exists()}


def _unregister(where, agent_id: str) -> None:
    """Take back the seat this run registered (its key file goes with it); said, not fatal, if it cannot."""
    from agorad.surface.client import Client
    from agorad.surface.errors import AgoraError

    try:
        with Client(where).connect() as hub:
            hub.call("agents.remove", agent=agent_id)
    except AgoraError as exc:
        click.echo(f"agora: setup registered {agent_id} before it failed and could not take it back "
                   f"({exc.message}): `agora agent rm {agent_id}`", err=True)


def _id_now(where, agent_id: str) -> str | None | bool:
    """The seat's id as the hub on this host knows it now (a record may name a former id), None when it
    knows no such seat, False when no hub here answers to say; as given for a remote seat (removed on its
    hub's host)."""
    from agorad.surface.client import Client
    from agorad.surface.errors import AgoraError, NotFound

    if where.hub_url is not None:
        return agent_id
    try:
        with Client(where).connect() as hub:
            shown = hub.call("agents.get", agent=agent_id)["agent"]
        return shown["id"] if shown["registered"] else None  # (a profile alone is listed, not registered)
    except NotFound:
        return None
    except AgoraError:
        return False


def _refuse_renamed(redirect: dict | None, remote: str = "") -> None:
    """A former id is not wired: the record, the key file and the hooks would all name an alias. `remote`:
    the options a remote seat's setup needs again (its URL, its key on stdin, its home)."""
    if redirect:
        fail(f"{redirect['from']} was renamed to {redirect['to']} ({redirect['reason']}); wire the seat under its "
             f"id: `agora setup {redirect['to']}{remote}` (nothing was written)")


def _read_stdin_key() -> str:
    """The key piped in (or typed, unechoed, at a terminal): one line, the shape `agora agent add` prints."""
    import sys

    from agorad.surface.keys import KEY_PREFIX

    if sys.stdin.isatty():
        import getpass

        key = getpass.getpass("the seat's key (as `agora agent add` printed it): ").strip()
    else:
        key = sys.stdin.read().strip()
    if not key.startswith(KEY_PREFIX) or any(c.isspace() or not c.isprintable() for c in key):
        fail(f"standard input does not hold a seat key (one line starting {KEY_PREFIX}, as `agora agent add` "
             "prints it on the hub's host)", 2)
    return key


def _same_hub(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


def _check_remote(where, agent_id: str, url: str, piped: str | None) -> dict:
    """Say hub.hello as the seat at `url` with its key (piped in, else AGORA_KEY or keys/ID.key). A refused key,
    or a home that is a hub's own, changes nothing. Otherwise the home's hub.url names `url` (a --url that
    differs from it replaces it, said in a note), and a key the hub accepted is kept in keys/ID.key; a hub that
    did not answer keeps a piped key only where the file holds none yet (never a checked key replaced by
    an unchecked one)."""
    from agorad.surface import keys
    from agorad.surface.errors import AgoraError, Unavailable
    from agorad.surface.paths import write_private
    from agorad.surface.wsclient import RemoteClient

    if where.db.exists():
        fail(f"the home {where.root} is a hub's own home (it holds {where.db.name}); the seats of the hub at {url} "
             "need a home of their own: give --home DIR (for example ~/.agora-remote)")
    earlier = where.hub_url
    key = piped or keys.read_key(where, agent_id)
    if key is None:
        fail(f"no key for {agent_id}: pipe it in (`agora setup {agent_id} --url {url} --key-stdin < FILE`; the "
             f"operator's `agora agent add {agent_id}` on the hub's host printed it), or put it in "
             f"{where.key_file(agent_id)}")
    hub = {"up": True, "registered": "remote", "url": url}
    try:
        with RemoteClient(url).connect() as client:
            again = f" --url {url} --key-stdin --home {where.root}"
            _refuse_renamed(client.hello(agent_id, key).get("redirected"), again)
    except Unavailable as exc:
        if "retry_after" in exc.data:  # the port answered, but checks no key from here for now: nothing to save
            fail(f"the hub at {url} did not check the key: {exc.message}; nothing was written")
        hub.update(up=False, error=exc.message)
    except AgoraError as exc:
        fail(f"the hub at {url} refused {agent_id}: {exc.message}; nothing was written (check the id and its key "
             "with the hub's operator)")
    where.ensure()
    if earlier is None or not _same_hub(earlier, url):
        write_private(where.hub_url_file, url + "\n")
        if earlier is not None:  # only a --url differs from the home's own
            hub["replaced"] = earlier
    stored = keys.read_key_file(where, agent_id)
    if hub["up"] and stored != key:
        keys.save_key_file(where, agent_id, key)  # checked: the hooks, which get no AGORA_KEY, read this file
    elif not hub["up"] and piped is not None and stored is None:
        keys.save_key_file(where, agent_id, piped)
    elif not hub["up"] and piped is not None:
        hub["kept_key"] = True  # the one already there stays: the piped one is not checked
    hub["key_file_exists"] = where.key_file(agent_id).exists()
    return hub


def _remove(workspace: Path, agent_id, names: list[str], home, as_json: bool) -> None:
    from agora_setup import harnesses, plan
    from agora_setup.targets import SetupError
    from agorad.surface.paths import seat_record

    try:
        record = _record(workspace)
    except SetupError as exc:
        if names:  # which harnesses stay is in the record: a partial removal needs it
            raise
        record = None  # a whole removal needs nothing from it: every harness's wiring goes, and the record
        click.echo(f"agora: {exc}; removing every harness's wiring and the record anyway", err=True)
    if record is None and not seat_record(workspace).exists():
        return _nothing_wired(workspace, as_json)
    if record is not None:
        _say_unwired(record, names)
    where = _home(home, record)
    from agorad.surface import wiring

    agent = agent_id or (record.agent if record else "unknown")
    # The exe matters where a kept harness's file is rewired (AGENTS.md); removal finds ours by shape.
    seat = harnesses.Seat(agent, where.root, wiring.agora_executable(), workspace)
    changes = plan.unwire(seat, names or None)
    if record is not None and not os.path.lexists(seat_record(workspace)):  # every harness went, the record too
        _forget_wired(where.root, record.agent)
    touched = [{"path": c.relative, "action": "removed" if c.after is None else "restored"}
               for c in changes if c.changed]
    if as_json:
        print_json({"workspace": str(workspace), "changed": touched})
        return
    for item in touched:
        click.echo(f"{item['action']} {item['path']}")
    if not touched:
        click.echo(f"nothing of agora setup's in {workspace}")
    elif record is not None and not names:
        current = _id_now(where, record.agent)
        if current is None:
            click.echo(f"the seat {record.agent} is not registered with the hub (removed already)", err=True)
        elif current is False:  # it may never have been: setup with no hub up does not register it
            click.echo(f"no hub answers on {where.socket} to say whether the seat {record.agent} is registered; "
                       f"if it is, `agora agent rm {record.agent}` removes it", err=True)
        else:
            named = record.agent if current == record.agent else f"{current} (renamed from {record.agent})"
            click.echo(f"the seat {named} stays registered with the hub; `agora agent rm {current}` removes it",
                       err=True)


def _nothing_wired(workspace: Path, as_json: bool) -> None:
    """--remove where setup wired nothing: its entries are known only from the record, so a file that merely
    looks like setup's (an `agora` MCP entry of the user's own) is left alone."""
    if as_json:
        print_json({"workspace": str(workspace), "changed": [], "record": None})
        return
    click.echo(f"nothing of agora setup's in {workspace}: there is no seat record in {workspace} (setup has not "
               "wired it), and files setup did not write are left as they are")


def _say_unwired(record, names: list[str]) -> None:
    """A harness named with --remove that the record does not list has nothing of setup's to take out."""
    for name in names:
        if name not in record.harnesses:
            listed = ", ".join(record.harnesses) or "none"
            click.echo(f"agora: {name} is not wired here (the seat record names {listed}); nothing of its to "
                       "remove", err=True)


def _check(workspace: Path, home, as_json: bool) -> None:
    from agora_setup import doctor

    record = _record(workspace)
    report = doctor.examine(workspace, record, _home(home, record))
    if as_json:
        print_json(report)
    else:
        for line in doctor.render(report):
            click.echo(line)
    if not report["ok"]:
        raise SystemExit(EXIT_ERROR)


def _record(workspace: Path):
    """The workspace's own seat record (not one above it: setup wires this directory)."""
    from agora_setup.targets import SetupError
    from agorad.surface.paths import seat_record
    from agorad.surface.seat_record import RecordError, load

    path = seat_record(workspace)
    if not path.exists():
        return None
    try:
        return load(path)
    except RecordError as exc:
        raise SetupError(str(exc)) from None


def _home(home, record):
    """--home or $AGORA_HOME, else the record's hub, else ~/.agora."""
    from agorad.surface.paths import Home

    return Home.resolve(home if home else (record.home if record else None))


def _mark_wired(root: Path, agent: str) -> None:
    """Every wiring has the stop-hook backstop: `agora status` shows NEVER FIRED until it runs."""
    from agorad.surface import hook_stamps

    hook_stamps.mark_wired(root, agent, "stop")


def _other_seat(record, root: Path, agent: str) -> bool:
    """Whether this run wires another seat (or the same one of another home) than the record named."""
    return record.agent != agent or os.path.realpath(record.home) != os.path.realpath(root)


def _forget_wired(root: Path, agent: str, keep_schedules: bool = False) -> None:
    """The seat's hooks are no longer wired here: their stamps go (`keep_schedules`: only their `wired`, since
    another workspace may still wire the seat, and its stop hook's re-prompt schedules would start over)."""
    from agorad.surface import hook_stamps
    from agorad.surface.vocab import HOOKS

    for hook in HOOKS:
        (hook_stamps.unwired if keep_schedules else hook_stamps.forget)(root, agent, hook)


def _report(workspace: Path, agent: str, where, hub: dict, changes, names: list[str], as_json: bool,
            mcp: bool) -> None:
    files = [{"path": c.relative, "action": _action(c)} for c in changes]
    notes = _notes(agent, where, hub, names if any(c.changed for c in changes) else [], workspace)
    if not mcp:
        notes.append("no MCP entries: the `mcp` package is not installed (pip install 'agora-hub[mcp]'); "
                     "run `agora setup` again after installing it")
    if as_json:
        print_json({"agent": agent, "workspace": str(workspace), "home": str(where.root), "harnesses": names,
                    "hub": hub, "files": files, "notes": notes})
        return
    click.echo(f"seat {agent} in {workspace} ({', '.join(names)}); hub home {where.root}")
    for item in files:
        click.echo(f"  {item['action']:<9} {item['path']}")
    for note in notes:
        click.echo(note, err=True)


def _action(change) -> str:
    if not change.changed:
        return "unchanged"
    return "created" if change.before is None else "updated"


def _notes(agent: str, where, hub: dict, names: list[str], workspace: Path) -> list[str]:
    """What the user should know or do now: the hub's side, then each harness in `names` (every wired one
    when the run changed a file; none when it changed nothing, which has nothing new to say)."""
    notes = []
    if hub["registered"] == "remote":
        notes.append(_remote_note(agent, where, hub))
    elif not hub["up"]:
        notes.append(f"the hub is down ({hub['error']}): {agent} is not registered yet; start it (`agora up --home "
                     f"{shlex.quote(str(where.root))}`) and run `agora setup {agent}` again here to register it")
    elif hub["registered"] == "registered":
        notes.append(f"registered {agent}; its key is in {where.key_file(agent)} (0600), never in the workspace")
    elif not hub["key_file_exists"]:
        notes.append(f"{agent} was registered before, but its key is not in {where.key_file(agent)}: commands "
                     "acting as it need AGORA_KEY, or that file")
    if "claude" in names:
        notes.append("Claude Code: sessions started from now on arm the listener; restart running ones. Its "
                     "tools are allowed in .claude/settings.json, which Claude honours once you accept the "
                     "workspace's trust dialog (or pass --allowedTools mcp__agora)")
    if "cursor" in names:
        notes.append("Cursor: the rule arms background reception at each session's first turn")
    if "codex" in names:
        notes.append(f"Codex runs project hooks only when trusted: trust the project (accept the prompt when `codex` "
                     f"first opens {workspace}) and the two agora hooks (review them in Codex's /hooks). Their text "
                     "stays the same across agora versions, so the trust holds until the home or agora's path changes")
    if "gemini" in names:
        notes.append(f"Gemini CLI runs project hooks only in a trusted folder: choose \"Trust folder\" when `gemini` "
                     f"first opens {workspace} (or add it to ~/.gemini/trustedFolders.json as TRUST_FOLDER); it "
                     "re-prompts at turn ends but cannot wake an idle session")
    if "opencode" in names:
        notes.append("opencode: the plugin loads when opencode next starts; it wakes idle sessions of the TUI or "
                     "`opencode serve` (an `opencode run` ends at its first idle)")
    return notes


def _remote_note(agent: str, where, hub: dict) -> str:
    moved = (f"the home's hub.url named {hub['replaced']} and now names {hub['url']}; " if "replaced" in hub else "")
    if not hub["up"]:
        kept = (f"; the key already in {where.key_file(agent)} was kept, not the one piped in"
                if hub.get("kept_key") else "")
        return (f"{moved}the hub at {hub['url']} did not answer ({hub['error']}), so {agent}'s key is not checked "
                f"yet{kept}; `agora setup --check` here checks it once the hub is reachable")
    return (f"{moved}the hub at {hub['url']} accepted {agent}'s key; it is in {where.key_file(agent)} (0600); "
            "commands and hooks that name this home reach the hub there")
