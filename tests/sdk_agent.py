"""A runner in a process of its own, for tests that kill or signal it.

    python -m tests.sdk_agent AGENT MODE RECORD [GATE]

Each message's ref is appended to RECORD as `started REF` when the handler begins and `done REF`
when it returns. MODE `hang`: the handler then waits on the GATE fifo (until a test writes to it,
or kills the process); `reply`: it answers the message. Runs until SIGTERM or SIGINT.
"""

from __future__ import annotations

import sys

from agora_sdk import run_agent


def main(agent: str, mode: str, record: str, gate: str | None = None) -> None:
    def note(line: str) -> None:
        with open(record, "a") as file:
            file.write(line + "\n")

    def handle(message) -> None:
        note(f"started {message.ref}")
        if mode == "hang":
            with open(gate) as fifo:  # blocks until the test opens it for writing
                fifo.read()
        else:
            message.reply(f"handled {message.title}")
        note(f"done {message.ref}")

    run_agent(agent, handle)


if __name__ == "__main__":
    main(*sys.argv[1:])
