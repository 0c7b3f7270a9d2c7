"""`agora setup --check`: one screen on a workspace's wiring, its seat, and what would wake it."""

from __future__ import annotations

import time
from pathlib import Path

from agora_setup import harnesses
from agora_setup.plan import read_target
from agora_setup.targets import MISSING, STALE, SetupError
from agorad.surface.paths import Home, drive_file, listen_file

# What wakes a seat through each harness's wiring, when it is all in place.
WAKES = {
    "claude": "an idle session wakes while its hook listener is armed (from session start); "
              "turn ends re-prompt while important mail is unread",
    "cursor": "background reception, armed by the rule at a session's first turn; "
              "turn ends re-prompt while important mail is unread or the listener is dead",
    "codex": "turn ends re-prompt while important mail is unread; an idle session wakes only "
             "while it runs the wait loop its AGENTS.md block teaches",
    "gemini": "turn ends re-prompt while important mail is unread (AfterAgent); an idle session is not "
              "woken (Gemini CLI has no background hook)",
    "opencode": "the plugin keeps a listener armed while a session idles and prompts it when mail lands; "
                "turn ends re-prompt while important mail is unread (needs a long-lived opencode: the TUI "
                "or `opencode serve`, not `opencode run`)",
}


def examine(workspace: Path, record, home: Home) -> dict:
    """The facts, as data (`--json` prints them as they are)."""
    problems: list[str] = []
    if record is None:
        problems.append(f"no seat record in {workspace}: run `agora setup ID` here")
        return {"workspace": str(workspace), "ok": False, "record": None, "problems": problems}
    seat = harnesses.Seat(record.agent, home.root, _wired_exe(), workspace,
                          mcp=harnesses.mcp_installed())
    names = [name for name in record.harnesses if name in harnesses.supported()]
    combined = {t.path: t for t in harnesses.targets(names, seat)}  # a shared file holds one block for all
    wired = [_harness(name, seat, combined, problems) for name in names]
    url = home.hub_url  # a home whose hub runs on another host (agora setup --url)
    hub, agent = _remote_hub(url, home, record.agent, problems) if url else _hub(home, record.agent, problems)
    # The seat's files are kept under its id now: the hub moves them when the seat is renamed.
    return {
        "workspace": str(workspace), "ok": not problems,
        "record": {"path": str(record.path), "agent": record.agent, "hub": record.hub, "key_file": record.key_file,
                   "harnesses": list(record.harnesses)},
        "hub": hub, "harnesses": wired,
        "listener": _pid_state(listen_file(home.root, agent, "pid")),
        "driver": _pid_state(drive_file(home.root, agent, "pid")),
        "stop_hook_fired": _fired(home.root, agent),
        "problems": problems,
    }


def _wired_exe() -> str:
    """The agora setup would write now; a wiring naming another is stale."""
    from agorad.surface import wiring

    try:
        return wiring.agora_executable()
    except FileNotFoundError:
        return "agora"


def _harness(name: str, seat, combined: dict, problems: list[str]) -> dict:
    files = []
    for own in harnesses.targets([name], seat):
        target = combined[own.path]
        try:
            text = read_target(target.path)
            state = target.state(text)
        except (SetupError, OSError, UnicodeDecodeError) as exc:
            state = f"broken: {exc}"
        relative = str(target.path.relative_to(seat.workspace))
        files.append({"path": relative, "state": state})
        if state in (MISSING, STALE) or state.startswith("broken"):
            problems.append(f"{name}: {relative} is {state}; run `agora setup {seat.agent}` here to rewire")
    return {"name": name, "files": files, "wakes": WAKES[name]}


def _hub(home: Home, agent: str, problems: list[str]) -> tuple[dict, str]:
    """What the hub on this host says of the seat, and the seat's id as it knows it (the record's when it
    cannot say)."""
    from agorad.surface.client import Client
    from agorad.surface.errors import AgoraError, NotFound, Unavailable

    answer = {"up": True, "registered": True}
    try:
        with Client(home).connect() as hub:
            shown = hub.call("agents.get", agent=agent)
            if not shown["agent"]["registered"]:  # listed from its profile alone
                raise NotFound(agent)
            agent = _current_id(shown.get("redirected"), agent, problems)
    except Unavailable:
        problems.append(f"the hub at {home.root} is down: nothing wakes anyone; start it (`agora up --home {home.root}`)")
        answer.update(up=False, registered=None)
    except NotFound:
        problems.append(f"the hub does not know {agent}: run `agora setup {agent}` here to register it")
        answer.update(registered=False)
    except AgoraError as exc:
        problems.append(f"the hub answered: {exc.message}")
        answer.update(registered=None)
    from agorad.surface import keys

    answer["key"] = keys.read_key_file(home, agent) is not None  # a FIFO or an empty file there is no key
    if not answer["key"]:
        problems.append(f"{_no_key_at(home, agent)}: commands acting as {agent} need AGORA_KEY")
    return answer, agent


