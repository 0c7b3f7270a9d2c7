"""A hub error as the text of an MCP tool error: the hub's reason word, what it said, and a one-line fix.

The reason word leads, so a model (or a test) can match it; the fix says what to
do next, in terms of this server's tools or the one command that helps. One
reason word covers several cases (a hub that is down, and one that did not
answer; a send cut off after it went out), so the fix is chosen by the case.
"""

from __future__ import annotations

import os
import re

from agorad.surface.errors import AgoraError
from agora_mcp.link import REPEATABLE, NoSeat, Seat

# The hub's messages name a request's fields; where the CLI spells one otherwise they add "(CLI: --flag)",
# which a model calling tools (whose arguments are the fields) is better without.
_CLI_NOTE = re.compile(r" \(CLI: [^)]*\)")

# What a request cut off after it went out may have done, and how to look before doing it again, per method
# that is not REPEATABLE (the tools' writes).
_IN_DOUBT = {
    "messages.send": ("the message may have been stored",
                      "before sending it again, see whether it was: read_message on a ref past the channel's end "
                      "(such as commons#999999999; a DM's channel is dm:ID--ID, the two ids sorted) names its "
                      "newest message, and an ask of yours shows in owed"),
    "claims.open": ("the claim may have been opened",
                    "before opening it again, see whether it was: claims with action list lists yours"),
    "claims.receipt": ("the receipt may have been written", "before writing it again, see whether it was: "
                                                            "claims with action show lists its newest receipts"),
    "claims.park": ("the claim may have been parked",
                    "see its state and version with claims action show before trying again"),
    "claims.done": ("the claim may have been marked done",
                    "see its state and version with claims action show before trying again"),
}


def _start(seat: Seat) -> str:
    """What brings a hub that is down back."""
    return (f"check that the hub at {seat.url} runs with `agora up --listen` and is reachable from here" if seat.url
            else f"start the hub with `agora up --home {seat.home.root}`")


def _fixes(seat: Seat, key_file: str, owner: str) -> dict[str, str]:
    """The fix for each reason word, and for each case of one that has its own ("REASON CASE")."""
    setup = f"agora setup {seat.agent}" + (f" --url {seat.url} --key-stdin" if seat.url else "")
    return {
        "unavailable": f"{_start(seat)}; this server reconnects by itself, so call the tool again once it answers",
        "no-key": f"put the seat's key in {key_file} or in AGORA_KEY in this server's "
                  f"environment (`{setup}` does it)",
        "unauthorized": f"the key does not match the seat {seat.agent}, or the seat was removed: run "
                        f"`{setup}` again",
        "unauthorized env-key": f"the key tried is $AGORA_KEY in this server's environment, which goes before "
                                f"{key_file}: set it to {seat.agent}'s key, or unset it (in the harness's MCP "
                                "entry) to use the key file",
        "invalid-params": "correct the field the message names and call again",
        "too-large": "shorten it below the limit and call again (a long text can go in several messages)",
        "not-found": "check the reference or target: check_inbox lists refs, get_agents lists seats",
        "not-found seat": (f"only the hub's operator adds seats, on the hub's host (`agora agent add {seat.agent}` "
                           f"prints its key); then run `{setup}` here with that key" if seat.url else
                           f"register it with `{setup}` (`agora agents` lists the seats there are), or start "
                           "this server with --as a seat that is registered"),
        "forbidden": "the hub's rules do not let this seat do it (the message says which): leave it to one they do",
        "forbidden channel.member": "the seat is not a member there: post to a channel it belongs to, or DM with @id",
        "forbidden claim.owner": (f"only {owner} may: tell them what you found (send_message in the claim's channel, "
                                  f"or @{owner}), or open a claim of your own with claims action open"),
        # A pause is the operator's, and lasts until it resumes: calling again is refused again, so the fix
        # says to leave it, and how the model learns of the resume (the announcement is addressed to it).
        "paused": "the operator paused the hub and calling again is refused until it resumes: leave this for "
                  "then (the resume is announced to this seat, and wait_for_messages wakes on it)",
        "conflict": "it changed meanwhile: look again (check_inbox; for a claim, claims with action show) and retry",
        "internal": "nothing was stored; call again in a moment",
        "method-not-found": "the hub is older than this server: restart it on the same agora version",
    }


def _unresponsive(seat: Seat) -> str:
    """A hub that holds its socket (or port) but did not answer in time: starting one would not help."""
    if seat.url:
        return f"the hub at {seat.url} is reachable but did not answer in time (busy, or stopped)"
    return (f"the hub holds its socket but did not answer in time (busy, stopped or hung: "
            f"`agora status --home {seat.home.root}` says)")


def _unavailable(exc: AgoraError, seat: Seat, fixes: dict[str, str]) -> tuple[str, str]:
    """(what may have happened, the fix) for a hub that is gone or did not answer."""
    written = exc.data.get("written")
    hung = bool(exc.data.get("unresponsive"))
    if written is not None and written not in REPEATABLE:  # the request went out: the hub may have done it
        outcome, look = _IN_DOUBT.get(written, (f"{written} may have been done", "look whether it was before "
                                                                                 "calling again"))
        state = _unresponsive(seat) if hung else f"if the hub is down, {_start(seat)}"
        return outcome, f"{look}; {state}, and this server reconnects by itself once it answers"
    if hung:
        return "", f"{_unresponsive(seat)}; call the tool again once it answers (this server reconnects by itself)"
    if not seat.url and f"`agora up --home {seat.home.root}`" in exc.message:  # it says how to start one already
        return "", "this server reconnects by itself, so call the tool again once the hub answers"
    return "", fixes["unavailable"]


def _case(exc: AgoraError) -> str:
    """The case of a reason word that has a fix of its own: "REASON CASE"."""
    if isinstance(exc, NoSeat):
        return f"{exc.reason} seat"
    if exc.reason == "unauthorized" and os.environ.get("AGORA_KEY"):  # keys.read_key: it goes before the file
        return f"{exc.reason} env-key"
    if exc.reason == "forbidden" and exc.data.get("rule"):  # the rule the hub applied (agora-rpc(7))
        return f"{exc.reason} {exc.data['rule']}"
    return exc.reason


def explain(exc: AgoraError, seat: Seat) -> str:
    # A renamed seat's key is read from its new id's file: NoKey names the file it looked in.
    key_file = exc.data.get("key_file") or str(seat.home.key_file(seat.agent))
    fixes = _fixes(seat, key_file, exc.data.get("owner") or "its owner")
    outcome = ""
    if exc.reason == "unavailable":
        outcome, fix = _unavailable(exc, seat, fixes)
    else:
        fix = fixes.get(_case(exc)) or fixes.get(exc.reason, "call again; if it persists, see the hub's log")
    limit = exc.data.get("limit")
    said = _CLI_NOTE.sub("", exc.message)
    said += f" (limit {limit})" if limit is not None and str(limit) not in said else ""
    return f"{exc.reason}: {said}{': ' + outcome if outcome else ''}. Fix: {fix}."
