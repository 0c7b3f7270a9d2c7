"""`agora drive`: the loop of an unattended seat.

Each pass sweeps the hub for what obliges the seat (obligations.py) and decides: nothing
(armed: wait for the doorbell), the same wake a turn already left as it was (quarantined), a
back-off after turns that never reached the hub (backoff: the wake is held), a spent hourly
budget (held), or ONE bounded turn in the harness (supervise.py), judged by its own event
stream and by the hub (verdict.py). Yield is the turn's process exit; the driver re-sweeps at
once, so a turn that answered half buys the next.

`step()` is one pass and never waits: tests drive it with their own clock. `run()` is the
process: ownership, the harness checked at arm, the state lines, the waiting and the signals.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from agora_drive import chunks, journal, lines, prompt
from agora_drive.chunks import Work
from agora_drive.obligations import Obligations, Trouble, sweep
from agora_drive.ownership import Ownership, Refused
from agora_drive.state import DriveState
from agora_drive.supervise import Finished, new_token, run_turn, scrubbed_environment
from agora_drive.tree import become_subreaper, end_marked
from agora_drive.verdict import DEBT_LEFT, FAILED, OK, Verdict, judge, judge_chunk
from agora_setup.harnesses import drivable
from agora_setup.harnesses.turns import Turn
from agorad.surface import keys, settings
from agorad.surface.paths import drive_file

CHUNK_LANE = "chunk_"  # claim work chunks keep their own harness session (state.py)
HUB_RETRY = 5.0  # seconds: a hub that could not be asked is asked again after this (or at the next ring)
REFUSAL_RETRY = 1.0  # seconds: a first refusal is checked once more after this before the driver stops
EXIT_OK, EXIT_FAILED, EXIT_NO_TURN, EXIT_TURN_FAILED = 0, 1, 3, 4
NO_NOTIFY_FILES = ("the hub writes no notify files (started with --notify-dir ''); a driver waits on them: "
                   "start the hub with notify files")


@dataclass
class Options:
    agent: str
    home: Path
    notify_dir: Path | None
    harness: str
    workspace: Path
    executable: str | None = None  # the harness program; default: the harness's own name on PATH
    model: str | None = None
    args: tuple[str, ...] = ()
    command: tuple[str, ...] = ()  # the `command` harness's program and arguments
    budget: int = settings.DRIVE_BUDGET
    chunk_budget: int = settings.DRIVE_CHUNK_BUDGET  # 0: never work on claims between wakes
    turn_limit: float = settings.DRIVE_TURN_LIMIT
    grace: float = settings.DRIVE_GRACE
    rotate_after: int = settings.DRIVE_ROTATE_TURNS
    debounce: float = settings.DRIVE_DEBOUNCE
    turn_log: bool = False
    force: bool = False
    once: bool = False
    watcher: str = "auto"
    notify_dir_confirmed: bool = True  # False: guessed while no hub answered; confirmed once one does
    url: str | None = None  # the hub's remote port, for a seat whose home names a hub on another host (hub.url)


@dataclass
class Pass:
    """What one pass decided."""
    state: str  # one of vocab.DRIVE_STATES
    reason: str
    next_at: float | None = None  # wall clock: when to look again without a ring; None: at the next ring
    verdict: Verdict | None = None  # the turn's, when the pass ran one


@dataclass
class Driver:
    options: Options
    clock: Callable[[], float] = time.time
    supervise: Callable[..., Finished] = run_turn
    stop_fd: int | None = None
    announce: Callable[[Pass], None] = lambda decided: None  # run() points it at drive-<id>.pid
    stopping: Callable[[], bool] = lambda: False  # run() points it at the signal handlers' flag
    state: DriveState = field(init=False)
    turns_run: int = 0
    refused: str | None = None  # the refusal the last sweep met (a second in a row stops the driver)

    def __post_init__(self):
        self.harness = drivable(self.options.harness)
        self.state_path = drive_file(self.options.home, self.options.agent, "state")
        self.state = DriveState.load(self.state_path)

    # --- one pass -----------------------------------------------------------------------------

    def step(self) -> Pass:
        now = self.clock()
        try:
            found = sweep(self.options.home, self.options.agent, chunks.claims_seen(self.state.chains))
        except Trouble as trouble:
            return self._troubled(trouble, now)
        self.refused = None
        if found.agent != self.options.agent:  # renamed: its notify file and state moved to the new id
            lines.say(f"seat {self.options.agent} was renamed to {found.agent}; its files moved with it: run "
                      f"`agora drive --as {found.agent}` (or `agora setup {found.agent}` to rewrite the seat record)")
            return Pass("stopped", "renamed")
        if not found:  # paused, what could oblige it is refused; the resume's announcement rings the seat
            return Pass("held", "paused") if found.paused else self._settle(self._idle(found, now))
        if found.signature == self.state.quarantined:
            return Pass("quarantined", "debt-left")
        return self._held(now, self.state.turns, self.options.budget, "budget") or self._turn(found, now)

    def _held(self, now: float, spent: list[float], budget: int, reason: str) -> Pass | None:
        """Why a turn (or a chunk) may not start now: a back-off running, its hourly budget spent, or a
        stop that came during the sweep (it must not buy a turn only to kill it); None when it may."""
        if self.state.retry_at is not None and now < self.state.retry_at:
            return Pass("backoff", f"streak-{self.state.streak}", self.state.retry_at)
        free_at = self.state.spent(spent, budget, now)
        if free_at is not None:
            return Pass("held", reason, free_at)
        if self.stopping():
            return Pass("stopped", "signal")
        return None

    def _settle(self, decided: Pass) -> Pass:
        """Nothing obliges the seat: a quarantine has nothing left to guard."""
        if self.state.quarantined is not None:
            self.state.quarantined = None
            self.state.save(self.state_path)
        return decided

    def _idle(self, found: Obligations, now: float) -> Pass:
        """Nothing obliges the seat: go on with one of its open claims (chunks.py), if it has one to go on with."""
        chunks.forget_closed(self.state.chains, found.claims)
        work = chunks.pick(found.claims, self.state.chains) if self.options.chunk_budget > 0 else None
        if work is None:
            return Pass("armed", "claims-parked" if found.claims and self.options.chunk_budget > 0 else "idle")
        return self._held(now, self.state.chunks, self.options.chunk_budget, "chunk-budget") or self._chunk(work, now)

    def _turn(self, before: Obligations, now: float) -> Pass:
        self.state.turns.append(now)
        resumed = self.state.session_for(self.options.harness, self.options.rotate_after)
        self.turns_run += 1
        self.announce(Pass("turn", "obliged"))
        lines.emit(state="turn", reason="obliged", turn=self.turns_run, owed=before.owed, refs=len(before.refs),
                   session="resume" if resumed else "new")
        finished, outcome, after = self._spawn(prompt.reception(before, self.options.home, self._agora()), resumed)
        verdict = judge(finished, outcome, before, after)
        self._record(verdict, outcome, finished, resumed)
        if verdict.status == DEBT_LEFT:
            self.state.quarantined = after.signature
            self.state.save(self.state_path)
            lines.say(f"the turn reached the hub but left what woke it; this wake is quarantined until something "
                      f"changes (new mail, the debt, or `agora drive --release`): {verdict.detail}")
        self._close(verdict, finished, outcome)
        return Pass("turn", verdict.reason, self.clock(), verdict)

    def _chunk(self, work: Work, now: float) -> Pass:
        self.state.chunks.append(now)
        resumed = self.state.session_for(self.options.harness, self.options.rotate_after, CHUNK_LANE)
        self.turns_run += 1
        self.announce(Pass("chunk", work.ref))
        lines.emit(state="chunk", reason="claim", claim=work.ref, version=work.version, turn=self.turns_run,
                   session="resume" if resumed else "new")
        text = prompt.chunk(work, self.options.agent, self.options.home, self._agora())
        finished, outcome, after = self._spawn(text, resumed)
        verdict = judge_chunk(finished, outcome, chunks.progressed(work, None if after is None else after.claims))
        self._record(verdict, outcome, finished, resumed, CHUNK_LANE)
        if verdict.reached_hub and verdict.reason != "unchecked":
            if chunks.record(self.state.chains, work, moved=verdict.reason == "progress"):
                lines.say(f"{settings.DRIVE_CHUNK_IDLE} chunks in a row wrote no receipt on {work.ref} (version "
                          f"{work.version}): the driver stops working on it until the claim changes")
            self.state.save(self.state_path)
        self._close(verdict, finished, outcome)
        return Pass("chunk", verdict.reason, self.clock() + settings.DRIVE_CHUNK_ARM, verdict)

    def _spawn(self, text: str, resumed: str | None):
        """Run one turn of the harness with this prompt; its process facts, its outcome, and the sweep after it."""
        turn = Turn(text, self.options.workspace, resumed, self.options.model, self.options.args, self.options.command)
        reader = self.harness.reader()
        self.state.turn_token = new_token()
        # Saved before the spawn: the budget is spent (a crash mid-turn still counts), and should this driver
        # die mid-turn, the next one ends what the turn left running.
        self.state.save(self.state_path)
        finished = self.supervise(self._argv(turn), cwd=self.options.workspace, env=self._environment(turn),
                                  limit=self.options.turn_limit, grace=self.options.grace,
                                  on_line=self._feeder(reader), stop_fd=self.stop_fd, token=self.state.turn_token)
        self.state.turn_token = None  # (saved with the turn's consequences, _record)
        outcome = reader.finish(finished.status, finished.stderr_tail)
        after = None if finished.stopped else self._sweep_quietly()
        return finished, outcome, after

    def _close(self, verdict: Verdict, finished: Finished, outcome) -> None:
        """The flight recorder's last line for the turn, and its turn_end line."""
        if self.options.turn_log:  # the flight recorder closes each turn with how it ended
            self._log("turns.jsonl", {
                "turn": self.turns_run, "ts": round(time.time(), 3), "end": {
                    "status": verdict.status, "stage": verdict.stage, "reason": verdict.reason,
                    "exit": finished.status, "signal": finished.signal, "duration": round(finished.duration, 3),
                    "tool_calls": outcome.tool_calls, "session": outcome.session}}, settings.DRIVE_TURN_LOG_BYTES)
        lines.emit(event="turn_end", status=verdict.status, stage=verdict.stage, reason=verdict.reason,
                   turn=self.turns_run, duration=round(finished.duration, 1), tools=outcome.tool_calls,
                   exit=finished.status if finished.status is not None else "-")

    def _record(self, verdict: Verdict, outcome, finished: Finished, resumed: str | None, lane: str = "") -> None:
        """The turn's consequences, saved before anything else can fail. `lane`: its session's (state.py)."""
        self.state.ran_in(self.options.harness, outcome.session, lane)
        fresh_start = outcome.context_full or outcome.session_gone  # (a session gone was resumed forever, failing)
        if fresh_start:
            self.state.rotate(lane)
        if verdict.status == FAILED and not (fresh_start and resumed):  # a fresh session may fit, or exist
            delay = self.state.failed(self.clock())
            lines.say(f"the turn never reached the hub ({verdict.reason}); the wake is held {delay:g} s: "
                      f"{verdict.detail or 'no detail'}")
        elif verdict.reached_hub and verdict.reason != "unchecked":  # unchecked: nobody knows yet
            self.state.healthy()
        self.state.save(self.state_path)
        if verdict.status != OK:
            self._log("failures.jsonl", {
                "ts": round(self.clock(), 3), "agent": self.options.agent, "harness": self.options.harness,
                "status": verdict.status, "stage": verdict.stage, "reason": verdict.reason, "detail": verdict.detail,
                "exit": finished.status, "signal": finished.signal, "duration": round(finished.duration, 3),
                "tool_calls": outcome.tool_calls, "streak": self.state.streak,
            }, settings.DRIVE_FAILURES_BYTES)

    def _log(self, name: str, record: dict, limit: int) -> None:
        """Append to a driver log; a log that cannot be written (a full disk) is said, never fatal: the
        turn and the state matter more than their record."""
        try:
            journal.append(drive_file(self.options.home, self.options.agent, name), record, limit)
        except OSError as exc:
            lines.say(f"cannot write drive-{self.options.agent}.{name}: {exc}")

    def _sweep_quietly(self) -> Obligations | None:
        try:
            return sweep(self.options.home, self.options.agent, chunks.claims_seen(self.state.chains))
        except Trouble:
            return None

    def _feeder(self, reader) -> Callable[[str], None]:
        if not self.options.turn_log:
            return reader.feed
        turn = self.turns_run

        def feed(line: str) -> None:
            reader.feed(line)
            self._log("turns.jsonl", {"turn": turn, "ts": round(time.time(), 3), "line": line},
                      settings.DRIVE_TURN_LOG_BYTES)
        return feed

    # --- the harness's process ------------------------------------------------------------------

    def program(self) -> str | None:
        """The harness program's absolute path, or None when it cannot be found."""
        if self.options.harness == "command":
            name = self.options.command[0] if self.options.command else None
        else:
            name = self.options.executable or self.harness.executable
        if not name:
            return None
        if os.sep in name:  # a path: relative to the workspace, where the turn runs
            path = os.path.join(self.options.workspace, name)
            return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
        return shutil.which(name)

    def _argv(self, turn: Turn) -> list[str]:
        return self.harness.argv(self.program() or self.harness.executable, turn)

    def _environment(self, turn: Turn) -> dict:
        env = scrubbed_environment(os.environ)
        # The turn's own tools (agora mcp, the agora CLI) act as this seat on this hub, whatever the
        # caller's environment named.
        env.update(AGORA_HOME=str(self.options.home), AGORA_AGENT_ID=self.options.agent)
        env.update(getattr(self.harness, "environment", lambda t: {})(turn))
        return env

    @staticmethod
    def _agora() -> str:
        from agorad.surface import wiring

        try:
            return wiring.agora_executable()
        except FileNotFoundError:
            return "agora"

    def end_orphaned_turn(self) -> None:
        """Once the seat's lock is this driver's: the state as the last driver left it (read again: one still
        alive when this one was made may have begun a turn since, and saved its token), and what that driver,
        dead mid-turn (SIGKILL, the OOM killer), left running of its turn ended before this one can start a
        turn for the same wake, which would answer it twice."""
        self.state = DriveState.load(self.state_path)
        token, self.state.turn_token = self.state.turn_token, None
        if token is None:
            return
        ended = end_marked(token)
        self.state.save(self.state_path)
        if ended:
            lines.say(f"the last driver of {self.options.agent} died during a turn; ended the {ended} "
                      f"process{'es' if ended > 1 else ''} it had left running")

    def preflight(self) -> str | None:
        """Before any wake: why this harness cannot run a turn here, in its own words; None when it can."""
        if self.program() is None:
            if self.options.harness == "command":
                return f"the program {self.options.command[0]!r} of --command is not found or not executable"
            name = self.options.executable or self.harness.executable
            return f"the {self.options.harness} harness's program {name!r} is not found (install it, or --harness-path)"
        turn = Turn("", self.options.workspace, None, self.options.model, self.options.args, self.options.command)
        return self.harness.preflight(self.program(), turn, self._environment(turn))

    def _troubled(self, trouble: Trouble, now: float) -> Pass:
        """A sweep the hub did not answer: asked again later. One it refused (no key, a wrong key, an unknown
        seat): once may be a race (a rekey between reading the key file and the hello, a revoke mid-sweep),
        so it is asked once more soon; twice in a row stops the driver, since asking on cannot help."""
        first, self.refused = self.refused is None, trouble.refusal
        if trouble.refusal is None:
            lines.say(f"the hub could not be asked ({trouble}); asking again in {HUB_RETRY:g} s or at the next wake")
            return Pass("armed", "hub-unreachable", now + HUB_RETRY)
        if trouble.refusal == "no-key":  # (the hub was never asked)
            lines.say(str(trouble))
        else:
            lines.say(f"the hub refused seat {self.options.agent}: {trouble}")
        return Pass("armed", trouble.refusal, now + REFUSAL_RETRY) if first else Pass("stopped", trouble.refusal)

    def facts(self, decided: Pass) -> dict:
        """What drive-<id>.pid says about the driver now (agora status reads it)."""
        now = self.clock()
        recent = [t for t in self.state.turns if t > now - 3600]
        return {"state": decided.state, "reason": decided.reason, "harness": self.options.harness,
                "turns": len(recent), "budget": self.options.budget,
                "until": f"{decided.next_at:.0f}" if decided.next_at and decided.state != "turn" else "-"}


