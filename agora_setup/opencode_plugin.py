"""The opencode plugin `agora setup` writes to `.opencode/plugins/agora.js`.

opencode has no stop hook with a return contract; a plugin sees every bus event
and continues a session by prompting it (`client.session.promptAsync`). Facts
(opencode-ai 1.18.33, its bundled JavaScript and opencode.ai/docs/plugins): a
turn's end is a `session.idle` event, not awaited; a prompt sent to a busy
session joins its next model request; `experimental.chat.system.transform` sees
each session's requests (the start context goes there); `dispose` runs at shutdown.

Its three commands come from agorad.surface.wiring:
LISTEN, the single-shot listener held in the background while the session idles:
  exit 2 means "prompt the session with my stderr" (the digest), as a Claude
  asyncRewake hook reads it;
BACKSTOP, `agora hook stop --harness opencode`, at each turn's end: stdout
  `{"followup": R}` prompts the session with R; anything else says nothing (not
  "exit 2": click exits 2 on a usage error, which would then reach the model);
START, `agora hook start --harness opencode`, once per session: stdout
  `{"context": T}` puts T in that session's system prompt.
"""

from __future__ import annotations

import json

MARKER = "// agora: written by `agora setup`"  # in every version of the plugin

PLUGIN_SOURCE = """\
// agora: written by `agora setup` for seat %(agent)s; re-run setup to change it, `agora setup --remove` to remove it.
// Wakes this opencode's idle session when important mail lands, and checks the inbox at each turn's end.
import { spawn } from "node:child_process"

const LISTEN = %(listen)s
const BACKSTOP = %(backstop)s
const START = %(start)s

function run(argv, input, keep) {
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: ["pipe", "pipe", "pipe"] })
    if (keep) keep(child)
    let out = "", err = ""
    child.stdout.on("data", (chunk) => { out += chunk })
    child.stderr.on("data", (chunk) => { err += chunk })
    child.on("error", () => resolve({ code: 1, out: "", err: "" }))
    child.on("close", (code) => resolve({ code, out, err }))
    child.stdin.on("error", () => {})
    child.stdin.end(input)
  })
}

function field(stdout, name) {
  try {
    const answer = JSON.parse(stdout)
    return answer && typeof answer[name] === "string" && answer[name].trim() ? answer[name] : null
  } catch { return null }
}

export const AgoraSeat = async ({ client, directory }) => {
  const children = new Set()   // subagent sessions: never prompted
  let session = null           // the top-level session that idled last: the one a wake prompts
  let prompted = false         // this turn was our own re-prompt (stop_hook_active for the backstop)
  let listener = null
  const contexts = new Map()   // session -> its start context (a promise), asked once

  const prompt = async (id, text) => {
    prompted = true
    try {
      await client.session.promptAsync({ path: { id }, body: { parts: [{ type: "text", text }] } })
    } catch {
      prompted = false   // the session is gone: the mail waits for the next one's start context and backstop
    }
  }

  const arm = () => {
    if (listener) return
    const started = Date.now()
    run(LISTEN, "", (child) => { listener = child }).then(async ({ code, err }) => {
      listener = null
      if (code === 2 && session) await prompt(session, err)
      else if (code === 0 && Date.now() - started > 60000) setTimeout(arm, 5000)   // the wait ran out: re-arm
    })
  }

  return {
    event: async ({ event }) => {
      const props = event.properties || {}
      if ((event.type === "session.created" || event.type === "session.updated") && props.info?.parentID) {
        children.add(props.info.id)
        return
      }
      if (event.type !== "session.idle" || children.has(props.sessionID)) return
      session = props.sessionID
      const active = prompted
      prompted = false
      const input = JSON.stringify({ hook_event_name: "session.idle", session_id: session, cwd: directory,
                                     stop_hook_active: active })
      const reason = field((await run(BACKSTOP, input)).out, "followup")
      if (reason) return prompt(session, reason)
      arm()
    },
    "experimental.chat.system.transform": async (input, output) => {
      const id = input.sessionID
      if (!id || children.has(id)) return
      if (!contexts.has(id)) {
        const asked = JSON.stringify({ hook_event_name: "session.start", session_id: id, cwd: directory })
        contexts.set(id, run(START, asked).then(({ out }) => field(out, "context")))
      }
      const context = await contexts.get(id)
      if (context) output.system.push(context)
    },
    dispose: async () => { if (listener) listener.kill("SIGTERM") },
  }
}
"""


def source(agent: str, listen: list[str], backstop: list[str], start: list[str]) -> str:
    return PLUGIN_SOURCE % {"agent": agent, "listen": json.dumps(listen), "backstop": json.dumps(backstop),
                            "start": json.dumps(start)}
