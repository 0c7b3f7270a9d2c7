"""Guards for hot-path tricks that had none (docs/ARCHITECTURE.md "Hot-path tricks and their guards").

Each test holds a trick to the invariant that makes it safe, so a change that
breaks the invariant fails here rather than in production.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

from tests.wire import Raw

ROOT = Path(__file__).resolve().parent.parent
CONSUMERS = {"fetchone", "fetchall"}
READERS = {"one", "rows"}


def parents(tree: ast.AST) -> dict:
    found = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            found[child] = node
    return found


def read_at_once(call: ast.Call, parent: ast.AST) -> bool:
    """The step's rows are read before anything else runs: discarded, fetched, or iterated whole."""
    if isinstance(parent, ast.Expr):
        return True  # nothing is read, and nothing can be read later
    if isinstance(parent, ast.Attribute) and parent.attr in CONSUMERS:
        return True
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id in READERS:
        return True
    # A comprehension reads its iterable to the end, and its body cannot step meanwhile (checked below).
    return isinstance(parent, ast.comprehension) and parent.iter is call


def test_every_reused_cursor_is_read_at_once():
    """Database.step reuses one cursor: the next step resets it, so a statement's rows must be
    read before another statement runs (store/connection.py)."""
    wrong = []
    for path in sorted((ROOT / "agorad").rglob("*.py")):
        tree = ast.parse(path.read_text())
        up = parents(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("step", "step_many")):
                continue
            parent = up[node]
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            if not read_at_once(node, parent):
                wrong.append(f"{where}: the cursor is kept ({type(parent).__name__})")
            elif isinstance(parent, ast.comprehension):
                comprehension = up[parent]
                inner = [n for n in ast.walk(comprehension) if n is not node and isinstance(n, ast.Call)
                         and isinstance(n.func, ast.Attribute) and n.func.attr in ("step", "step_many")]
                if inner:
                    wrong.append(f"{where}: steps again while reading")
    assert wrong == []


def test_the_guard_sees_a_kept_cursor():
    kept = ast.parse("cur = db.step('SELECT 1')\nfor row in db.step('SELECT 2'):\n    pass\n")
    up = parents(kept)
    calls = [n for n in ast.walk(kept) if isinstance(n, ast.Call)]
    assert [read_at_once(c, up[c]) for c in calls] == [False, False]


def test_a_request_split_anywhere_gets_the_reply_it_gets_whole(hub):
    """A chunk that is exactly one frame skips the buffer (server.Connection.data_received); a frame
    split across chunks, or sharing one, goes through it. Both answer the same."""
    hub.call("kb.put", key="guard", value="same either way")

    def frame(request_id: int) -> bytes:
        return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "kb.get",
                           "params": {"key": "guard"}}).encode() + b"\n"

    with Raw(hub.home) as raw:
        raw.send(frame(1))  # one chunk, one newline at its end: the unbuffered path
        whole = raw.reply()
        second, third = frame(2), frame(3)
        raw.send(second + third[:7])  # a newline inside the chunk: the buffered path, for both frames
        raw.send(third[7:])
        split = [raw.reply(), raw.reply()]
    assert [r["id"] for r in split] == [2, 3]
    assert all(r["result"] == whole["result"] for r in split)
    assert whole["result"]["entry"]["value"] == "same either way"
