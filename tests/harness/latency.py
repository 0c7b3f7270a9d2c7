"""Latency figures gathered during a harness run, printed at its end beside each other."""

from __future__ import annotations

import statistics

_FIGURES: dict[str, list[float]] = {}
_NOTES: dict[str, str] = {}


def record(name: str, seconds: list[float], note: str = "") -> None:
    _FIGURES.setdefault(name, []).extend(seconds)
    if note:
        _NOTES[name] = note


def summary() -> list[str]:
    if not _FIGURES:
        return []
    lines = ["", "harness latency (median, min-max, n):"]
    for name, values in _FIGURES.items():
        ms = [v * 1000 for v in values]
        note = f"  ({_NOTES[name]})" if name in _NOTES else ""
        lines.append(f"  {name}: {_ms(statistics.median(ms))} ({_ms(min(ms))}-{_ms(max(ms))}, n={len(ms)}){note}")
    return lines


def _ms(value: float) -> str:
    return f"{value:.2f} ms" if value < 10 else f"{value:.0f} ms"
