"""How a driven turn went, judged from its process, its own event stream and the hub.

Exit status 0 is not success. A turn that never reached the hub (it could not start, crashed,
ran out its time without a tool call, hit the provider's 429 or 5xx, or ended without its
terminal event) is the harness's failure: the wake is held and retried after a back-off. A
turn that ran but left the seat's obligations exactly as it found them is a diagnosis, not a
retry: that wake is quarantined until something changes. A stopped driver's turn is neither:
its wake is simply still owed at the next start.
"""

from __future__ import annotations

from dataclasses import dataclass

from agora_drive.obligations import Obligations
from agora_drive.supervise import Finished
from agora_setup.harnesses.turns import Outcome
from agorad.surface.vocab import TURN_STATUSES

OK, FAILED, DEBT_LEFT, STOPPED = TURN_STATUSES


@dataclass(frozen=True)
class Verdict:
    status: str  # one of vocab.TURN_STATUSES
    stage: str  # where it was decided: spawn, run, provider, stream, hub
    reason: str  # one word: answered, progress, debt-left, spawn-failed, crashed, timeout, ...
    detail: str = ""  # the harness's own words, for the failures log (never a sentinel line)

    @property
    def reached_hub(self) -> bool:
        return self.status in (OK, DEBT_LEFT)


def judge(finished: Finished, outcome: Outcome, before: Obligations, after: Obligations | None) -> Verdict:
    """`after`: the sweep right after the turn (None when the hub could not be asked)."""
    if finished.stopped:
        return Verdict(STOPPED, "run", "signal")
    failure = _harness_failure(finished, outcome)
    if failure is not None:
        return failure
    if after is None:  # the turn looked healthy, but whether it moved anything is unknown: ask again later
        return Verdict(OK, "hub", "unchecked", "the hub could not be asked after the turn")
    if not after:
        return Verdict(OK, "hub", "answered")
    if after.signature == before.signature:
        return Verdict(DEBT_LEFT, "hub", "debt-left",
                       f"{len(after.marks)} obligation(s) unchanged: {', '.join(after.refs[:10])}")
    return Verdict(OK, "hub", "progress")


def judge_chunk(finished: Finished, outcome: Outcome, moved: bool | None) -> Verdict:
    """A claim work chunk (chunks.py): `moved`, whether its claim moved (a receipt, a new version, no
    longer open); None when the hub could not be asked. No receipt is not a failure of the harness:
    it counts toward parking the claim's chain, never toward the back-off."""
    if finished.stopped:
        return Verdict(STOPPED, "run", "signal")
    failure = _harness_failure(finished, outcome)
    if failure is not None:
        return failure
    if moved is None:
        return Verdict(OK, "hub", "unchecked", "the hub could not be asked after the chunk")
    return Verdict(OK, "hub", "progress") if moved else Verdict(OK, "hub", "no-receipt")


def _harness_failure(finished: Finished, outcome: Outcome) -> Verdict | None:
    if finished.spawn_error:
        return Verdict(FAILED, "spawn", "spawn-failed", finished.spawn_error)
    if finished.timed_out and outcome.tool_calls == 0:
        return Verdict(FAILED, "run", "timeout", _words(outcome, finished))
    if outcome.provider:
        return Verdict(FAILED, "provider", "provider", _words(outcome, finished))
    if finished.timed_out:  # it made tool calls, so it reached the hub: the debt decides
        return None
    if outcome.context_full:
        return Verdict(FAILED, "stream", "context-full", _words(outcome, finished))
    if outcome.session_gone:
        return Verdict(FAILED, "stream", "session-gone", _words(outcome, finished))
    if outcome.completed and not outcome.error:
        return None
    if outcome.terminal:  # the harness ended the turn and said it failed
        return Verdict(FAILED, "stream", "harness-error", _words(outcome, finished))
    if finished.status not in (0, None) or finished.signal:
        return Verdict(FAILED, "run", "crashed", _words(outcome, finished))
    return Verdict(FAILED, "stream", "no-terminal", _words(outcome, finished))


def _words(outcome: Outcome, finished: Finished) -> str:
    parts = [outcome.error or "", *outcome.notes]
    if finished.status not in (0, None):
        parts.append(f"exit status {finished.status}")
    if finished.signal:
        parts.append(f"signal {finished.signal}")
    if finished.stderr_tail.strip():
        parts.append("stderr: " + finished.stderr_tail.strip()[-1000:])
    return "; ".join(p for p in parts if p)
