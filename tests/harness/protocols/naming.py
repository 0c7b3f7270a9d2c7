"""Which offered tool a scripted `{"tool": NAME}` reply means: NAME itself, or a name ending in `__NAME`.

MCP tools come prefixed by their server: `mcp__agora__check_inbox` in Claude
Code, `check_inbox` inside the namespace `mcp__agora` in Codex.
"""

from __future__ import annotations


def means(offered: str | None, wanted: str) -> bool:
    return offered == wanted or str(offered).endswith("__" + wanted)


def missing(wanted: str, offered: list) -> str:
    return f"(scripted model) wanted the tool {wanted!r}; the request offers {offered}"
