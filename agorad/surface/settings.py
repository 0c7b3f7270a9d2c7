"""Every default, in one place: the CLI's option defaults and the hub's own read these.

Durations are seconds. A user changes them with the options named beside each
(agora-up(1), agora-listen(1), agora-agent(1)); nothing else spells them.
"""

from __future__ import annotations

# --- the hub (agora up) --------------------------------------------------------------------
SWEEP_INTERVAL = 300.0           # --sweep-interval: how often dormant and expired transitions are written
EPHEMERAL_TTL = 3600.0           # --ephemeral-ttl: an ephemeral agent leaves the list after this silence
SYNCHRONOUS = "full"             # --synchronous: survives power loss; "normal" only a hub crash (agora-up(1))
NOTIFY_ROTATE_MB = 8.0           # --notify-rotate-mb: a notify file rotates to .1 above this; 0 never
MAX_BODY_KIB = 64                # --max-body-kib: the largest message body accepted
MAX_BODY_KIB_LIMIT = 128         # ... and its ceiling, so any body fits a 1 MiB frame
ESCALATION = (900.0, 3600.0, 14400.0)  # --escalate: an unanswered ask re-notifies at these offsets
LIVENESS_FLUSH = 1.0             # --liveness-flush: a restated heartbeat is written within this
DB_CACHE_MIB = 32                # the hub connection's page cache: a post dirties a page per member (ARCHITECTURE.md)
LOG_KEEP_MIB = 16                # `agora up --detach`: agorad.log rotates to agorad.log.1 past this (runtime/log_file.py)
WAL_KEEP_MIB = 64                # the WAL file left on disk after a checkpoint, at most: a read held long beside a busy
                                 # hub (agora check, agora backup) grows it, and SQLite keeps a grown WAL's size otherwise

# --- claims (agora claim) and the steward (agora steward) ----------------------------------
CADENCE_FLOOR_MINUTES = 30       # --cadence: the shortest check-in cadence a claim may declare ...
CADENCE_MAX_MINUTES = 525600     # ... and the longest (a year)
# A due cadence reminds its owner a fixed share of the cadence late, at most this fraction, derived
# from the claim's id: claims opened together (a fleet's) fall due spread out, never in one herd.
CADENCE_JITTER = 0.2
CLAIMS_LIMIT = 200               # claims.list: at most this many rows by default ...
CLAIMS_LIST_MAX = 1000           # ... and at most this many when asked for more
CLAIM_RECEIPTS_SHOWN = 20        # claims.show: the newest receipts it returns (the count says how many in all)
STEWARD_CADENCES = 2             # --cadences: a claim with no receipt for this many cadences is stale

# --- agents (agora agent add) --------------------------------------------------------------
AGENT_INTERVAL = 1800.0          # --interval: what an agent is expected to heartbeat within, unless the
                                 # operator or the agent says otherwise; an async one turns dormant after twice this

# --- reception (agora listen) --------------------------------------------------------------
DEBOUNCE = 15.0                  # --debounce: deliveries within this window ring as one wake
LISTEN_HEARTBEAT = 300.0         # --heartbeat: a persistent listener's heartbeat line and pidfile touch
ADAPTIVE_FIRST = 60.0            # --adaptive: the wait after a wake ...
ADAPTIVE_CAP = 1200.0            # ... doubling on each quiet run up to this (or --max-wait)

