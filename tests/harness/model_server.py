"""A scripted model: an HTTP server on 127.0.0.1 that a real harness CLI takes for its model API.

Tests drive a real Claude Code or Codex against it with no network. The
script is protocol-neutral: `replies` holds dicts consumed one per model
request, `{"text": "..."}` (end the turn with this text) or
`{"shell": "<command line>"}` (call the harness's shell tool; its result
arrives in the next request) or `{"tool": "<name>", "input": {...}}` (call
the offered tool named <name>, or ending in `__<name>` as MCP tools do:
Claude's `mcp__agora__check_inbox`, a tool `check_inbox` in Codex's namespace
`mcp__agora`; its result arrives in the next request) or
`{"status": 429, "body": {...}}` (answer the request with that HTTP status and
JSON body instead of a reply, as a provider does when it is rate-limited,
overloaded or refuses a prompt; without `body`, a generic error object). A
wanted tool the request does not offer is answered with text naming what it
offers, so a test's assertion on the next request shows it. An empty script
answers `{"text": "done"}`.
Each wire protocol is a module in tests/harness/protocols/ exposing
`matches(method, path)`, `user_text(body)`, `respond(reply, body)` and,
optionally, `is_side_request(body)` (a request the harness makes for itself,
such as a title, answered without consuming the script).

Every model request is recorded in `seen` with its monotonic arrival time, so
tests measure latency from an event they stamped (a send) to the harness's
next request, and wait for requests by predicate with a deadline.
"""

from __future__ import annotations

import collections
import importlib
import json
import pkgutil
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

from tests.harness import protocols


def _adapters() -> dict:
    """Every module of tests/harness/protocols/ that is a protocol (has `matches`): adding one is adding a file."""
    found = {}
    for info in pkgutil.iter_modules(protocols.__path__):
        module = importlib.import_module(f"{protocols.__name__}.{info.name}")
        if hasattr(module, "matches"):
            found[info.name] = module
    return found


PROTOCOLS = _adapters()
DEFAULT_REPLY = {"text": "done"}


@dataclass
class Seen:
    at: float           # time.monotonic() when the request's body was read
    protocol: str
    path: str
    body: dict
    user_text: str      # the newest user-side text: prompt, tool results, hook-injected messages
    side: bool = False  # a side request (title, quota): answered without consuming the script


class ScriptedModel:
    """`with ScriptedModel() as model:` serves until the block ends; point a harness at `model.url`."""

    def __init__(self, replies: list[dict] | None = None):
        self.replies: collections.deque = collections.deque(replies or [])
        self.seen: list[Seen] = []
        self.errors: list[str] = []   # requests no protocol claimed: a harness speaking something unknown
        self._changed = threading.Condition()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "ScriptedModel":
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="scripted-model", daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    # --- what tests call ---------------------------------------------------------------------

    def script(self, *replies: dict) -> None:
        with self._changed:
            self.replies.extend(replies)

    def wait_for(self, predicate: Callable[[Seen], bool], timeout: float, after: int = 0,
                 what: str = "a model request") -> Seen:
        """The first request (from index `after` of `seen`) matching `predicate`, waited for until `timeout`."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for seen in self.seen[after:]:
                    if predicate(seen):
                        return seen
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no {what} within {timeout}s; {len(self.seen)} requests so far, the "
                                         f"last user texts: {[s.user_text[-200:] for s in self.seen[-3:]]}; "
                                         f"unclaimed: {self.errors[-3:]}")
                self._changed.wait(left)

    def main_requests(self) -> list[Seen]:
        with self._changed:
            return [s for s in self.seen if not s.side]

    # --- what the handler calls --------------------------------------------------------------

    def _record(self, seen: Seen) -> dict:
        with self._changed:
            self.seen.append(seen)
            reply = DEFAULT_REPLY if seen.side or not self.replies else self.replies.popleft()
            self._changed.notify_all()
            return reply

    def _unclaimed(self, what: str) -> None:
        with self._changed:
            self.errors.append(what)
            self._changed.notify_all()


def _failure(reply: dict):
    """An HTTP error answer, protocol-neutral: the test gives the body its harness's provider would send."""
    status = int(reply["status"])
    body = reply.get("body") or {"error": {"type": "scripted_error", "message": f"scripted HTTP {status}"}}
    payload = json.dumps(body).encode()
    return status, {"Content-Type": "application/json", "Content-Length": str(len(payload))}, [payload]


def _handler(model: ScriptedModel):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # the test's output is for assertions, not access logs
            pass

        def do_HEAD(self) -> None:
            # Claude Code probes `HEAD /` for reachability before its first request.
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            self._unclaimed_reply()

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            protocol = next((name for name, p in PROTOCOLS.items() if p.matches(self.command, self.path)), None)
            if protocol is None:
                self._unclaimed_reply()
                return
            at = time.monotonic()
            body = json.loads(raw or b"{}")
            adapter = PROTOCOLS[protocol]
            side = getattr(adapter, "is_side_request", lambda body: False)(body)
            seen = Seen(at, protocol, self.path, body, adapter.user_text(body), side)
            reply = model._record(seen)
            status, headers, chunks = _failure(reply) if "status" in reply else adapter.respond(reply, body)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            # Streamed without a length: the connection closes when the reply ends.
            self.send_header("Connection", "close")
            self.end_headers()
            for chunk in chunks:
                self.wfile.write(chunk)
                self.wfile.flush()
            self.close_connection = True

        def _unclaimed_reply(self) -> None:
            model._unclaimed(f"{self.command} {self.path}")
            payload = json.dumps({"error": f"the scripted model does not serve {self.command} {self.path}"}).encode()
            self.send_response(404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler
