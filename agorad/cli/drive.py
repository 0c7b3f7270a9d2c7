"""`agora drive`: run an unattended seat's turns in a harness. A thin adapter over agora_drive."""

from __future__ import annotations

import shlex
import signal
import sys
from pathlib import Path

import click

from agorad.cli.common import DURATION, DURATION_OR_ZERO, EXIT_ERROR, fail, home_option, refuse_in_turn
from agorad.cli.shared import SharedOption, seat_record
from agorad.surface import settings
from agorad.surface.durations import format_duration
from agorad.surface.vocab import DRIVE_HARNESSES, WATCHERS


@click.command("drive")
@click.option("--as", "as_id", cls=SharedOption, metavar="ID", required=True,
              help="The seat to drive (default: the workspace's seat record).")
@click.option("--harness", type=click.Choice(DRIVE_HARNESSES),
              help="The harness to run turns in. Default: the one the seat record wires; required when it wires several.")
@click.option("--command", "command_line", metavar="CMD",
              help="With --harness command: the program to run for each turn (a shell-quoted command line; "
                   "the prompt is in $AGORA_DRIVE_PROMPT).")
@click.option("--harness-path", type=click.Path(dir_okay=False), help="The harness program (default: its name on PATH).")
@click.option("--harness-arg", "harness_args", multiple=True, metavar="ARG",
              help="One more argument for every turn's harness command line (repeatable).")
@click.option("--model", help="The model the harness runs.")
@click.option("--turn-log", is_flag=True, help="Append every turn's event stream to drive-ID.turns.jsonl.")
@click.option("--force", is_flag=True, help="Drive even while an interactive listener is armed for the seat "
                                            "(never takes a live driver's seat).")
@click.option("--budget", type=click.IntRange(1), default=settings.DRIVE_BUDGET, show_default=True,
              help="Reception turns per hour.")
@click.option("--chunk-budget", type=click.IntRange(0), default=settings.DRIVE_CHUNK_BUDGET, show_default=True,
              help="Claim work chunks per hour, between wakes, on the seat's own open claims (0: none).")
@click.option("--turn-limit", type=DURATION, default=format_duration(settings.DRIVE_TURN_LIMIT), show_default=True,
              help="A turn's whole process tree is killed after this long.")
@click.option("--rotate-after", type=click.IntRange(1), default=settings.DRIVE_ROTATE_TURNS, show_default=True,
              help="Start a new harness session after this many turns.")
@click.option("--debounce", type=DURATION_OR_ZERO, default=format_duration(settings.DRIVE_DEBOUNCE), show_default=True,
              help="Deliveries arriving within this window buy one turn.")
@click.option("--once", is_flag=True, help="Exit after the first pass that decides something: a turn (0 when it "
                                          "answered, 4 when not) or a wait (3); nothing to do waits for mail.")
@click.option("--release", is_flag=True, help="Clear the seat's quarantined wake and back-off (tells a running driver), then exit.")
@click.option("--watcher", type=click.Choice(WATCHERS), default="auto", show_default=True,
              help="How to learn that the notify file changed (as agora listen).")
@home_option
def drive(as_id, harness, command_line, harness_path, harness_args, model, turn_log, force, budget, chunk_budget,
          turn_limit, rotate_after, debounce, once, release, watcher, home):
    """Answer seat ID's mail unattended: on each wake that obliges it, run ONE bounded turn in its harness;
    between wakes, go on with the seat's own open claims in bounded work chunks.

    Stdout carries only AGORA_DRIVE lines: one per pass (state=...) and one per turn (event=turn_end).
    """
    from agorad.surface.filenames import hub_url_for
    from agorad.surface.paths import Home
    from agorad.surface.protocol import AGENT_ID_RULE, is_agent_id

    # A driver runs the program --command names: from a turn it would run what the model chose, past
    # Claude's --allowedTools, which admit only `agora`.
    refuse_in_turn(does="runs a harness, or any program --command names, for each turn")
    if not is_agent_id(as_id):
        fail(f"--as {as_id!r} is not a valid agent id ({AGENT_ID_RULE})", 2)
    where = Home.resolve(home)
    if release:
        return _release(where.root, as_id)
    record = seat_record(click.get_current_context())
    harness = _harness(harness, record)
    command = _command(command_line)
    if (harness == "command") != bool(command):
        fail("--command goes with --harness command, which needs it (the program each turn runs)", 2)
    signal.signal(signal.SIGTERM, _stopped_starting)  # until run() installs its own (agora_drive.signals)
    signal.signal(signal.SIGINT, _stopped_starting)
    signal.signal(signal.SIGHUP, _stopped_starting)
    try:
        # The hub the sweeps ask (agora_listen.inbox_view.ask_as_seat): on another host, its pushes ring.
        url = hub_url_for(where.root_text)
        agent, notify_dir, confirmed = (as_id, None, True) if url else _seat(where.root, as_id)
        from agora_drive.driver import Options, run

        workspace = record.workspace if record is not None and record.agent in (as_id, agent) else Path.cwd()
        options = Options(agent=agent, home=where.root, notify_dir=notify_dir, harness=harness, workspace=workspace,
                          executable=harness_path, model=model, args=tuple(harness_args), command=command,
                          budget=budget, chunk_budget=chunk_budget,
                          turn_limit=turn_limit, rotate_after=rotate_after, debounce=debounce, turn_log=turn_log,
                          force=force, once=once, watcher=watcher, notify_dir_confirmed=confirmed, url=url)
        status = run(options)
    except _StoppedStarting:  # a stop while the hub was first asked (a hung one holds that ask 30 s)
        from agora_drive import lines

        lines.emit(state="stopped", reason="signal")
        status = 0
    sys.exit(status)


class _StoppedStarting(Exception):
    """SIGTERM, SIGINT or SIGHUP before the driver's own handlers are in place."""


def _stopped_starting(signum, frame) -> None:
    raise _StoppedStarting()


def _command(command_line: str | None) -> tuple[str, ...]:
    """--command split as a shell would (no expansion); a line a shell would refuse is a usage error."""
    if not command_line:
        return ()
    try:
        return tuple(shlex.split(command_line))
    except ValueError as exc:  # "No closing quotation", "No escaped character"
        fail(f"--command {command_line!r} cannot be split into words: {exc}; quote it as a shell would", 2)


def _harness(chosen: str | None, record) -> str:
    """--harness, else the one drivable harness the seat record wires."""
    if chosen:
        return chosen
    wired = [h for h in (record.harnesses if record else ()) if h in DRIVE_HARNESSES]
    if len(wired) == 1:
        return wired[0]
    if not wired:
        where = f"the seat record {record.path} wires {', '.join(record.harnesses) or 'none'}" if record else \
            "there is no seat record here (`agora setup ID` writes one)"
        fail(f"name the harness to drive: --harness {'|'.join(DRIVE_HARNESSES)} ({where})", 2)
    fail(f"this workspace wires several harnesses ({', '.join(wired)}): choose one with --harness", 2)


def _seat(root: Path, as_id: str) -> tuple[str, Path | None, bool]:
    """The current id behind `as_id`, the hub's notify directory, and whether the hub said so (when no hub
    answers yet: the home, a guess the driver confirms once the hub answers)."""
    from agora_listen.identity import ask
    from agorad.surface.errors import NotFound

    try:
        answer = ask(root, as_id)
    except NotFound as exc:  # still the driver's last line, as for every end (agora-drive(1) OUTPUT)
        from agora_drive import lines

        lines.say(exc.message)
        lines.emit(state="stopped", reason="refused")
        raise SystemExit(EXIT_ERROR) from None
    if answer is None:
        return as_id, root, False
    if answer.redirected:
        r = answer.redirected
        click.echo(f"redirected: {r['from']} -> {r['to']} ({r['reason']})", err=True)
    return answer.agent, Path(answer.notify_dir) if answer.notify_dir else None, True  # the listener's text


def _release(root: Path, agent: str) -> None:
    import os
    import signal

    from agora_drive.ownership import Ownership, Refused
    from agora_drive.state import DriveState
    from agorad.surface.paths import drive_file
    from agorad.surface.pidfiles import read_pidfile

    if not any(drive_file(root, agent, name).exists() for name in ("state", "pid", "lock")):
        fail(f"no driver of {agent} has run on {root} (no drive-{agent}.* files there), so there is nothing to "
             "release: check the id (`agora status` lists the seats and their drivers)")
    owner = Ownership(root, agent)
    try:
        owner.take(force=True)  # free: no driver runs, and none starts while we edit
    except Refused:  # held: a live driver; only its lock says so (a pid alone may have been reused)
        found = read_pidfile(drive_file(root, agent, "pid"))
        if found is None:
            fail(f"the driver of {agent} holds its lock but names no pid; try again in a moment")
        os.kill(found[0], signal.SIGUSR1)
        click.echo(f"told the driver of {agent} (pid {found[0]}) to clear its quarantine and back-off")
        return
    try:
        path = drive_file(root, agent, "state")
        state = DriveState.load(path)
        state.release()
        state.save(path)
    finally:
        owner.release()
    click.echo(f"cleared the quarantine and back-off of {agent} (no driver running; the next one starts clean)")
