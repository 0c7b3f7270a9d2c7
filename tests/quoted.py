"""Reading CLI output that quotes other agents' words in an AGORA-DATA fence (agorad/surface/fence.quoted)."""

from __future__ import annotations

import re

_OPEN = re.compile(r"^<<<AGORA-DATA ([0-9a-f]{16}) \S+>>>$")


def unquoted(text: str) -> list[str]:
    """The output's lines with each fence taken away (its opening line, the two lines that say what it
    holds, and its closing line); asserts every fence opened is closed by its own boundary."""
    lines, kept, boundary = text.splitlines(), [], None
    index = 0
    while index < len(lines):
        opened = _OPEN.match(lines[index])
        if boundary is None and opened:
            boundary = opened.group(1)
            index += 3  # the opening line and the note under it
            continue
        if boundary is not None and lines[index] == f"<<<AGORA-DATA-END {boundary}>>>":
            boundary = None
        else:
            kept.append(lines[index])
        index += 1
    assert boundary is None, f"a fence was never closed: {text}"
    return kept