# --- the process -----------------------------------------------------------------------------------

def run(options: Options) -> int:
    """Own the seat, check the harness, then pass and wait until stopped. Returns the exit status."""
    from agora_drive.signals import Signals
    from agora_listen.wsource import Fatal

    signals = Signals()
    become_subreaper()  # what a turn leaves behind re-parents to the driver, which ends it (tree.py)
    driver = Driver(options, stop_fd=signals.stop_fd)
    owner = Ownership(options.home, options.agent)
    try:
        owner.take(options.force)
    except Refused as refused:
        return _ended(refused.reason, EXIT_FAILED, str(refused))
    try:
        driver.end_orphaned_turn()  # the seat is this driver's now: what is left of a dead one's turn is no one's
        problem = driver.preflight()
        if problem:
            return _ended("config", EXIT_FAILED, problem)
        if options.url is not None:  # rung over the port: no notify file on this host
            if _key(options) is None:
                return _ended("no-key", EXIT_FAILED, keys.no_key(
                    options.home, options.agent, f"`agora setup {options.agent} --url {options.url} --key-stdin` "
                    f"keeps it in {options.home}/keys"))
        elif options.notify_dir is None:
            return _ended("no-notify-file", EXIT_FAILED, NO_NOTIFY_FILES)
        else:
            options.notify_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        return _loop(driver, owner, signals)
    except Fatal as fatal:  # the doorbell over the port gave up (agora_listen.wsource)
        if not fatal.refused:
            return _ended("error", EXIT_FAILED, fatal.cause)
        return _ended("refused", EXIT_FAILED, f"{fatal.cause}; `agora setup {options.agent} --url {options.url} "
                      "--key-stdin` keeps the seat's right key")
    except Exception as exc:  # a bug or an unforeseen fault: still end with a tombstone
        return _ended("error", EXIT_FAILED, f"{type(exc).__name__}: {exc}")
    finally:
        owner.release()


