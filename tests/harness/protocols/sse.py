"""Server-sent events framing shared by the streaming protocols."""

from __future__ import annotations

import json

HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}


def event(name: str, data: dict) -> bytes:
    """One SSE event: `event:` line, one `data:` line of compact JSON, a blank line."""
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()
