"""The Anthropic Messages API, as Claude Code speaks it: POST /v1/messages?beta=true, streamed.

Stream shape (Anthropic's "Streaming Messages" docs): message_start, then per
content block content_block_start / content_block_delta (text_delta or
input_json_delta) / content_block_stop, then message_delta carrying the
stop_reason ("end_turn" or "tool_use") and message_stop.
"""

from __future__ import annotations

import itertools
import json

from tests.harness.protocols import naming
from tests.harness.protocols.sse import HEADERS, event

SHELL_TOOL = "Bash"
_ids = itertools.count(1)


def matches(method: str, path: str) -> bool:
    return method == "POST" and path.split("?", 1)[0] == "/v1/messages"


def is_side_request(body: dict) -> bool:
    """A request Claude Code makes for itself rather than for the conversation.

    Claude Code can ask for a session title or a one-token quota check, both
    without tools; every conversation request carries its tools (Bash at
    least). With CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1, 2.1.197 made no
    such request here in -p or stream-json sessions, so this rule is a guard:
    if one comes, it must not eat a scripted reply.
    """
    return not body.get("tools")


def user_text(body: dict) -> str:
    """The text of the newest user message: prompt text, tool results, hook-injected turns."""
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            return _text(message.get("content"))
    return ""


def _text(content) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if block.get("type") == "text":
            parts.append(block.get("text", ""))
        elif block.get("type") == "tool_result":
            parts.append(_text(block.get("content")))
    return "\n".join(parts)


def respond(reply: dict, body: dict):
    blocks = _blocks(reply, body)
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    if not body.get("stream"):
        message = _message(body, blocks, stop)
        payload = json.dumps(message).encode()
        return 200, {"Content-Type": "application/json", "Content-Length": str(len(payload))}, [payload]
    return 200, HEADERS, _stream(body, blocks, stop)


def _blocks(reply: dict, body: dict) -> list[dict]:
    if "tool" in reply:
        names = [t.get("name") for t in body.get("tools", [])]
        name = next((n for n in names if naming.means(n, reply["tool"])), None)
        if name is None:
            return [{"type": "text", "text": naming.missing(reply["tool"], names)}]
        return [{"type": "tool_use", "id": f"toolu_{next(_ids):08d}", "name": name, "input": reply.get("input", {})}]
    if "shell" in reply:
        names = [t.get("name") for t in body.get("tools", [])]
        if SHELL_TOOL not in names:
            text = f"(scripted model) wanted the {SHELL_TOOL} tool to run {reply['shell']!r}; the request offers {names}"
            return [{"type": "text", "text": text}]
        return [{"type": "tool_use", "id": f"toolu_{next(_ids):08d}", "name": SHELL_TOOL,
                 "input": {"command": reply["shell"], "description": "scripted command"}}]
    return [{"type": "text", "text": reply.get("text", "")}]


def _message(body: dict, content: list, stop: str | None) -> dict:
    return {"id": f"msg_{next(_ids):08d}", "type": "message", "role": "assistant",
            "model": body.get("model", "scripted"), "content": content, "stop_reason": stop,
            "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}


def _stream(body: dict, blocks: list[dict], stop: str):
    yield event("message_start", {"type": "message_start", "message": _message(body, [], None)})
    for index, block in enumerate(blocks):
        if block["type"] == "tool_use":
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        yield event("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})
        yield event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        yield event("content_block_stop", {"type": "content_block_stop", "index": index})
    yield event("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                  "usage": {"output_tokens": 1}})
    yield event("message_stop", {"type": "message_stop"})
