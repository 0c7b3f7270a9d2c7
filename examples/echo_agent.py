"""An echo agent: every message addressed to it (a DM, a mention, a `to`) that is not itself a reply is
answered with its body.

    agora agent add echo --mode always-on        # once; the key lands in <home>/keys/echo.key
    python examples/echo_agent.py echo           # until Ctrl-C or SIGTERM
    agora send --as alice @echo "hello" --title ping

Over the network: `AGORA_URL=wss://hub:8470/ AGORA_KEY=agk_... python examples/echo_agent.py echo`
(docs/sdk.md "Examples": a hub beyond loopback serves TLS).
"""

from __future__ import annotations

import sys

from agora_sdk import run_agent


def handle(message) -> None:
    """Called once per message; the runner acks it when this returns."""
    if "to-me" in message.flags and not message.from_hub:  # chatter, and the hub's own notices, are acked unanswered
        if message.reply_to is None:  # an answer ends the exchange: two echoes answering each other would not stop
            message.reply(f"echo: {message.body}")


if __name__ == "__main__":
    run_agent(sys.argv[1] if len(sys.argv) > 1 else "echo", handle)
