"""The Gemini API (generativelanguage, v1beta) as Gemini CLI speaks it, through @google/genai.

Gemini CLI with `GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:PORT` and an API key
posts `/v1beta/models/<model>:streamGenerateContent?alt=sse` for the
conversation and `/v1beta/models/<model>:generateContent` (not streamed) for
its own side questions. Facts from @google/gemini-cli 0.61.0's bundle
(bundle/chunk-*.js: the genai SDK's `{model}:streamGenerateContent?alt=sse`
paths) and its docs (bundle/docs/reference/configuration.md,
GOOGLE_GEMINI_BASE_URL; http is allowed only for localhost/127.0.0.1).

A request's body: `contents` (turns of `role` user|model with `parts`: text,
functionCall, functionResponse), `systemInstruction`, `tools`
(`[{"functionDeclarations": [...]}]`), `generationConfig`. A streamed reply
is server-sent events, each `data: <GenerateContentResponse JSON>` and a
blank line; the last chunk carries `finishReason`. A tool call is a part
`{"functionCall": {"name": ..., "args": {...}}}`; the CLI runs it and sends
its result back as a user-role part `{"functionResponse": {...}}`.
"""

from __future__ import annotations

import json

from tests.harness.protocols import naming

SHELL_TOOL = "run_shell_command"   # Gemini CLI's shell tool (bundle/docs/reference/tools.md)


def matches(method: str, path: str) -> bool:
    route = path.split("?", 1)[0]
    return method == "POST" and "/models/" in route and (
        route.endswith(":streamGenerateContent") or route.endswith(":generateContent"))


def is_side_request(body: dict) -> bool:
    """A request the CLI makes for itself (routing, loop checks, summaries): it offers no tools.

    Every conversation request declares the CLI's tools (run_shell_command at
    least); its own JSON side questions declare none.
    """
    return not _declared_tools(body)


def user_text(body: dict) -> str:
    """The newest user-role turn's text: the prompt, tool results, or a hook's continuation prompt."""
    for content in reversed(body.get("contents", [])):
        if content.get("role", "user") == "user":
            return "\n".join(_part_text(part) for part in content.get("parts", []))
    return ""


def respond(reply: dict, body: dict):
    parts = _parts(reply, body)
    chunk = {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
        "modelVersion": "scripted",
    }
    payload = json.dumps(chunk, separators=(",", ":")).encode()
    return 200, {"Content-Type": "text/event-stream"}, [b"data: " + payload + b"\r\n\r\n"]


def respond_plain(reply: dict, body: dict):
    """The non-streamed `:generateContent` answer: the same response object as one JSON body."""
    status, _, chunks = respond(reply, body)
    payload = b"".join(chunks)[len(b"data: "):].strip()
    return status, {"Content-Type": "application/json", "Content-Length": str(len(payload))}, [payload]


def _parts(reply: dict, body: dict) -> list[dict]:
    if "tool" in reply:
        names = _declared_tools(body)
        name = next((n for n in names if naming.means(n, reply["tool"])), None)
        if name is None:
            return [{"text": naming.missing(reply["tool"], names)}]
        return [{"functionCall": {"name": name, "args": reply.get("input", {})}}]
    if "shell" in reply:
        names = _declared_tools(body)
        if SHELL_TOOL not in names:
            return [{"text": f"(scripted model) wanted {SHELL_TOOL} to run {reply['shell']!r}; offered {names}"}]
        return [{"functionCall": {"name": SHELL_TOOL, "args": {"command": reply["shell"],
                                                               "description": "scripted command"}}}]
    return [{"text": reply.get("text", "")}]


def _declared_tools(body: dict) -> list[str]:
    return [decl.get("name") for tool in body.get("tools") or [] for decl in tool.get("functionDeclarations") or []]


def _part_text(part: dict) -> str:
    if "text" in part:
        return part["text"]
    if "functionResponse" in part:
        return json.dumps(part["functionResponse"].get("response", {}))
    return ""
