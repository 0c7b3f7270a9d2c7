"""Test-only fault points: AGORA_FAULT=<name> makes the hub kill itself (SIGKILL) at that point.

Used by the crash-safety tests to stop the hub exactly between two steps
(for example after COMMIT, before the notify line). Unset, it costs one
comparison with None.
"""

from __future__ import annotations

import os
import signal

ACTIVE = os.environ.get("AGORA_FAULT") or None


def point(name: str) -> None:
    if ACTIVE == name:
        os.kill(os.getpid(), signal.SIGKILL)