def _no_key_at(home: Home, agent: str) -> str:
    """`no key at keys/<id>.key`, or what is wrong with the file there."""
    from agorad.surface import keys

    trouble = keys.key_file_trouble(home, agent)
    return f"{home.key_file(agent)} {trouble}" if trouble else f"no key at {home.key_file(agent)}"


def _current_id(redirect: dict | None, agent: str, problems: list[str]) -> str:
    """The seat's id now: a record naming a former id is stale (its hooks and listener name an alias)."""
    if not redirect:
        return agent
    problems.append(f"{redirect['from']} was renamed to {redirect['to']} ({redirect['reason']}): run "
                    f"`agora setup {redirect['to']}` here to rewrite the seat record")
    return redirect["to"]


def _remote_hub(url: str, home: Home, agent: str, problems: list[str]) -> tuple[dict, str]:
    """A seat whose hub runs elsewhere: its key is checked with `hub.hello` at the recorded URL. The seat's id
    as the hub answers it (its hooks stamp under that id once they learn of a rename), else the record's."""
    from agorad.surface import keys
    from agorad.surface.errors import AgoraError, Unavailable
    from agorad.surface.wsclient import RemoteClient

    key = keys.read_key(home, agent)
    present = keys.read_key_file(home, agent) is not None  # the hooks' key: they get no AGORA_KEY
    if key is None:
        problems.append(f"{_no_key_at(home, agent)}: pipe it in with `agora setup {agent} --key-stdin`")
        return {"up": None, "registered": None, "key": False, "url": url}, agent
    try:
        with RemoteClient(url).connect() as client:
            current = _current_id(client.hello(agent, key).get("redirected"), agent, problems)
    except Unavailable:
        problems.append(f"the hub at {url} does not answer: nothing wakes {agent} until it does")
        return {"up": False, "registered": None, "key": present, "url": url}, agent
    except AgoraError as exc:
        problems.append(f"the hub at {url} refused {agent}: {exc.message}")
        return {"up": True, "registered": False, "key": present, "url": url}, agent
    return {"up": True, "registered": True, "key": present, "url": url}, current


def _pid_state(pidfile: Path) -> str:
    from agorad.surface.pidfiles import LIVE, pidfile_state

    state = pidfile_state(pidfile)
    return "none" if state is None else "live" if state == LIVE else "stale"


def _fired(root: Path, agent: str):
    from agorad.surface import hook_stamps

    return hook_stamps.read(root, agent, "stop").get("fired")


def render(report: dict) -> list[str]:
    if report["record"] is None:
        return [f"agora setup --check: {report['problems'][0]}"]
    r, hub = report["record"], report["hub"]
    lines = [f"seat {r['agent']} (record {r['path']})",
             f"hub: {'up' if hub['up'] else 'DOWN' if hub['up'] is False else 'not asked'} at "
             f"{hub.get('url') or Path(r['hub']).parent}; "
             f"{'registered' if hub['registered'] else 'NOT registered' if hub['registered'] is False else 'registration unknown'}; "
             f"key {'present' if hub['key'] else 'MISSING'}"]
    for harness in report["harnesses"]:
        states = ", ".join(f"{f['path']} {f['state']}" for f in harness["files"])
        lines.append(f"{harness['name']}: {states}")
        lines.append(f"  wakes: {harness['wakes']}")
    fired = report["stop_hook_fired"]
    lines.append(f"listener: {report['listener']}; driver: {report['driver']}; stop hook: "
                 f"{'NEVER FIRED' if fired is None else f'fired {int(time.time() - fired)}s ago'}")
    lines += [f"problem: {p}" for p in report["problems"]] or ["ok: wired and current"]
    return lines
