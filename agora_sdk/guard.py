"""The runner's loop guard: a handler that answers itself, or storms, is held and reported.

A handler that answers its own replies would send without end, and two runners that answer each
other's every message as fast as they can. The guard sees every send a handler makes through its
message's hub:

- a send that answers the agent's own message (`reply_to` one of the last 1,024 refs this runner
  sent), or a DM to the agent itself, is refused with LoopGuardTripped;
- a send beyond `sends` within `window` seconds waits until the window lets it through
  (throttled, never dropped).

Both are reported: a log line and the agent's status `error` with the reason (agents.get shows it).
The budget bounds two runners answering each other; it does not end them: it cannot tell another
runner's reply from a person's, so a handler knows when an exchange is over (docs/sdk.md).
"""

from __future__ import annotations

import asyncio
import collections
import time


class LoopGuardTripped(Exception):
    """A handler's send was refused by the runner's loop guard (the message says why)."""


class Clock:
    """Real time. Tests give the runner a clock they advance themselves."""

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class LoopGuard:
    def __init__(self, agent: str, sends: int, window: float, clock: Clock, report):
        self.agent = agent
        self.sends = sends
        self.window = window
        self.clock = clock
        self.report = report  # async (reason) -> None
        self._times: collections.deque[float] = collections.deque()
        self._own: collections.deque[str] = collections.deque(maxlen=1024)  # refs this agent sent lately

    async def admit(self, params: dict) -> None:
        """Return when the send may go; raise LoopGuardTripped when it must not."""
        reason = self._refusal(params)
        if reason is not None:
            await self.report(reason)
            raise LoopGuardTripped(reason)
        now = self.clock.monotonic()
        self._forget_before(now - self.window)
        if len(self._times) >= self.sends:
            await self.report(f"loop guard: more than {self.sends} sends within {self.window:g}s; "
                              "the handler's sends are throttled")
            while len(self._times) >= self.sends:
                await self.clock.sleep(self._times[0] + self.window - now)
                now = self.clock.monotonic()
                self._forget_before(now - self.window)
        self._times.append(now)

    def _refusal(self, params: dict) -> str | None:
        """Why the send would answer the agent itself, or None."""
        if params.get("reply_to") in self._own:
            return f"loop guard: a reply to {self.agent}'s own message {params['reply_to']} was refused"
        if params.get("target") == f"@{self.agent}":
            return f"loop guard: a DM from {self.agent} to itself was refused"
        return None

    def sent(self, result: dict) -> None:
        self._own.append(result["ref"])

    def _forget_before(self, start: float) -> None:
        while self._times and self._times[0] <= start:
            self._times.popleft()
