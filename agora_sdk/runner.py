"""`AgentRunner`: an agent as a Python process, its handler called per message over a live push.

The runner's promise is at-least-once: a message is acked only after its handler returned, so a
runner killed between delivery and ack leaves it unread and the next runner hands it to its
handler again (as does a reconnect when the hub went away under a running handler). Its
catch-up is the server's cursor: on every (re)connect it subscribes first, then handles what
`inbox.check` lists unread, then follows pushes. Within one process a message whose handler
returned is never handed over again: an ack lost with the connection is made again after the
reconnect, without the handler. A handler refused by a pause of the hub (`Paused`) did not fail:
its message stays unread, held, and is handed over again once the hub has resumed (the resume's
announcement, delivered to every seat, wakes the runner to look).

    def handle(message):                   # or `async def`
        message.reply(f"echo: {message.body}")

    AgentRunner("echo", handle).run()      # until SIGTERM/SIGINT or stop()
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import logging
import random
import signal
import threading

from agora_sdk.aio import AsyncClient
from agora_sdk.guard import Clock, LoopGuard
from agora_sdk.message import Message
from agora_sdk.methods import Methods
from agorad.surface import settings
from agorad.surface.errors import AgoraError, NotFound, Paused, Unauthorized, Unavailable
from agorad.surface.fence import one_line
from agorad.surface.protocol import MAX_TASK
from agorad.surface.vocab import ESCALATED_FLAG, OPEN_FLAG

log = logging.getLogger("agora_sdk.runner")
HANDLED_REMEMBERED = 10_000  # refs handled this session: a push after the catch-up, or a catch-up after an ack
                             # lost with the connection, does not run the handler twice


class AgentRunner:
    """Run `handler(message)` for each message delivered to `agent_id`; see the module.

    `key`, `home`, `url`, `timeout`: as for Client. `heartbeat`: seconds between heartbeats, a handler running
    or not (declared to the hub as the agent's interval). `max_sends`/`window`: the loop guard's budget
    (guard.py). `clock`: real time unless a test gives its own.
    """

    def __init__(self, agent_id: str, handler, *, key: str | None = None, home=None, url: str | None = None,
                 heartbeat: float = settings.RUNNER_HEARTBEAT, max_sends: int = settings.LOOP_GUARD_SENDS,
                 window: float = settings.LOOP_GUARD_WINDOW, reconnect_first: float = settings.RUNNER_RECONNECT_FIRST,
                 reconnect_cap: float = settings.RUNNER_RECONNECT_CAP, clock: Clock | None = None,
                 timeout: float | None = 30.0):
        self.agent = agent_id
        self.handler = handler
        self.is_async = inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(
            getattr(handler, "__call__", None))
        self.heartbeat = heartbeat
        self.reconnect = (reconnect_first, reconnect_cap)
        self.client = AsyncClient(agent_id, key=key, home=home, url=url, timeout=timeout, interval=heartbeat,
                                  reconnect=False)
        self.guard = LoopGuard(agent_id, max_sends, window, clock or Clock(), self._report)
        self.handled: collections.OrderedDict[str, None] = collections.OrderedDict()
        self.failed: set[str] = set()  # refs whose handler raised: left unread, not retried in this session
        # refs whose handler a pause refused, with their `working` task: left unread, handled again after the
        # resume, and shown as the seat's task meanwhile (a message handled between must not replace it)
        self.held: dict[str, str] = {}
        self.last_error: str | None = None
        self._troubled = False  # a report since the last message began: its `error` status stays until the next
        self.connections = 0  # how many times it connected (1 + reconnects)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping = False
        self._wake: asyncio.Event | None = None
        self.ready = threading.Event()  # set once the first catch-up is done and pushes are followed

    # --- running and stopping ----------------------------------------------------------------

    def run(self) -> None:
        """Run until SIGTERM or SIGINT (in the main thread) or stop(): the current handler finishes
        and its message is acked first."""
        asyncio.run(self.run_async(signals=threading.current_thread() is threading.main_thread()))

    async def run_async(self, signals: bool = False) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        if signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                self._loop.add_signal_handler(sig, self._request_stop)
        try:
            await self._serve_until_stopped()
        finally:
            await self.client.close()

    def stop(self) -> None:
        """Ask the runner to stop, from any thread: the handler running now finishes and is acked."""
        self._stopping = True  # seen by a run() not started yet, or by one whose loop already ended
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self._request_stop)
            except RuntimeError:
                pass  # the loop closed meanwhile: the run is over

    @property
    def stopping(self) -> bool:
        """A stop was asked for: the runner ends once the running handler (if any) returned and was acked."""
        return self._stopping

    def _request_stop(self) -> None:
        log.info("%s: stopping once the running handler returns", self.agent)
        self._stopping = True
        self._wake.set()
        self.client.interrupt()

    async def _serve_until_stopped(self) -> None:
        failures = 0
        revoked = None  # the hub's word when it hung up on the seat (a rekey, a removal), until a connect answers it
        while not self._stopping:
            try:
                await self._connect(revoked)
                revoked = None
                self._follow_rename()
                self.connections += 1
                failures = 0
                await self._serve()
            except Unauthorized as exc:
                if revoked is not None or not self.client.target.key_from_file:
                    raise  # a wrong key, a revoked one or a removed seat: retrying cannot help
                revoked = exc
                log.info("%s: %s; connecting again with the key file's key", self.agent, exc)
                continue  # at once: the hub hung up on purpose, and the key file (after a rekey) decides
            except Unavailable as exc:
                if exc.data.get("untrusted"):
                    raise  # a certificate this host does not trust: as a wrong key, retrying cannot help
                log.warning("%s: the hub went away (%s); reconnecting", self.agent, exc)
            finally:
                await self.client.close()
            if not self._stopping:
                await self._back_off(failures)
                failures += 1

    async def _connect(self, revoked: Unauthorized | None) -> None:
        """Connect and say hello. After the hub revoked the seat, a refusal (the key file held no new key, the
        seat is gone) ends the runner with the hub's own word, which says why."""
        try:
            await self.client.connect()
        except (Unauthorized, NotFound):
            if revoked is not None:
                raise revoked from None
            raise

    def _follow_rename(self) -> None:
        """The seat's id as the hello answered it: after `agora agent rename` the logs and the loop guard's own
        DM rule name the new one (they kept the id the runner was started with)."""
        current = self.client.target.key_holder
        if current is not None and current != self.agent:
            log.info("%s: renamed to %s", self.agent, current)
            self.agent = self.guard.agent = current

    async def _back_off(self, failures: int) -> None:
        first, cap = self.reconnect
        delay = min(cap, first * 2 ** failures) * random.uniform(0.5, 1.0)  # jittered: a fleet does not knock at once
        try:
            await asyncio.wait_for(self._wake.wait(), delay)
        except TimeoutError:
            pass

    # --- one connection's life -----------------------------------------------------------------

    async def _serve(self) -> None:
        client = self.client
        await client.call("inbox.subscribe")  # first, so nothing sent during the catch-up is missed
        await self._beat(status="idle")
        await self._catch_up()
        self.ready.set()
        beats = asyncio.get_running_loop().create_task(self._beat_steadily())
        try:
            while not self._stopping:
                push = await client.next_notification()
                if push is None or push.get("method") != "inbox.delivery":
                    continue
                params = push["params"]
                if ESCALATED_FLAG in params["flags"]:
                    continue  # the ask itself was delivered; the debt stays in owed.list and drain()
                await self._handle(f"{params['channel']}#{params['seq']}", params["flags"], params["id"])
                if self.held:
                    await self._catch_up()  # held ones come back once the hub no longer says it is paused
        finally:
            beats.cancel()
        if self._stopping and not self._troubled:  # a report outlives the runner, for whoever looks next
            await self._beat(status="idle")

    async def _catch_up(self) -> None:
        """Handle what the server's cursor says is unread, until nothing is left but failures."""
        while not self._stopping:
            # Failed and held messages stay unread and are listed first (oldest first), so the listing grows by
            # them: at a fixed DRAIN_LIMIT, that many failures hid every later message until a restart (a review).
            room = settings.DRAIN_LIMIT + len(self.failed) + len(self.held)
            check = await self.client.call("inbox.check", limit=min(room, settings.INBOX_LIMIT_MAX))
            if check.get("paused") is None:
                self.held.clear()
            waiting = [(m["ref"], m["flags"]) for channel in check["channels"] for m in channel["messages"]
                       if m["ref"] not in self.failed and m["ref"] not in self.held]
            if not waiting:
                return
            for ref, flags in waiting:
                if self._stopping:
                    return
                await self._handle(ref, flags, None, unread=True)

    async def _handle(self, ref: str, flags: list[str], delivery: int | None, unread: bool = False) -> None:
        """Read, hand to the handler, ack. `unread`: the catch-up lists it, so a ref whose handler
        already returned in this session lost its ack with the connection, and is acked now."""
        if ref in self.failed:
            return
        client = self.client
        if ref in self.handled:
            if unread:
                await client.call("inbox.ack", ref=ref)
            elif client.pending_pushes == 0 and not self._troubled:  # the catch-up took it while its push
                await self._beat(**self._resting())                  # waited: the rest its handler did not say
            return
        try:
            read = await client.request("messages.read", ref=ref)
        except Unavailable:
            raise
        except AgoraError as exc:  # e.g. its channel was left meanwhile: this message, not the runner, fails
            self.failed.add(ref)
            await self._report(f"cannot read {ref}: {exc.reason}: {exc}")
            return
        message = Message.from_read(read, flags, owed=OPEN_FLAG in flags, delivery=delivery, hub=_HandlerHub(self))
        self._troubled = False
        # The handler starts first and the `working` heartbeat goes out beside it: the message's wait
        # for its handler does not include a write, and the heartbeat's reply is awaited afterwards.
        running = (asyncio.ensure_future(self.handler(message)) if self.is_async
                   else self._loop.run_in_executor(None, self.handler, message))
        task = one_line(f"{ref}: {message.title}", MAX_TASK)
        working = client.request("agents.heartbeat", status="working", task=task)
        try:
            await running
        except Paused as exc:  # not the handler's fault: its message waits for the resume
            self.held[ref] = task
            log.info("%s: %s held until the hub resumes (%s)", self.agent, ref, exc)
            return
        except Exception as exc:
            # The runner's connection went (or the hub hung up on it, saying why) under the handler: reconnect, and
            # the message comes again. An Unavailable of the handler's own (another hub, another client) is its
            # failure: taken for this one, it ran the handler again at every reconnect, without end.
            if client.lost is not None:
                raise client.lost from exc
            self.failed.add(ref)
            await self._report(f"handler failed on {ref}: {type(exc).__name__}: {exc}", exc_info=exc)
            return
        finally:
            await _settled(working)
        self._remember(ref)  # before the ack: an ack lost with the connection is made again, the handler not run again
        acked = client.request("inbox.ack", ref=ref)
        # Idle once nothing else waits, sent with the ack so that both are stored in one commit; a
        # report stays in view until the next message.
        idle = client.request("agents.heartbeat", **self._resting()) if (
            client.pending_pushes == 0 and not self._troubled) else None
        try:
            await acked
        except Unavailable:
            raise
        except AgoraError as exc:  # the handler left the message's channel, say: it was handled, and is not retried
            await self._report(f"cannot ack {ref}: {exc.reason}: {exc}")
        finally:
            if idle is not None:
                await _settled(idle)

    def _resting(self) -> dict:
        """The heartbeat once a handler is done and nothing else waits: idle, or while a pause holds a
        message, that message's `working` task (it is still the seat's work)."""
        if self.held:
            return {"status": "working", "task": next(reversed(self.held.values()))}
        return {"status": "idle"}

    def _remember(self, ref: str) -> None:
        self.handled[ref] = None
        if len(self.handled) > HANDLED_REMEMBERED:
            self.handled.popitem(last=False)

    # --- liveness and reports -------------------------------------------------------------------

    async def _beat(self, **params) -> None:
        await self.client.call("agents.heartbeat", **params)

    async def _beat_steadily(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat)
            try:
                await self._beat()  # restates status and task: the hub answers it from memory
            except AgoraError as exc:
                if self.client.lost is not None:
                    return  # the serve loop sees the lost connection and connects again
                log.warning("%s: a heartbeat was refused (%s); beating on", self.agent, exc)

    async def _report(self, reason: str, exc_info: BaseException | None = None) -> None:
        """Say what went wrong: a log line, and status `error` with the reason as its task."""
        self.last_error = reason
        self._troubled = True
        log.error("%s: %s", self.agent, reason, exc_info=exc_info)
        try:
            await self._beat(status="error", task=one_line(reason, MAX_TASK))
        except AgoraError:
            pass  # the connection is lost: the serve loop sees it


async def _settled(future: asyncio.Future) -> None:
    try:
        await future
    except AgoraError:
        pass  # a lost connection shows on the next call


class _HandlerHub(Methods):
    """What a handler's `message.hub` is: the runner's connection, its sends through the loop guard.

    An async handler awaits its calls; a sync one (in a worker thread) gets their results directly.
    """

    _nouns = {}

    def __init__(self, runner: AgentRunner):
        self._runner = runner

    @property
    def agent(self) -> str:
        return self._runner.agent

    async def _call(self, method: str, params: dict):
        runner = self._runner
        if method == "messages.send":
            await runner.guard.admit(params)
            result = await runner.client.call(method, **params)
            runner.guard.sent(result)
            return result
        return await runner.client.call(method, **params)

    def call(self, method: str, **params):
        if self._runner.is_async:
            return self._call(method, params)
        return asyncio.run_coroutine_threadsafe(self._call(method, params), self._runner._loop).result()


def run_agent(agent_id: str, handler, **options) -> None:
    """Run `handler` as `agent_id` until a signal stops it (AgentRunner(...).run(), with logging set up)."""
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    AgentRunner(agent_id, handler, **options).run()