def _key(options: Options) -> str | None:
    """The seat's key as its sweeps read it (agora_listen.inbox_view.ask_as_seat): $AGORA_KEY, else its key file."""
    from agorad.surface.paths import Home

    return keys.read_key(Home(options.home), options.agent)


def _doorbell(options: Options):
    from agora_drive.doorbell import Doorbell

    if options.url is not None:
        return Doorbell.over_port(options.url, options.agent, _key(options), home=options.home)
    return Doorbell.on_file(options.notify_dir, options.agent, options.watcher)


def _loop(driver: Driver, owner: Ownership, signals) -> int:
    options = driver.options
    driver.announce = lambda decided: owner.announce(**driver.facts(decided))  # noqa: E731
    driver.stopping = lambda: signals.stopping  # noqa: E731
    driver.announce(Pass("armed", "starting"))
    doorbell = _doorbell(options)
    try:
        while True:
            if signals.released():
                driver.state.release()
                driver.state.save(driver.state_path)
                lines.say("released: the quarantine and the back-off are cleared")
            decided = driver.step()
            if signals.stopping:
                return _ended("signal", EXIT_OK)
            if decided.state == "stopped":
                return _ended(decided.reason, EXIT_FAILED)
            _show(driver, decided)
            if options.once and decided.state != "armed":
                return _once_status(decided)
            if decided.state == "turn":
                continue  # re-sweep at once: a turn that answered half buys the next
            if not options.notify_dir_confirmed and decided.reason != "hub-unreachable":
                moved = _confirm_notify_dir(options, doorbell)
                if moved is None:
                    doorbell = None
                    return _ended("no-notify-file", EXIT_FAILED, NO_NOTIFY_FILES)
                if moved is not doorbell:  # armed anew at the file's end: sweep again, or what landed
                    doorbell = moved       # between the last sweep and this arm would wait for a later ring
                    continue
            # Without a ring, look again at the decision's time, or after the safety sweep's interval.
            at = decided.next_at if decided.next_at is not None else driver.clock() + settings.DRIVE_SWEEP
            doorbell.wait(time.monotonic() + max(0.0, at - driver.clock()), options.debounce,
                          [signals.stop_fd, signals.release_fd])
            if signals.stopping:
                return _ended("signal", EXIT_OK)
    finally:
        if doorbell is not None:
            doorbell.close()


