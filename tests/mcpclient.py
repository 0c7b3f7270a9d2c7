"""Drive `agora mcp` with the SDK's own stdio client (mcp.client.stdio), as a harness would."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.hubproc import AGORA


class Tools:
    """A session's tool calls, each returning (is_error, text)."""

    def __init__(self, session: ClientSession):
        self.session = session

    async def __call__(self, name: str, **arguments) -> tuple[bool, str]:
        result = await self.session.call_tool(name, arguments)
        return result.is_error, "\n".join(c.text for c in result.content)

    async def ok(self, name: str, **arguments) -> str:
        error, text = await self(name, **arguments)
        assert not error, f"{name}({arguments}) failed: {text}"
        return text

    async def fails(self, name: str, **arguments) -> str:
        error, text = await self(name, **arguments)
        assert error, f"{name}({arguments}) should have failed: {text}"
        return text

    async def listed(self) -> list[dict]:
        tools = (await self.session.list_tools()).tools
        return [t.model_dump(mode="json", exclude_none=True, by_alias=True) for t in tools]


def tools_list_bytes(listed: list[dict]) -> int:
    """The tools/list result as it crosses the wire, compact JSON."""
    return len(json.dumps({"tools": listed}, separators=(",", ":")).encode())


@contextlib.asynccontextmanager
async def mcp_session(home: Path, *args: str, env: dict | None = None, command: list[str] | None = None):
    """A started, initialized `agora mcp --home HOME ARGS` (or `command`); its stderr goes to home/../mcp.log."""
    argv = command or [AGORA, "mcp", "--home", str(home), *args]
    # The SDK starts the server with a bare environment; PYTHONPATH goes along, so that a checkout
    # run from elsewhere (PYTHONPATH=<tree> pytest) serves its own code, as the hubs it starts do.
    inherited = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}
    params = StdioServerParameters(command=argv[0], args=argv[1:], env={**inherited, **(env or {})},
                                   cwd=str(home.parent))
    with open(home.parent / "mcp.log", "a") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield Tools(session)


async def until(check, what: str, timeout: float = 10.0):
    """Await `check()` until it returns a true value: a condition waited for, never a sleep asserted on."""
    import anyio

    with anyio.fail_after(timeout):
        while True:
            value = await check()
            if value:
                return value
            await anyio.sleep(0.02)


async def doorbell_up(tools: Tools) -> None:
    """The server's waiting connection is subscribed: from now on every delivery wakes a wait."""
    async def up():
        error, text = await tools("whoami")
        return not error and "; doorbell up," in text
    await until(up, "the doorbell to connect")




@contextlib.asynccontextmanager
async def waiting(tools: Tools, timeout_s: float):
    """A `wait_for_messages` in flight while the block runs; when it ends, the list it yielded holds the
    wait's text (the call must not have failed)."""
    import anyio

    answers: list[str] = []

    async def wait():
        answers.append(await tools.ok("wait_for_messages", timeout_s=timeout_s))
    async with anyio.create_task_group() as group:
        group.start_soon(wait)
        yield answers


async def waits_in_flight(tools: Tools) -> int:
    text = await tools.ok("whoami")
    return int(text.rsplit(", ", 1)[1].split(" ")[0])
