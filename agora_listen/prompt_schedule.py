"""The stop-hook backstop's re-prompt schedule: at most once per window while the same things wait.

A schedule is {"window": s, "next": hub time, "marks": [...]}, kept in the hook stamp. The first
re-prompt for something new comes at once; while nothing new joins, the next comes a window later,
the window doubling from settings.BACKSTOP_FIRST to settings.BACKSTOP_CAP; nothing waiting resets it.
Times are the hub's clock, so tests move them with clock.advance. A schedule that does not parse
counts as none: the backstop then re-prompts (more prompts, never silence).
"""

from __future__ import annotations

from agorad.surface import settings


def step(schedule, marks: list[str], now: float) -> tuple[bool, dict | None]:
    """(re-prompt now?, the schedule to keep) for what waits now (`marks`, empty for nothing)."""
    if not marks:
        return False, None
    current = schedule if valid(schedule) else None
    if current is None or set(marks) - set(current["marks"]):  # new, or something new joined
        return True, {"window": settings.BACKSTOP_FIRST, "next": now + settings.BACKSTOP_FIRST, "marks": marks}
    if now >= current["next"]:
        window = min(current["window"] * 2, settings.BACKSTOP_CAP)
        return True, {"window": window, "next": now + window, "marks": marks}
    return False, {**current, "marks": marks}  # handled ones drop out, so they would count as new again


def valid(schedule) -> bool:
    return (isinstance(schedule, dict)
            and all(isinstance(schedule.get(k), (int, float)) and not isinstance(schedule.get(k), bool)
                    for k in ("window", "next"))
            and schedule["window"] > 0
            and isinstance(schedule.get("marks"), list) and all(isinstance(m, str) for m in schedule["marks"]))
