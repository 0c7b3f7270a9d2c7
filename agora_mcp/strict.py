"""Refuse a tool call that names an argument the tool does not have, before the tool runs.

The SDK validates the arguments a tool declares and drops any other: a misspelt `replyto` on
send_message then posted a new message instead of a reply (the debt stayed, and the model
believed it had answered), and `to_` left a message unaddressed. A name that is not the
tool's is a mistake to correct, never a field to guess, so the call changes nothing and the
error names it with the tool's own arguments. This runs as the SDK's public server
middleware, on the raw request, since the tool function never sees what was dropped.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from agorad.surface.errors import InvalidParams
from agora_mcp.fixes import explain
from agora_mcp.link import Seat


class UnknownArguments:
    """Server middleware: a tools/call naming an argument its tool lacks answers a tool error."""

    def __init__(self, seat: Seat):
        self.seat = seat
        self.known: dict[str, tuple[str, ...]] = {}  # tool name -> its arguments, in their order

    def learn(self, fn: Callable) -> None:
        """Remember the arguments of a tool as it is registered (its name is the function's)."""
        self.known[fn.__name__] = tuple(inspect.signature(fn).parameters)

    async def __call__(self, ctx, call_next) -> Any:
        params = ctx.params if ctx.method == "tools/call" and isinstance(ctx.params, dict) else {}
        arguments, allowed = params.get("arguments"), self.known.get(params.get("name"))
        if isinstance(arguments, dict) and allowed is not None:
            unknown = [name for name in arguments if name not in allowed]
            if unknown:
                return {"content": [{"type": "text", "text": self._refusal(params["name"], unknown, allowed)}],
                        "isError": True}
        return await call_next(ctx)

    def _refusal(self, tool: str, unknown: list[str], allowed: tuple[str, ...]) -> str:
        names = ", ".join(repr(name) for name in unknown)
        takes = f"its arguments: {', '.join(allowed)}" if allowed else "it takes none"
        said = explain(InvalidParams(f"{tool} has no argument {names} ({takes}); nothing was done",
                                     field=unknown[0]), self.seat)
        return f"Error executing tool {tool}: {said}"  # as the SDK begins every other tool error
