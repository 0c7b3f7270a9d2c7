"""Claim work chunks: the work a driven seat goes on with between wakes, one bounded slice at a time.

A claim is a promise its owner made (`agora claim open`); the driver keeps it, never the hub
("attention, not initiative": the hub only surfaces debts). While the seat owns an open claim
and nothing obliges it, the driver chains WORK chunks on it: each re-reads the claim (it may
have been superseded), does one slice, writes a progress receipt on the claim and exits.
Obligations preempt: every pass sweeps the inbox first, and between chunks the driver waits
on the doorbell for DRIVE_CHUNK_ARM seconds. A chunk that writes no receipt is no progress
(an identical row write is not one either: only receipts and changes of the row count);
DRIVE_CHUNK_IDLE such chunks in a row on one version of a claim park its chain, until the
claim changes. Chunks spend a budget and a harness session of their own, so reception is
never starved; a receipt never notifies anyone, so routine progress cannot feed back into
reception.
"""

from __future__ import annotations

from dataclasses import dataclass

from agorad.surface import settings


@dataclass(frozen=True)
class Work:
    """An open claim the seat owns, as the sweep found it."""
    ref: str  # claim:<n>
    version: int
    receipts: int

    @classmethod
    def of(cls, claim: dict) -> "Work":
        return cls(claim["ref"], claim["version"], claim["receipts"])


def pick(claims: tuple[Work, ...], chains: dict) -> Work | None:
    """The claim the next chunk works on: the oldest open one whose chain is not parked."""
    return next((work for work in claims if not is_parked(work, chains)), None)


def is_parked(work: Work, chains: dict) -> bool:
    """Its chain ran DRIVE_CHUNK_IDLE chunks without a receipt on this very version of the claim."""
    entry = chains.get(work.ref)
    return entry is not None and entry[0] == work.version and entry[1] >= settings.DRIVE_CHUNK_IDLE


def progressed(before: Work, after: tuple[Work, ...] | None) -> bool | None:
    """Did the chunk move its claim? A new receipt, a new version, or the claim no longer open
    (done, parked, or gone from the seat) is progress; None when the hub could not be asked."""
    if after is None:
        return None
    now = next((w for w in after if w.ref == before.ref), None)
    return now is None or now.receipts > before.receipts or now.version != before.version


def record(chains: dict, work: Work, moved: bool) -> bool:
    """Count the chunk in its claim's chain; True when that parks the chain."""
    entry = chains.get(work.ref)
    idle = entry[1] if entry is not None and entry[0] == work.version else 0
    chains[work.ref] = [work.version, 0 if moved else idle + 1]
    return is_parked(work, chains)


def claims_seen(chains: dict) -> int:
    """How many of the seat's oldest open claims a sweep lists: DRIVE_CLAIMS_SEEN beyond the parked chains,
    so the oldest claim a chunk may take is always among them (with only the 50 oldest listed, 50 parked
    claims left a driver idle `claims-parked` beside a 51st it could work on)."""
    parked = sum(1 for _, idle in chains.values() if idle >= settings.DRIVE_CHUNK_IDLE)
    return min(settings.CLAIMS_LIST_MAX, settings.DRIVE_CLAIMS_SEEN + parked)


def forget_closed(chains: dict, claims: tuple[Work, ...]) -> None:
    """Chains of claims the seat no longer has open are dropped: the state file stays small."""
    live = {w.ref for w in claims}
    for ref in [ref for ref in chains if ref not in live]:
        del chains[ref]