def _confirm_notify_dir(options: Options, doorbell):
    """Armed while no hub answered, the driver guessed the notify directory (the home): once the hub
    answers, follow the directory it names. Returns the doorbell to wait on, None when there is none."""
    from agora_drive.doorbell import Doorbell
    from agora_listen.identity import ask
    from agorad.surface.errors import AgoraError

    try:
        answer = ask(options.home, options.agent)
    except AgoraError:
        return doorbell
    if answer is None:
        return doorbell
    options.notify_dir_confirmed = True
    if answer.notify_dir is None:
        doorbell.close()
        return None
    if os.path.realpath(answer.notify_dir) != os.path.realpath(options.notify_dir):
        doorbell.close()
        options.notify_dir = Path(answer.notify_dir)  # identity.ask gives text (no pathlib in a listener)
        return Doorbell.on_file(options.notify_dir, options.agent, options.watcher)
    return doorbell


def _show(driver: Driver, decided: Pass) -> None:
    """The pass's state line (a turn printed its own) and the pidfile's facts."""
    now = driver.clock()
    wait = "wake" if decided.next_at is None else f"{max(0, round(decided.next_at - now))}s"
    if decided.state not in ("turn", "chunk"):  # each printed its own lines
        lines.emit(state=decided.state, reason=decided.reason, next=wait)
    driver.announce(decided)


def _once_status(decided: Pass) -> int:
    if decided.verdict is None:
        return EXIT_NO_TURN
    return EXIT_OK if decided.verdict.reason in ("answered", "progress") else EXIT_TURN_FAILED


def _ended(reason: str, status: int, cause: str | None = None) -> int:
    if cause:
        lines.say(cause)
    lines.emit(state="stopped", reason=reason)
    return status
