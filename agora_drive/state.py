"""What a driver keeps between passes and between runs, in drive-<id>.state (agora-files(5)).

Budgets are the start times of the last hour's turns, so a restart neither refills nor empties
them. The failure streak and its back-off end hold a wake the harness could not take; the
quarantined signature keeps a turn from being bought again on inputs that already failed to
move. A corrupt or missing file is a fresh state: a held wake is then tried again, never
dropped, because the debt it answers stays on the hub.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from agorad.surface import settings
from agorad.surface.filenames import read_regular
from agorad.surface.paths import write_private

HOUR = 3600.0


@dataclass
class DriveState:
    turns: list[float] = field(default_factory=list)  # start times of reception turns, the last hour's
    chunks: list[float] = field(default_factory=list)  # start times of claim work chunks (their own budget)
    streak: int = 0  # turns in a row that never reached the hub
    retry_at: float | None = None  # the back-off after them ends here (wall clock)
    quarantined: str | None = None  # the signature of a wake a turn left as it found it
    session: str | None = None  # the harness session the next turn resumes
    session_harness: str | None = None  # ... and which harness it belongs to
    session_turns: int = 0  # turns run in that session
    # Claim work chunks keep a session of their own (chunks.py), so reception's stays its own.
    chunk_session: str | None = None
    chunk_session_harness: str | None = None
    chunk_session_turns: int = 0
    chains: dict = field(default_factory=dict)  # claim ref -> [version, chunks in a row without a receipt]
    turn_token: str | None = None  # the running turn's (tree.py), kept until it ends: a driver that died mid-turn
                                   # left it, and the next one ends what the turn left running

    @classmethod
    def load(cls, path: Path) -> "DriveState":
        try:
            data = json.loads(read_regular(path))
            state = cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})
            state._check()
            return state
        except (OSError, ValueError, TypeError, RecursionError):
            return cls()

    def _check(self) -> None:
        """Raise TypeError unless every field has its type (a hand-edited file must not crash the loop)."""
        numbers = all(isinstance(t, (int, float)) for t in self.turns + self.chunks)
        if not (numbers and isinstance(self.streak, int) and isinstance(self.session_turns, int)):
            raise TypeError("drive state")
        texts = (self.quarantined, self.session, self.session_harness, self.chunk_session, self.chunk_session_harness,
                 self.turn_token)
        if not all(v is None or isinstance(v, str) for v in texts) or not isinstance(self.chunk_session_turns, int):
            raise TypeError("drive state")
        if not isinstance(self.chains, dict) or not all(
                isinstance(v, list) and len(v) == 2 and all(isinstance(n, int) for n in v) for v in self.chains.values()):
            raise TypeError("drive state")
        if self.retry_at is not None and not isinstance(self.retry_at, (int, float)):
            raise TypeError("drive state")

    def save(self, path: Path) -> None:
        write_private(path, json.dumps(asdict(self)))

    # --- budgets ------------------------------------------------------------------------------

    def spent(self, times: list[float], budget: int, now: float) -> float | None:
        """None while the budget has room; else when (wall clock) its oldest turn leaves the hour."""
        times[:] = [t for t in times if t > now - HOUR]
        if len(times) < budget:
            return None
        return min(times) + HOUR

    # --- failures -----------------------------------------------------------------------------

    def failed(self, now: float) -> float:
        """One more turn that never reached the hub: the back-off, doubling from the first to the cap."""
        self.streak += 1
        delay = min(settings.DRIVE_BACKOFF_FIRST * 2 ** min(self.streak - 1, 16), settings.DRIVE_BACKOFF_CAP)
        self.retry_at = now + delay
        return delay

    def healthy(self) -> None:
        """A turn that reached the hub clears the streak."""
        self.streak, self.retry_at = 0, None

    def release(self) -> None:
        """`agora drive --release`: forget the quarantine and the back-off; the next pass may buy a turn."""
        self.quarantined = None
        self.healthy()

    # --- the harness session ------------------------------------------------------------------

    def session_for(self, harness: str, rotate_after: int, lane: str = "") -> str | None:
        """The session the next turn resumes: none for another harness's, or after `rotate_after` turns.
        `lane`: "" for reception turns, "chunk_" for claim work chunks (each keeps its own)."""
        if getattr(self, lane + "session_harness") != harness or getattr(self, lane + "session_turns") >= rotate_after:
            self.rotate(lane)
        return getattr(self, lane + "session")

    def ran_in(self, harness: str, session: str | None, lane: str = "") -> None:
        if session is None:
            return
        if session != getattr(self, lane + "session") or harness != getattr(self, lane + "session_harness"):
            setattr(self, lane + "session", session)
            setattr(self, lane + "session_harness", harness)
            setattr(self, lane + "session_turns", 0)
        setattr(self, lane + "session_turns", getattr(self, lane + "session_turns") + 1)

    def rotate(self, lane: str = "") -> None:
        setattr(self, lane + "session", None)
        setattr(self, lane + "session_turns", 0)