# --- wiring (agora setup) and the stop-hook backstop (agora hook stop) ----------------------
# A hook-armed listener must outlive an idle stretch: a --once that ends at its wait, or is killed
# at the hook's timeout, leaves an idle session deaf until its next turn. So the wait is long and
# the hook's timeout longer.
HOOK_MAX_WAIT = 82800.0          # 23 h: the --max-wait setup renders into a hook's listen command
HOOK_TIMEOUT = 86400             # the hook's own timeout, in whole seconds (longer than the wait)
# Measured: a listener rings 66-73 ms after a send with no debounce, and the default 15 s window puts
# 15 s on every wake. A hook-armed wake costs a whole model turn, so the window should catch a
# scripted burst (one `agora send` process after another, tens of ms apart) and no more: 1 s.
HOOK_DEBOUNCE = 1.0
# Cursor's background reception: one monitored shell looping single-shot listens.
LOOP_MAX_WAIT = 240.0            # each iteration's --max-wait
LOOP_SLEEP = 5                   # seconds between iterations: an instant re-arm storms on a burst
MONITOR_DEBOUNCE_MS = 15000      # the output monitor's own debounce, anchored on ^AGORA_WAKE
# The stop-hook backstop re-prompts while unread important mail waits, at most once per window,
# the window doubling from the first to the cap while the mail stays unread.
BACKSTOP_FIRST = 60.0
BACKSTOP_CAP = 3600.0
# A hook reads only what its stdin has ready within this: a harness that holds the pipe open without
# writing (or a terminal) must never hold a turn's end.
HOOK_STDIN_WAIT = 0.2
# A hook gives up on a hub that accepts but does not answer after this; it then exits 0 (never
# breaking the harness) and says so on stderr.
HOOK_HUB_TIMEOUT = 5.0
# The most headlines a backstop's reason quotes (the rest are counted): one screen for the model.
BACKSTOP_HEADLINES = 20
# Important mail that rang but was neither read nor acked rings again at a later arm, on the same
# doubling schedule, kept in listen-<id>.backoff.
RERING_FIRST = 300.0
RERING_CAP = 14400.0
# How many debts and unread headlines a listener asks the hub for at arm and after a wake
# (inbox.check's limit). Measured, hello + call on one connection: 0.3 ms with nothing unread at any
# limit; with 1000 unread posts 0.7 ms for owed.list (what the arm asked before), 9.1 ms at limit
# 1000, about 2 ms at 200. Debts past it ring as backlog once older ones are discharged, and
# headlines past it (channels sort by name, oldest first) re-ring once earlier ones are acked.
ARM_CHECK_LIMIT = 200

# --- the driver (agora drive) ------------------------------------------------------------
DRIVE_DEBOUNCE = 1.0             # --debounce: deliveries within this window buy one turn (as HOOK_DEBOUNCE)
DRIVE_TURN_LIMIT = 900.0         # --turn-limit: a turn's whole process tree is killed after this long
DRIVE_GRACE = 10.0               # SIGTERM to the turn's process group, then this long, then SIGKILL to
                                 # every descendant still there
# After the harness itself exits, how long a descendant that still holds its stdout is waited for:
# grandchildren holding the pipe once made a 3,600 s cap last 5,069 s in this field.
DRIVE_PIPE_GRACE = 2.0
DRIVE_BUDGET = 12                # --budget: reception turns per hour
DRIVE_CHUNK_BUDGET = 12          # --chunk-budget: claim work chunks per hour, a separate budget so reception
                                 # is never starved (0: the driver never works on claims by itself)
DRIVE_CHUNK_ARM = 20.0           # seconds armed between two chunks: mail that lands meanwhile preempts the next
DRIVE_CLAIMS_SEEN = 50           # open claims a driver's sweep lists (the oldest first: the next chunk's)
DRIVE_CHUNK_IDLE = 3             # chunks in a row without a receipt on one claim version park its chain
DRIVE_BACKOFF_FIRST = 60.0       # a turn that never reached the hub holds its wake this long ...
DRIVE_BACKOFF_CAP = 900.0        # ... doubling on each failure in a row up to this
DRIVE_ROTATE_TURNS = 20          # --rotate-after: a new harness session after this many turns
# While nothing obliges the seat, the driver still sweeps the hub this often without a ring: a seat
# renamed under it (its notify file moved), a wake the notify file never carried, and the DRIVER
# column's count of the hour's turns stay in view. One inbox.check per interval.
DRIVE_SWEEP = 300.0
DRIVE_TURN_LOG_BYTES = 8 << 20   # drive-<id>.turns.jsonl rotates to .1 above this
DRIVE_FAILURES_BYTES = 1 << 20   # drive-<id>.failures.jsonl rotates to .1 above this
DRIVE_STDERR_TAIL = 4096         # bytes of a turn's stderr kept for its failure record

# --- reading (agora inbox) -----------------------------------------------------------------
INBOX_LIMIT = 50                 # --limit: headlines one inbox check returns
INBOX_LIMIT_MAX = 1000           # ... and the most it may ask for
DECLINED_SHOWN = 20              # owed.list: the newest declines of the caller's asks it lists

