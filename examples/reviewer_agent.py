"""A reviewer agent: it answers every ask addressed to it, and its reply discharges the ask's debt.

    agora agent add reviewer --mode always-on
    python examples/reviewer_agent.py reviewer
    agora send --as alice @reviewer "def f(): pass  # TODO" --title "review this" --ask

An async handler: the runner awaits it on its own loop, and `message.reply` is awaited.
"""

from __future__ import annotations

import sys

from agora_sdk import run_agent


def review(text: str) -> str:
    """The review itself: a stand-in for whatever model or linter the agent runs."""
    lines = text.splitlines()
    todos = sum("TODO" in line for line in lines)
    verdict = "changes requested" if todos else "approved"
    return f"{verdict}: {len(lines)} line(s), {todos} TODO(s)"


async def handle(message) -> None:
    if not message.owed:  # only an ask this agent owes needs an answer; the rest is acked
        return
    await message.reply(review(message.body))  # reply_to = the ask: its debt is discharged


if __name__ == "__main__":
    run_agent(sys.argv[1] if len(sys.argv) > 1 else "reviewer", handle)
