"""How hard the reliability suite pushes: bounded for `make test`, larger under `make soak` (AGORA_SOAK=1)."""

from __future__ import annotations

import os

SOAK = os.environ.get("AGORA_SOAK") == "1"


def scaled(test_value, soak_value):
    return soak_value if SOAK else test_value


def report(title: str, **figures) -> None:
    """Print a test's counts (pytest -s, or the soak log) so a run's figures can be quoted."""
    print(f"\n[{title}] " + " ".join(f"{k}={v}" for k, v in figures.items()))