# --- the MCP server (agora mcp) ------------------------------------------------------------
# wait_for_messages must answer before the harness gives up on the tool call, or the model sees a
# timeout error instead of "nothing yet". The limits found:
# - Codex: per-server `tool_timeout_sec`; its default DEFAULT_TOOL_TIMEOUT was 60 s in
#   codex-rs/core/src/mcp_connection_manager.rs, then 120 s, and is 300 s in
#   codex-rs/codex-mcp/src/rmcp_client.rs (openai/codex).
# - Claude Code: MCP_TOOL_TIMEOUT (ms) or a server's `timeout` in .mcp.json; unset, the CLI waits
#   about 27.8 h (100,000,000 ms), but its desktop app cancels a stdio call at 60 s
#   (anthropics/claude-code#63379), the MCP TypeScript SDK's DEFAULT_REQUEST_TIMEOUT_MSEC that
#   clients built on it inherit.
# So a wait ends at 50 s at most: under the shortest of them with 10 s to spare on a loaded machine.
MCP_WAIT_MAX = 50.0
MCP_WAIT_DEFAULT = 45.0
MCP_TOOL_TIMEOUT = 60            # the tool_timeout_sec `agora setup` writes for Codex: above the longest wait
# A wait names at most this many of the deliveries it hands out, and counts the rest: a seat that did not wait
# for a while, or a peer that floods it, made one answer of every delivery since the last wait (600 DMs: 88 KB,
# some 22k tokens, past Claude Code's 10k-token warning for a tool result). check_inbox lists the rest.
MCP_WAIT_SHOWN = 20
# While the hub is down, the server's waiting connection tries it again after the first delay, doubling
# to the cap while it keeps failing (a removed seat or a wrong key would otherwise knock twice a second
# all session); a tool call in between tries at once. The listener's own retry is 2 s.
MCP_RECONNECT_FIRST = 0.5
MCP_RECONNECT_CAP = 5.0

# --- the Python SDK (agora_sdk: AgentRunner, Inbox.drain) ----------------------------------
RUNNER_HEARTBEAT = 60.0          # AgentRunner(heartbeat=): a steady heartbeat while idle, declared in hub.hello
RUNNER_RECONNECT_FIRST = 0.2     # a runner that lost its hub tries again after this, jittered ...
RUNNER_RECONNECT_CAP = 10.0      # ... doubling while the hub stays away, up to this
# The loop guard: a handler that sends more than this many messages within the window is throttled
# (its next send waits for the window) and reported (status `error` with the reason): two runners
# answering each other, or a handler that answers its own replies, cannot flood the hub.
LOOP_GUARD_SENDS = 20
LOOP_GUARD_WINDOW = 60.0
DRAIN_LIMIT = 200                # Inbox.drain(): at most this many debts and headlines per call (inbox.check's limit)

# --- the remote port (agora up --listen) and its clients ----------------------------------------
LISTEN_HOST = "127.0.0.1"        # --listen PORT: loopback unless a host is named
REMOTE_IDLE = 300.0              # --listen-idle: an authenticated connection with no request and no
                                 # subscription for this long is closed (a subscriber is kept by pings)
REMOTE_TLS_TIMEOUT = 10.0        # a wss:// connection's TLS handshake must end within this (and its TLS shutdown)
REMOTE_HELLO_TIMEOUT = 10.0      # the first request (hub.hello) must come within this, or --listen-idle if shorter
REMOTE_PING = 20.0               # WebSocket keepalive: a ping this often; no pong within as long cuts the peer
REMOTE_SEND_QUEUE = 4 << 20      # bytes queued for a peer that does not read before it is cut off ...
REMOTE_SEND_HIGH = 1 << 20       # ... and above this, its further requests wait until it reads
REMOTE_PENDING_PER_PEER = 16     # connections from one address without a hub.hello yet, at most; and ...
REMOTE_PENDING = 256             # ... from all addresses: more are closed at once (1013, try again later)
AUTH_FAILURES = 5                # failed hub.hello per peer address within ...
AUTH_WINDOW = 60.0               # ... this many seconds; beyond that its hellos are refused, unchecked, until the window passes
REMOTE_RECONNECT_FIRST = 0.2     # a ws listener or watcher reconnects after this, doubling with jitter ...
REMOTE_RECONNECT_CAP = 30.0      # ... up to this
REMOTE_CONNECT_TIMEOUT = 10.0    # opening a ws connection (TCP, TLS and the WebSocket handshake)
REMOTE_SINCE_MARGIN = 30.0       # a ws listener's first arm with no hub: it rings what the hub stored from this
                                 # long before it started (the seat's and the hub's clocks may differ a little)
