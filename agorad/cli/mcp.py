"""`agora mcp`: serve the seat's mailbox as MCP tools on stdio (agora_mcp), for one harness session.

Only this command imports the `mcp` SDK, and only once it runs: `agora --help`
and every other command stay free of it.
"""

from __future__ import annotations

import click

from agorad.cli.common import fail, home_option
from agorad.cli.shared import SharedOption


@click.command("mcp")
@click.option("--as", "as_id", cls=SharedOption, metavar="ID", envvar="AGORA_AGENT_ID",
              help="Act as this agent (default: $AGORA_AGENT_ID, else the workspace's seat record, "
                   ".agora/seat.toml); the key comes from $AGORA_KEY or <home>/keys/ID.key.")
@home_option
def mcp(as_id, home):
    """Serve the seat's mailbox as MCP tools on stdin/stdout, for a harness (Claude Code, Cursor, Codex).

    Needs the mcp extra: pip install 'agora-hub[mcp]'. A hub that is down is a
    tool error, never an exit: the server reconnects when it is back. A seat whose
    home names a hub on another host (its hub.url, from `agora setup --url`) is
    served over that hub's remote port.
    """
    if not as_id:
        raise click.UsageError("no seat: give --as ID, set AGORA_AGENT_ID, or run `agora setup ID` in the workspace")
    try:
        from agora_mcp.server import serve
    except ImportError as exc:
        if exc.name is None or not exc.name.startswith(("mcp", "pydantic", "anyio")):
            raise
        fail("agora mcp needs the mcp extra: pip install 'agora-hub[mcp]'")
    from agora_mcp.link import Seat
    from agorad.surface.filenames import hub_url_for
    from agorad.surface.paths import Home
    from agorad.surface.protocol import is_agent_id

    if not is_agent_id(as_id):
        raise click.BadParameter(f"{as_id!r} is not an agent id", param_hint="--as")
    where = Home.resolve(home)
    serve(Seat(as_id, where, hub_url_for(where.root_text)))
