"""The OpenAI Responses API, as Codex speaks it: POST /v1/responses, streamed.

Codex reads output items from `response.output_item.done` events and ends a
model call at `response.completed` (whose response carries an id and usage);
a stream that ends without it is an error to Codex ("stream disconnected
before completion"). Shapes as in Codex's own test helpers
(codex-rs/core/tests/common/responses.rs: ev_response_created,
ev_assistant_message, ev_function_call, ev_completed).
"""

from __future__ import annotations

import itertools
import json

from tests.harness.protocols import naming
from tests.harness.protocols.sse import HEADERS, event

# Codex's shell tool: `exec_command` (a `cmd` string, run as `bash -lc`) in current
# versions, `shell` (a `command` argv) in older ones; whichever the request offers.
SHELL_TOOLS = ("exec_command", "shell")
_ids = itertools.count(1)


def matches(method: str, path: str) -> bool:
    return method == "POST" and path.split("?", 1)[0].endswith("/responses")


def is_side_request(body: dict) -> bool:
    """A request Codex makes for itself: the interactive TUI asks for a thread title, with no tools.

    `codex exec` asks nothing for itself with the features the tests turn off;
    every conversation request carries its tools (exec_command at least).
    """
    return not body.get("tools")


def user_text(body: dict) -> str:
    """The newest user-side input: a user message (prompts, <hook_prompt> turns) or a tool's output."""
    for item in reversed(body.get("input", [])):
        kind = item.get("type")
        if kind == "function_call_output":
            return _output_text(item.get("output"))
        if kind == "message" and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                return content
            return "\n".join(part.get("text", "") for part in content or [] if "text" in part)
    return ""


def _output_text(output) -> str:
    """A tool's output: a string, or content parts (text parts joined), or else its JSON."""
    if isinstance(output, str):
        return output
    if isinstance(output, list) and all(isinstance(part, dict) for part in output):
        return "\n".join(part.get("text", "") for part in output if "text" in part)
    if isinstance(output, dict) and "content" in output:
        return _output_text(output["content"])
    return json.dumps(output)


def respond(reply: dict, body: dict):
    response_id = f"resp_{next(_ids):08d}"
    return 200, HEADERS, _stream(response_id, _item(reply, body))


def _item(reply: dict, body: dict) -> dict:
    if "tool" in reply:
        return _tool_call(reply["tool"], reply.get("input", {}), body.get("tools", []))
    if "shell" in reply:
        tool = next((t for t in body.get("tools", []) if t.get("name") in SHELL_TOOLS), None)
        if tool is None:
            names = [t.get("name") for t in body.get("tools", [])]
            return _message(f"(scripted model) wanted a shell tool {SHELL_TOOLS} to run {reply['shell']!r}; "
                            f"the request offers {names}")
        return {"type": "function_call", "id": f"fc_{next(_ids):08d}", "call_id": f"call_{next(_ids):08d}",
                "name": tool["name"], "arguments": json.dumps(_arguments(tool, reply["shell"]))}
    return _message(reply.get("text", ""))


def _tool_call(wanted: str, arguments: dict, tools: list[dict]) -> dict:
    """Call the offered tool named `wanted` or `..__wanted`: flat, or inside a namespace (MCP servers)."""
    offered = []
    for tool in tools:
        if tool.get("type") == "namespace":
            for inner in tool.get("tools", []):
                offered.append(f"{tool.get('name')}/{inner.get('name')}")
                if naming.means(inner.get("name"), wanted):
                    return _function_call(inner["name"], arguments, namespace=tool.get("name"))
        else:
            offered.append(tool.get("name"))
            if naming.means(tool.get("name"), wanted):
                return _function_call(tool["name"], arguments)
    return _message(naming.missing(wanted, offered))


def _function_call(name: str, arguments: dict, namespace: str | None = None) -> dict:
    call = {"type": "function_call", "id": f"fc_{next(_ids):08d}", "call_id": f"call_{next(_ids):08d}",
            "name": name, "arguments": json.dumps(arguments)}
    if namespace:
        call["namespace"] = namespace
    return call


def _arguments(tool: dict, line: str) -> dict:
    properties = (tool.get("parameters") or {}).get("properties", {})
    if "cmd" in properties:
        return {"cmd": line}
    if properties.get("command", {}).get("type") == "array":
        return {"command": ["bash", "-lc", line]}
    return {"command": line}


def _message(text: str) -> dict:
    return {"type": "message", "role": "assistant", "id": f"msg_{next(_ids):08d}",
            "content": [{"type": "output_text", "text": text}]}


def _stream(response_id: str, item: dict):
    yield event("response.created", {"type": "response.created", "response": {"id": response_id}})
    yield event("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item})
    yield event("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item})
    usage = {"input_tokens": 1, "input_tokens_details": None, "output_tokens": 1,
             "output_tokens_details": None, "total_tokens": 2}
    yield event("response.completed", {"type": "response.completed", "response": {"id": response_id, "usage": usage}})
