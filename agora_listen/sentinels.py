"""The four sentinel lines (agora-listen(1) "Sentinel lines"), built only from validated identifiers.

Nothing a message contains reaches these lines except through `clamp`
(channel names) and `preview` (a JSON-escaped, neutralised title), so no
message can start a line with AGORA_WAKE or split a sentinel line.
"""

from __future__ import annotations

import math
import sys
import time

from agora_listen import harness
from agorad.surface import cjson
from agorad.surface.vocab import ENDED_REASONS, WAKE_FLAGS

MAX_CHANNELS = 6
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_CHANNEL_CHARS = frozenset(_ALNUM + "._:-")
_PATH_CHARS = frozenset(_ALNUM + "._:/~+-")


def clamp(channel: str) -> str:
    """A channel name in the wake-line charset: anything else becomes `?`."""
    return _only(_CHANNEL_CHARS, str(channel)[:80]) or "?"


def emit(line: str) -> None:
    """One sentinel line on stdout, flushed at once; raises harness.Gone if nobody reads stdout any more."""
    harness.write(sys.stdout, line + "\n")


def emit_last(line: str) -> None:
    """The tombstone: attempted, and never an error of its own when stdout's reader is gone."""
    try:
        emit(line)
    except harness.Gone:
        pass


def armed(agent: str, hub: str, source: str = "file") -> str:
    return f"AGORA_LISTEN armed source={source} agent={agent} hub={_path(hub)}"


def _path(path: str) -> str:
    return _only(_PATH_CHARS, path)


def _only(allowed: frozenset, text: str) -> str:
    """`text` with each character not in `allowed` as `?` (a set, not `re`: the listener loads no `re`)."""
    return "".join(ch if ch in allowed else "?" for ch in text)


def heartbeat(now: float | None = None) -> str:
    return f"AGORA_LISTEN heartbeat ts={int(now if now is not None else time.time())}"


def ended(reason: str, cause: str | None = None) -> str:
    assert reason in ENDED_REASONS, reason
    line = f"AGORA_LISTEN ended reason={reason}"
    if cause:
        line += " cause=" + quoted_token(" ".join(cause.split())[:200])
    return line


def wake(agent: str, deliveries: list[dict], owed: int, now: float | None = None, backlog: bool = False,
         preview: bool = False, missed: int = 0) -> str:
    """`AGORA_WAKE agent= n= channels= flags= owed=` for a batch of notify lines (n=0 for backlog).

    `missed` deliveries (rotated away unread) count in n and show as `missed=N`.
    """
    newest: dict[str, int] = {}
    flags: set[str] = set()
    for delivery in deliveries:
        channel = clamp(delivery["channel"])
        newest[channel] = max(newest.get(channel, 0), number(delivery.get("seq")))
        flags.update(f for f in delivery.get("flags", ()) if f in WAKE_FLAGS)
    shown = [f"{channel}#{seq}" for channel, seq in list(newest.items())[:MAX_CHANNELS]]
    parts = [
        f"AGORA_WAKE agent={agent}", f"n={0 if backlog else len(deliveries) + missed}",
        f"channels={','.join(shown) or '-'}", f"flags={','.join(f for f in WAKE_FLAGS if f in flags) or '-'}",
        f"owed={number(owed)}",
    ]
    if len(newest) > MAX_CHANNELS:
        parts.append(f"more={len(newest) - MAX_CHANNELS}")
    stamps = [d["ts"] for d in deliveries
              if isinstance(d.get("ts"), (int, float)) and not isinstance(d.get("ts"), bool) and math.isfinite(d["ts"])]
    if stamps and now is not None:
        parts.append(f"age={max(0, int(now - max(stamps)))}")
    if missed:
        parts.append(f"missed={missed}")
    if backlog:
        parts.append("backlog")
    if preview and deliveries:
        parts.append("preview=" + quoted_token(_neutral(deliveries[-1].get("title", ""))))
    return " ".join(parts)


def quoted_token(text: str) -> str:
    """`text` as a JSON string with no space and no `=`, so a key=value splitter sees one token."""
    return cjson.encode_string(text).replace(" ", "\\u0020").replace("=", "\\u003d")


def number(value) -> int:
    """A non-negative integer from a notify line, or 0: nothing else reaches an output line."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _neutral(title) -> str:
    text = "".join(ch if ch.isprintable() else " " for ch in str(title))
    return text[:80]
