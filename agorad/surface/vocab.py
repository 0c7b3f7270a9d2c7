"""Every word of the project's vocabularies, defined once: the hub validates against these,
the CLI offers them as choices, reception rings by them, and the docs list them.

Error reason words are the one exception: each belongs to its error class in
agorad.surface.errors, next to its code and message.
"""

from __future__ import annotations

# An agent's liveness mode (agora-agent(1)); unset is ephemeral, legacy `permanent: true` is always-on.
LIVENESS_MODES = ("ephemeral", "async", "always-on")
DEFAULT_MODE = "ephemeral"

# An agent's status: what it reports, and `dormant`, which only the hub says.
REPORTED_STATUSES = ("idle", "busy", "error", "working")
STATUSES = REPORTED_STATUSES + ("dormant",)
# The statuses a heartbeat's task may go with: what the agent works on, or what went wrong (the SDK's
# AgentRunner reports a failed handler or a tripped loop guard as `error` with its reason).
TASK_STATUSES = ("working", "error")

# Where an agent's expected interval came from (agora-agent(1)), and the word that drops the operator's.
INTERVAL_SOURCES = ("operator", "agent", "default")
INTERVAL_UNSET = "unset"

# KB keys under this prefix are identities: `profile/<id>` (agora-kb(1)); only <id> may write its own.
PROFILE_PREFIX = "profile/"

# A message's urgency (agora-send(1)).
NEXT_TURN = "next_turn"  # delivered and listed, but rings no doorbell: it waits for the next inbox check
DM_PREFIX = "dm:"  # a DM's channel name begins so (dm:<a>--<b>)
URGENCIES = ("normal", NEXT_TURN)
DEFAULT_URGENCY = "normal"

# How an ask with several addressees is discharged (agora-send(1)), stored with each of its debts:
# `any`, the first reply from any addressee discharges it for all (--ask); `each`, every addressee
# owes its own reply (--ask-each). A decline (--decline) always settles only the decliner's debt.
ASK_ANY, ASK_EACH = "any", "each"
ASK_RULES = (ASK_ANY, ASK_EACH)

# A phase's stage (agora-phase(1)): where a `phase:<track>` row of a channel stands. Every stage but
# the last is open, and open phases lead a seat's inbox check right after its owed block.
PHASE_STAGES = ("propose", "open", "work", "gate", "complete")
PHASE_CLOSED = "complete"

# A delivery's flags, in the order a notify line shows them: addressed to the seat, a DM, an
# open ask, escalated, a claim's cadence reminder (agora-claim(1)), and sent with urgency
# next_turn (which never rings).
NEXT_TURN_FLAG = "next-turn"
REMINDER_FLAG = "reminder"
OPEN_FLAG = "open"            # an ask this agent owes a reply to
ESCALATED_FLAG = "escalated"  # a delivery that re-notifies an unanswered ask, not a new message
FLAGS = ("to-me", "dm", OPEN_FLAG, ESCALATED_FLAG, REMINDER_FLAG, NEXT_TURN_FLAG)
# The flags a wake line can carry, and what `agora listen --important-only` rings for.
WAKE_FLAGS = ("to-me", "dm", OPEN_FLAG, ESCALATED_FLAG, REMINDER_FLAG)
IMPORTANT_FLAGS = frozenset(WAKE_FLAGS)

# The sender of what the hub itself posts (a claim's cadence reminder, the pause and resume
# announcements): stored with no sender agent (sender_pk NULL), and an id no agent may be
# registered or renamed to.
HUB_SENDER = "agora-hub"
# What the local operator's writes carry as their author (a KB entry's `author`, a channel's `created_by`,
# a phase's `set_by`): another id no agent may take, so an agent cannot pass for the operator.
OPERATOR_NAME = "operator"

# A claim's state (agora-claim(1)): worked on, set aside, finished. Only an open claim's cadence rings.
CLAIM_OPEN, CLAIM_PARKED, CLAIM_DONE = "open", "parked", "done"
CLAIM_STATES = (CLAIM_OPEN, CLAIM_PARKED, CLAIM_DONE)
# The word that removes a claim's cadence or link in claims.update (`--cadence none` on the CLI).
CLAIM_UNSET = "none"
# Why the steward lists an open claim (agora-steward(1)): its owner is dormant, or expired (an
# ephemeral seat past its TTL), or it has had no receipt for the report's number of cadences.
STEWARD_REASONS = ("owner-dormant", "owner-expired", "no-receipt")

# Why `agora listen` ended: the `ended reason=` word of its tombstone (agora-listen(1)).
ENDED_REASONS = (
    "wake", "max-wait", "signal", "already-armed", "driver-owns-reception", "foreground",  # exit 0 or 2
    "harness-gone",                                                         # exit 0
    "no-notify-file", "error",                                              # exit 1
)
# Where `agora listen` reads deliveries from, and how it watches a notify file (agora-listen(1)).
LISTEN_SOURCES = ("auto", "file", "ws")
WATCHERS = ("auto", "inotify", "watchdog", "poll")

# The harnesses `agora setup` wires and `agora hook` speaks for (agora-setup(1), agora-hook(1)).
HARNESSES = ("claude", "cursor", "codex", "gemini", "opencode")
# The hooks `agora hook` runs; each stamps hook-<id>.<hook>.stamp when it fires (agora-files(5)):
# the turn-end backstop, and the session-start context.
HOOKS = ("stop", "start")

# SQLite's synchronous level for the hub's database (agora-up(1)).
SYNCHRONOUS_LEVELS = ("normal", "full")

# The harnesses `agora drive` runs turns in (agora-drive(1)): `command` is the user's own program.
DRIVE_HARNESSES = ("claude", "codex", "cursor", "command")
# A driver's state, on its `AGORA_DRIVE state=` line and in `agora status` (agora-drive(1)).
DRIVE_STATES = ("armed", "turn", "chunk", "backoff", "held", "quarantined", "stopped")
# How a driven turn ended (`AGORA_DRIVE event=turn_end status=`): answered what woke it, failed before
# reaching the hub (the wake is held and retried), left the debt (the wake is quarantined), or was
# stopped with the driver.
TURN_STATUSES = ("ok", "failed", "debt-left", "stopped")
# How a driven turn's prompt begins; the rule block every harness reads (agora setup) says what it means.
DRIVEN_TURN_MARK = "[agora drive]"
# Set in the environment of every process of a driven turn (its token, agora_drive/tree.py). The CLI there
# acts as the turn's seat ($AGORA_AGENT_ID), never as a hub's operator (agora-drive(1) SECURITY).
TURN_ENV = "AGORA_DRIVE_TURN"

# The remote port's URL schemes (agora-rpc(7) "Remote"): plain, and TLS.
URL_SCHEMES = ("ws", "wss")
URL_ENV = "AGORA_URL"  # the hub's remote port, for a seat on another host (agora(1) ENVIRONMENT)
