"""The running hub's state, shared by every handler: home, database, clock, settings,
the group-commit batch, the steady-heartbeat stamps, the notify writer and the
live-push subscribers."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import apsw

from agorad.domain import cadence
from agorad.domain import obligations
from agorad.domain import pause as pausing
from agorad.domain import registry
from agorad.domain.delivery import Deliveries, rows_for
from agorad.runtime import faults
from agorad.runtime.batch import Batch
from agorad.runtime.clock import Clock
from agorad.runtime.helper import HELPER_FROM, Helper
from agorad.runtime.liveness import Liveness
from agorad.runtime.log import log
from agorad.runtime import notify_lost
from agorad.runtime.notify import Notifier, line_fields
from agorad.runtime.notify_dir import notify_files_allowed
from agorad.store import messages as messages_sql
from agorad.store import write
from agorad.surface import keys
from agorad.surface import seat_files
from agorad.surface import settings
from agorad.surface.paths import Home, seat_state_files
from agorad.surface.protocol import encode

REPLAY_PAGE = 100  # deliveries read per step of a catch-up replay: each row holds its message's body (for the preview)


@dataclass
class Settings:
    """What `agora up` can set."""

    sweep_interval: float = settings.SWEEP_INTERVAL
    ephemeral_ttl: float = settings.EPHEMERAL_TTL
    synchronous: str = settings.SYNCHRONOUS.upper()
    test_clock: bool = False
    notify_dir: str | None = None       # None: the home; "": no notify files
    notify_rotate_mb: float = settings.NOTIFY_ROTATE_MB  # 0: never rotate
    max_body: int = settings.MAX_BODY_KIB * 1024
    escalation: tuple[float, ...] = settings.ESCALATION
    liveness_flush: float = settings.LIVENESS_FLUSH  # 0: every heartbeat is committed before its reply
    listen: str | None = None           # --listen HOST:PORT: the remote port (remote.py); None: none
    tls_cert: str | None = None         # --tls-cert and --tls-key: serve wss://
    tls_key: str | None = None
    insecure: bool = False              # --insecure: allow a plain ws:// port beyond loopback
    listen_idle: float = settings.REMOTE_IDLE
    log_file: str | None = None         # agora up --detach: the file stderr appends to, rotated (log_file.py)


@dataclass
class HubState:
    home: Home
    db: apsw.Connection
    clock: Clock
    settings: Settings = field(default_factory=Settings)
    started_at: float = 0.0
    last_sweep: dict = field(default_factory=dict)
    escalated_upto: float = 0.0  # the clock time the last escalation pass (sweep or not) ran at
    reminded_upto: float = 0.0   # ... and the last cadence reminder pass
    notifier: Notifier = field(init=False)
    batch: Batch = field(init=False)
    liveness: Liveness = field(init=False)
    subscribers: dict[int, set] = field(default_factory=dict)  # agent pk -> connections that subscribed
    sessions: dict[int, set] = field(default_factory=dict)     # agent pk -> connections acting as it
    _replays: set = field(default_factory=set)  # catch-up replays under way (replay)
    debts_opened: asyncio.Event = field(default_factory=asyncio.Event)  # an ask committed: the sweeper looks again
    # The open pause (domain/pause.py), or None: read on every agent call, so kept here in step with
    # the database (loaded at start, set by hub.pause and hub.resume, read again if their batch is lost).
    pause: pausing.Pause | None = field(init=False, default=None)
    remote_url: str | None = None  # the remote port's URL once it listens (agora up --listen)
    notify_names: notify_lost.NameWatch | None = None  # the notify directory's watch, once serving (Linux)

    def __post_init__(self):
        self.pause = pausing.current(self.db)
        self.liveness = Liveness(self.settings.liveness_flush, open_transaction=lambda: self.batch.join())
        helper = Helper()  # one helper thread for the batch's COMMIT and the notify writes (helper.py)
        self.batch = Batch(self.db, on_begin=lambda: self.liveness.flush(self.db), on_settled=self.liveness.settled,
                           helper=helper)
        notify_dir = self.settings.notify_dir
        directory = None if notify_dir == "" else (self.home.root if notify_dir is None else Home.resolve(notify_dir).root)
        self.notifier = Notifier(directory, int(self.settings.notify_rotate_mb * (1 << 20)), seats=self.home.root,
                                 open_files=notify_files_allowed(), helper=helper)
        notify_lost.keep_unread_for(self.notifier, self.db)

    @property
    def ephemeral_ttl(self) -> float:
        return self.settings.ephemeral_ttl

    @property
    def sweep_interval(self) -> float:
        return self.settings.sweep_interval

    def publish(self, events: Sequence[dict]) -> None:
        """After COMMIT: append each delivery to its agent's notify file and push it to subscribers.
        A big fan-out's lines are formatted during the COMMIT, on the helper thread (helper.py)."""
        if events:
            if len(events) >= HELPER_FROM and isinstance(events, Deliveries) and self.notifier.enabled:
                self.batch.beside_commit(lambda: self.notifier.prepare(events))
            self.batch.when_settled(lambda stored: stored and self._announce(events))

    def notify_names_changed(self) -> None:
        """The notify directory's watch is readable: look at the seats whose file names changed. The
        directory itself gone: made again at once (Notifier.restore_directory) and watched again."""
        changed = self.notify_names.changed()
        if self.notify_names.watching or not self.watch_notify_dir_again():
            self.look_at_notify_files(changed)

    def look_at_notify_files(self, agent_ids: set[str] | None) -> None:
        """Once the open batch is settled, stop writing to any of these seats' files (None: every one held
        open) that left its name, and keep what a listener may not have read (notify_lost.py). Many seats
        (`rm *-inbox.log`) are taken a few dozen a loop turn, so requests get in between (~1.5 ms a seat)."""
        ordered = sorted(self.notifier.descriptors() if agent_ids is None else agent_ids)
        now, later = set(ordered[:notify_lost.SEATS_A_TURN]), set(ordered[notify_lost.SEATS_A_TURN:])
        if later:
            asyncio.get_running_loop().call_soon(self._look_at_notify_files_later, later)
        if now:
            self.batch.when_settled(lambda stored: notify_lost.recover(self.notifier, self.db, now))

    def _look_at_notify_files_later(self, agent_ids: set[str]) -> None:
        if self.notify_names is not None:  # None once the hub stops: its database is closing
            self.look_at_notify_files(agent_ids)

    def reopen_notify_files(self) -> None:
        """SIGUSR2: look at every open notify file (a file moved away where no watch saw it), then close them
        all, so that each seat's next line opens its file by name."""
        self.batch.when_settled(lambda stored: (notify_lost.recover(self.notifier, self.db, None),
                                                self.notifier.reopen(),
                                                log("sigusr2", action="reopened notify files")))

    def after_commit(self, effect) -> None:
        """Run `effect` once what was written so far is committed (now, if nothing is pending)."""
        self.batch.when_settled(lambda stored: stored and effect())

    def _announce(self, events: Sequence[dict]) -> None:
        faults.point("after-commit")
        self.notifier.write_all(self.db, events)
        if self.subscribers:
            for event in rows_for(events, self.subscribers):
                for connection in list(self.subscribers.get(event["agent_pk"], ())):
                    connection.push(delivery_frame(event))
        faults.point("after-notify")

    def replay(self, connection, agent_pk: int, after: int) -> None:
        """After COMMIT: push the agent's deliveries with id > `after`, oldest first, then subscribe the
        connection; its replies wait until then, so the replayed pushes come before the call's reply.

        The pushes go out as the peer reads them, a page at a time: written all at once, a backlog past
        the subscriber's buffer limit (16 MiB here, 4 MiB on the remote port) cut the connection as a
        subscriber that does not read, however fast it read, and a client that reconnected with the same
        `after` was cut again, for ever. Every read is made with no batch open, so what is pushed is
        committed; the read that finds nothing newer subscribes in the same step, so no delivery falls
        between the replay and the pushes, and none comes twice."""
        connection.hold_replies()
        previous = connection.replay_task
        task = asyncio.get_running_loop().create_task(self._replay(connection, agent_pk, after, previous))
        connection.replay_task = task
        self._replays.add(task)  # the loop keeps only a weak reference to a task
        task.add_done_callback(self._replays.discard)

    async def _replay(self, connection, agent_pk: int, after: int, previous: asyncio.Task | None) -> None:
        try:
            if previous is not None:  # one replay at a time on a connection, in the order they were asked
                await asyncio.wait([previous])
            # Already subscribed (a second subscribe, such as a client's after 0 when the ids started again
            # lower): live pushes would overtake the replay; it subscribes again once it has caught up.
            self.subscribers.get(agent_pk, set()).discard(connection)
            seqs: list[int] = []
            while not connection.gone():
                if not seqs:
                    seqs = await self._settled(lambda: self._rest_or_subscribe(connection, agent_pk, after))
                    if not seqs:
                        return
                page, seqs = seqs[:REPLAY_PAGE], seqs[REPLAY_PAGE:]
                for row in await self._settled(lambda: messages_sql.deliveries_by_seqs(self.db, page)):
                    if connection.gone():
                        return
                    connection.transport.write(delivery_frame(row))
                    after = row["id"]
                    if connection.behind():
                        await connection.drained()
        except Exception as exc:  # a bug: the connection goes, so its client connects again and catches up
            log("error", method="inbox.subscribe", error=type(exc).__name__, detail=str(exc)[:200])
            connection.transport.close()
        finally:
            connection.release_replies()

    def _rest_or_subscribe(self, connection, agent_pk: int, after: int) -> list[int]:
        """The seqs of the agent's deliveries after `after`; none: the replay is done, and the connection
        subscribes in this same step (unless it went, or said hub.hello as another agent meanwhile)."""
        seqs = messages_sql.delivery_seqs_after(self.db, agent_pk, after)
        if not seqs and not connection.gone() and connection.actor.agent_pk == agent_pk:
            connection.subscribe(agent_pk)
        return seqs

    def _settled(self, read) -> asyncio.Future:
        """`read()`'s result, read once no batch is open (at once, or right after the open one's COMMIT)."""
        done = asyncio.get_running_loop().create_future()

        def run(stored: bool) -> None:
            if done.cancelled():
                return
            try:
                done.set_result(read())
            except Exception as exc:
                done.set_exception(exc)

        self.batch.when_settled(run)
        return done

    def set_pause(self, paused: pausing.Pause | None) -> None:
        """The pause state changed in the open batch: it holds for the calls after this one at once;
        if the batch is not stored, the state is read back from the database."""
        self.pause = paused
        self.batch.when_settled(lambda stored: stored or self._reload_pause())
        self.debts_opened.set()  # the sweeper's escalation wait looks again (none while paused)

    def _reload_pause(self) -> None:
        self.pause = pausing.current(self.db)

    def agent_renamed(self, pk: int, old_id: str, new_id: str) -> None:
        """After a committed rename: live connections act under the new id; files follow it."""
        for connection in self.sessions.get(pk, ()):
            connection.actor.agent_id = new_id
        self._clear_leftovers(new_id)
        self.move_seat_files(old_id, new_id)

    def seat_files_of(self, agent_id: str) -> list[Path]:
        """Every file named after a seat, in the order move_seat_files moves them: its state files, its notify
        files, its key file last."""
        notify = self.notifier.files_of(agent_id) if self.notifier.enabled else ()
        return [*seat_state_files(self.home.root, agent_id), *notify, self.home.key_file(agent_id)]

    def move_seat_files(self, old_id: str, new_id: str) -> None:
        """A rename's file steps, each over what stands under the new id. The key file last: one still under
        the old id marks a rename a stop cut, which start-up finishes with this same call (runtime/renames.py)."""
        faults.point("rename-before-files")
        _each(lambda: seat_files.rename(self.home, old_id, new_id))
        faults.point("rename-after-state")
        _each(lambda: self.notifier.rename(old_id, new_id))
        faults.point("rename-after-notify")
        _each(lambda: keys.move_key_file(self.home, old_id, new_id))

    def agent_updated(self, pk: int, mode: str) -> None:
        """After a committed agents.update: live connections act under the new mode."""
        for connection in self.sessions.get(pk, ()):
            connection.actor.mode = mode

    def key_staged(self, agent_id: str, replacing_for: int | None = None) -> None:
        """A key staged in the open batch (agents.add, or a rekey of agent pk `replacing_for`): once the
        change is stored it becomes the key file, and at a rekey the connections acting as the agent hang
        up (the old key may have leaked: what it opened closes too; a client that reads the key file again
        reconnects). Every one of them said hello with the old key: the new one is nowhere to be read until
        then. If the change is not stored, the staged key goes, and file and hash stay as they were."""
        def settled(stored: bool) -> None:
            if not stored:
                _each(lambda: keys.drop_staged_key(self.home, agent_id))
                return
            _each(lambda: keys.install_staged_key(self.home, agent_id))
            for connection in list(self.sessions.get(replacing_for, ())):
                connection.revoke(f"agent {agent_id}'s key was replaced")
        self.batch.when_settled(settled)

    def agent_removed(self, pk: int, agent_id: str) -> None:
        """After a committed removal: its connections hang up; its key, notify and seat files go."""
        for connection in list(self.sessions.get(pk, ())):
            connection.revoke(f"agent {agent_id} was removed")
        self.sessions.pop(pk, None)
        self.subscribers.pop(pk, None)
        faults.point("remove-before-files")
        _each(lambda: self.notifier.forget(pk, agent_id))
        self._remove_seat_files(agent_id)

    def _remove_seat_files(self, agent_id: str) -> None:
        _each(lambda: keys.remove_key_file(self.home, agent_id), lambda: self.notifier.remove_files(agent_id),
              lambda: seat_files.remove(self.home, agent_id))

    def agent_added(self, agent_id: str) -> None:
        """After a committed add (before its key file is put in place): see _clear_leftovers; a listener place
        left under the id made the start of the new seat (seat_files.restart_listen_place); then its notify
        file, empty, for a listener to arm on before the first delivery (Notifier.create)."""
        self._clear_leftovers(agent_id)
        _each(lambda: seat_files.restart_listen_place(self.home, agent_id))
        _each(lambda: self.notifier.create(agent_id))

    def _clear_leftovers(self, agent_id: str) -> None:
        """An id just taken (an add, or a rename's new id) may hold the files of a removed seat whose removal a
        stop cut before its file steps: they go, so the seat starts clean (its delivery ids start at 1; appended
        to an old file they would follow higher ones). Only when a key or notify file shows it, since only the
        hub writes those: `agora setup` run while no hub answered writes the id's hook stamps, which stay."""
        present = [path for path in self.seat_files_of(agent_id) if path.exists()]
        hubs = {self.home.key_file(agent_id), *(self.notifier.files_of(agent_id) if self.notifier.enabled else ())}
        if hubs.isdisjoint(present):
            return
        log("stale-files-removed", agent=agent_id, files=len(present))
        self._remove_seat_files(agent_id)

    def sweep(self) -> dict:
        """Periodic work: registry transitions, due escalations and reminders, notify catch-up, watermarks."""
        now = self.clock.now()
        self.watch_notify_dir_again()
        self.batch.join()  # in the batch, so it reads the waiting liveness stamps
        self.liveness.forget_all()  # the sweep may turn agents dormant or expired
        with write(self.db):
            counts = registry.sweep(self.db, now, self.ephemeral_ttl)
            events = self._escalations(now)
            reminders = self.remind_due(now)
            marks = self.notifier.unstored()
            messages_sql.set_notified_upto(self.db, marks)
        self.after_commit(lambda: self.notifier.stored.update(marks))
        self.publish(events + reminders)
        # Catch-up reads the database: only committed deliveries may reach a file.
        self.after_commit(lambda: self.notifier.catch_up_all(self.db))
        self.escalated_upto = self.reminded_upto = now
        self.last_sweep = {"at": now, **counts, "escalated": len(events), "reminded": len(reminders)}
        return self.last_sweep

    def watch_notify_dir_again(self) -> bool:
        """The notify directory's watch went with the directory (deleted, or moved away): make the directory
        again where the hub may (not the home), watch the one there now, and look at every open file, whose
        moves went unseen meanwhile; the lines whose writes failed meanwhile are written. True when watched."""
        if self.notify_names is None or self.notify_names.watching:
            return False
        self.notifier.restore_directory()
        try:
            self.notify_names.rearm()
        except OSError:
            return False  # not there: the next sweep, or the next line that needs a file, tries again
        log("notify-watch-rearmed", directory=self.notify_names.directory)
        self.look_at_notify_files(None)
        self.after_commit(lambda: self.notifier.catch_up_all(self.db))
        return True

    def escalate(self) -> int:
        """Only the escalations and reminders that are due: what the sweeper runs between sweeps when
        one falls due (no registry transitions, so what liveness knows stays known)."""
        now = self.clock.now()
        self.batch.join()  # reads the waiting liveness stamps: a debtor's presence decides
        with write(self.db):
            events = self._escalations(now)
            events += self.remind_due(now)
        self.publish(events)
        self.escalated_upto = self.reminded_upto = now
        return len(events)

    def remind_due(self, now: float) -> list[dict]:
        """The cadence reminder pass, inside the caller's transaction; its deliveries, to publish.
        A paused hub posts none; its resume moves the pending ones on by the time paused
        (pause.on_resume -> cadence.shift)."""
        if self.pause is not None:
            return []
        return cadence.remind_due(self.db, now, self.ephemeral_ttl)

    def _escalations(self, now: float) -> list[dict]:
        """The due escalations, none while the hub is paused (its obligation clocks stand still)."""
        if self.pause is not None:
            return []
        return obligations.escalate_due(self.db, now, self.ephemeral_ttl, self.settings.escalation)



def _each(*steps) -> None:
    """Run every file step of a committed change; one failing does not stop the others."""
    for step in steps:
        try:
            step()
        except OSError as exc:
            log("file-step-failed", error=exc.strerror or exc, path=getattr(exc, "filename", None))


def delivery_frame(row: dict) -> bytes:
    """The `inbox.delivery` notification a subscriber gets for one delivery row."""
    return encode({"jsonrpc": "2.0", "method": "inbox.delivery", "params": line_fields(row)})
