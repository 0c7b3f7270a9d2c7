"""OpenAI Chat Completions, as opencode speaks it to a custom provider: POST /v1/chat/completions, streamed.

opencode reaches any OpenAI-compatible endpoint through its bundled
`@ai-sdk/openai-compatible` provider (opencode.json `provider.<id>.npm`, with
`options.baseURL`); that SDK posts `<baseURL>/chat/completions` with
`stream: true`. Stream shape (OpenAI's "Chat Completions streaming" reference):
`data: <chat.completion.chunk JSON>` events whose `choices[0].delta` carries
`content` text or `tool_calls` (id, function name, JSON-encoded arguments),
the last with `finish_reason` "stop" or "tool_calls", then `data: [DONE]`.
A tool's result comes back as a `role: "tool"` message.
"""

from __future__ import annotations

import itertools
import json
import time

from tests.harness.protocols import naming

SHELL_TOOL = "bash"   # opencode's shell tool; its arguments are {command, description}
_ids = itertools.count(1)


def matches(method: str, path: str) -> bool:
    return method == "POST" and path.split("?", 1)[0].endswith("/chat/completions")


def is_side_request(body: dict) -> bool:
    """A request opencode makes for itself (a session title): it offers no tools; every turn's request does."""
    return not body.get("tools")


def user_text(body: dict) -> str:
    """The text after the newest assistant message: the prompt, tool results, or a plugin's follow-up prompt."""
    texts = []
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "assistant":
            break
        if message.get("role") in ("user", "tool"):
            texts.append(_text(message.get("content")))
    return "\n".join(reversed(texts))


def respond(reply: dict, body: dict):
    delta, finish = _delta(reply, body)
    ident, created, model = f"chatcmpl-{next(_ids):08d}", int(time.time()), body.get("model", "scripted")

    def chunk(delta: dict, finish: str | None, usage: bool = False) -> bytes:
        data = {"id": ident, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        if usage:
            data["usage"] = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        return b"data: " + json.dumps(data, separators=(",", ":")).encode() + b"\n\n"

    if not body.get("stream"):
        message = {"role": "assistant", **delta}
        payload = json.dumps({"id": ident, "object": "chat.completion", "created": created, "model": model,
                              "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                              "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
        return 200, {"Content-Type": "application/json", "Content-Length": str(len(payload))}, [payload]
    chunks = [chunk({"role": "assistant", **delta}, None), chunk({}, finish, usage=True), b"data: [DONE]\n\n"]
    return 200, {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}, chunks


def _delta(reply: dict, body: dict) -> tuple[dict, str]:
    if "tool" in reply:
        names = [t.get("function", {}).get("name") for t in body.get("tools") or []]
        name = next((n for n in names if naming.means(n, reply["tool"])), None)
        if name is None:
            return {"content": naming.missing(reply["tool"], names)}, "stop"
        call = {"index": 0, "id": f"call_{next(_ids):08d}", "type": "function",
                "function": {"name": name, "arguments": json.dumps(reply.get("input", {}))}}
        return {"content": None, "tool_calls": [call]}, "tool_calls"
    if "shell" in reply:
        names = [t.get("function", {}).get("name") for t in body.get("tools") or []]
        if SHELL_TOOL not in names:
            return {"content": f"(scripted model) wanted {SHELL_TOOL} to run {reply['shell']!r}; offered {names}"}, "stop"
        arguments = json.dumps({"command": reply["shell"], "description": "scripted command"})
        call = {"index": 0, "id": f"call_{next(_ids):08d}", "type": "function",
                "function": {"name": SHELL_TOOL, "arguments": arguments}}
        return {"content": None, "tool_calls": [call]}, "tool_calls"
    return {"content": reply.get("text", "")}, "stop"


def _text(content) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content or [] if isinstance(part, dict))
