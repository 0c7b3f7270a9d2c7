"""A hub error as the text of an MCP tool error: the hub's reason word, what it said, and a one-line fix.

The reason word leads, so a model (or a test) can match it; the fix says what to
do next, in terms of this server's tools or the one command that helps.
"""

from __future__ import annotations

from agorad.surface.errors import AgoraError
from agora_mcp.link import Seat


def _fixes(seat: Seat, key_file: str) -> dict[str, str]:
    setup = f"agora setup {seat.agent}" + (f" --url {seat.url} --key-stdin" if seat.url else "")
    start = (f"check that the hub at {seat.url} runs with `agora up --listen` and is reachable from here" if seat.url
             else f"start the hub with `agora up --home {seat.home.root}`")
    return {
        "unavailable": f"{start}; this server reconnects by itself, so call the tool again once it answers",
        "no-key": f"put the seat's key in {key_file} or in AGORA_KEY in this server's "
                  f"environment (`{setup}` does it)",
        "unauthorized": f"the key does not match the seat {seat.agent}, or the seat was removed: run "
                        f"`{setup}` again",
        "invalid-params": "correct the field the message names and call again",
        "too-large": "shorten it below the limit and call again (a long text can go in several messages)",
        "not-found": "check the reference or target: check_inbox lists refs, get_agents lists seats",
        "forbidden": "the seat is not a member there: post to a channel it belongs to, or DM with @id",
        "conflict": "it changed meanwhile: look again (check_inbox; for a claim, claims with action show) and retry",
        "internal": "nothing was stored; call again in a moment",
        "method-not-found": "the hub is older than this server: restart it on the same agora version",
    }


def explain(exc: AgoraError, seat: Seat) -> str:
    # A renamed seat's key is read from its new id's file: NoKey names the file it looked in.
    key_file = exc.data.get("key_file") or str(seat.home.key_file(seat.agent))
    fix = _fixes(seat, key_file).get(exc.reason, "call again; if it persists, see the hub's log")
    limit = exc.data.get("limit")
    said = exc.message + (f" (limit {limit})" if limit is not None and str(limit) not in exc.message else "")
    return f"{exc.reason}: {said}. Fix: {fix}."
