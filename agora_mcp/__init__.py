"""`agora mcp`: a seat's mailbox as MCP tools, one long-lived stdio server per harness session.

Built on the official `mcp` SDK, an optional extra (`pip install 'agora-hub[mcp]'`):
the hub, the listener and every other command never import this package.
It sees only `agorad.surface`, like the listener: `connection` (the hub's
protocol on asyncio), `link` (the connection for tool calls), `doorbell` (pushed deliveries, for wait_for_messages), `fixes`
(a hub error as a tool error with its fix), `render` (results as fenced text)
and `server` (the tools).
"""
