"""The man pages in man/ stay in step with the code, and groff accepts them.

One page per top-level command (`man/agora-NAME.1`, group subcommands inside
the group's page), plus `agora.1` (the overview) and `agorad.1` (the daemon,
the same command as `agora up`); `agora-rpc.7` (every JSON-RPC method, held to
the dispatch table and to what a real hub answers) and `agora-files.5` (every
file under the home, held to the names the code spells and to what a real hub
and listener leave there).
"""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import click
import pytest

from agorad.cli import main
from agorad.domain import policy
from agorad.domain.policy import Actor
from agorad.runtime.handlers import Call
from agorad.runtime.methods import AGENT, METHODS, STEADY, WHILE_PAUSED
from agorad.runtime.notify import line_fields
from agorad.runtime.params import _MISSING, Params
from agorad.surface import errors, paths as home_paths
from agorad.surface.paths import Home
from agorad.surface.pidfiles import read_pidfile
from agorad.surface.protocol import encode
from agorad.surface.vocab import LIVENESS_MODES
from tests.listenproc import Listener
from tests.seats import seats, send

ROOT = Path(__file__).resolve().parent.parent
MAN = ROOT / "man"
PAGES = sorted(MAN.glob("*.1"))
ALL_PAGES = sorted(MAN.glob("*.[1-9]"))
SECTIONS = ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "EXAMPLES", "SEE ALSO")


def page_text(page: Path) -> str:
    """The page source with roff hyphen escapes and font changes undone, so options read as typed."""
    text = page.read_text(encoding="utf-8").replace("\\-", "-")
    return re.sub(r"\\f(?:[BIRP]|\[[A-Z]*\])", "", text)


def mentions(text: str, word: str) -> bool:
    """`word` occurs in `text` as a whole option or command name (not as a prefix of a longer one)."""
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None


def long_options(command: click.Command) -> list[str]:
    names = []
    for param in command.params:
        if isinstance(param, click.Option):
            names += [o for o in (*param.opts, *param.secondary_opts) if o.startswith("--") and o != "--help"]
    return names


def walk(command: click.Command, path: tuple[str, ...] = ()):
    """(path, command) for every command under `command`, groups included, depth first."""
    children = command.all_commands() if hasattr(command, "all_commands") else getattr(command, "commands", {})
    for name, sub in sorted(children.items()):
        yield (*path, name), sub
        yield from walk(sub, (*path, name))


TOP = sorted(main.all_commands())
LEAVES = [(path, cmd) for path, cmd in walk(main) if not isinstance(cmd, click.Group)]
assert len(LEAVES) > 20, "the walk found no commands: the checks below would prove nothing"
LEAF_OPTIONS = [(path, option) for path, cmd in LEAVES for option in long_options(cmd)]
SUBCOMMANDS = [path for path, _ in walk(main) if len(path) > 1]


def page_for(top: str) -> Path:
    return MAN / f"agora-{top}.1"


def test_pages_found():
    assert PAGES, f"no man pages in {MAN}"


@pytest.mark.parametrize("top", TOP)
def test_every_command_has_a_page(top):
    assert page_for(top).is_file(), f"`agora {top}` has no man page {page_for(top).name}"


@pytest.mark.parametrize("page", [p for p in PAGES if p.name.startswith("agora-")], ids=lambda p: p.name)
def test_every_page_names_a_command(page):
    top = page.name[len("agora-"):-len(".1")]
    assert top in main.all_commands(), f"{page.name} documents `agora {top}`, which does not exist"


@pytest.mark.parametrize(
    "path,option", LEAF_OPTIONS, ids=[f"{' '.join(path)} {option}" for path, option in LEAF_OPTIONS]
)
def test_every_option_is_documented(path, option):
    page = page_for(path[0])
    assert mentions(page_text(page), option), f"`agora {' '.join(path)} {option}` is missing from {page.name}"


@pytest.mark.parametrize("path", SUBCOMMANDS, ids=[" ".join(p) for p in SUBCOMMANDS])
def test_every_subcommand_is_documented(path):
    page = page_for(path[0])
    phrase = "agora " + " ".join(path)
    assert phrase in page_text(page), f"`{phrase}` is missing from {page.name}"


@pytest.mark.parametrize("top", TOP)
def test_overview_lists_every_command(top):
    assert mentions(page_text(MAN / "agora.1"), f"agora-{top}"), f"agora.1 does not refer to agora-{top}(1)"


@pytest.mark.parametrize("option", long_options(main))
def test_overview_documents_global_options(option):
    assert mentions(page_text(MAN / "agora.1"), option), f"agora.1 does not document `agora {option}`"


@pytest.mark.parametrize("option", long_options(main.all_commands()["up"]))
def test_agorad_page_lists_every_up_option(option):
    assert mentions(page_text(MAN / "agorad.1"), option), f"agorad.1 does not list {option} (agorad = agora up)"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_page_has_the_standard_sections(page):
    headings = re.findall(r'^\.SH\s+"?([^"\n]+?)"?\s*$', page.read_text(encoding="utf-8"), re.M)
    missing = [s for s in SECTIONS if s not in headings]
    assert not missing, f"{page.name} lacks the sections {missing}"


@pytest.mark.parametrize("page", [p for p in ALL_PAGES if p not in PAGES], ids=lambda p: p.name)
def test_other_sections_have_their_sections(page):
    headings = re.findall(r'^\.SH\s+"?([^"\n]+?)"?\s*$', page.read_text(encoding="utf-8"), re.M)
    missing = [s for s in ("NAME", "SYNOPSIS", "DESCRIPTION", "EXAMPLES", "SEE ALSO") if s not in headings]
    assert not missing, f"{page.name} lacks the sections {missing}"


@pytest.mark.parametrize("page", ALL_PAGES, ids=lambda p: p.name)
def test_references_to_agora_pages_resolve(page):
    refs = set(re.findall(r"(?<![\w-])(agora(?:d|-[a-z]+)?)\s*\(([1-9])\)", page_text(page)))
    dangling = sorted(f"{name}({section})" for name, section in refs if not (MAN / f"{name}.{section}").is_file())
    assert not dangling, f"{page.name} refers to pages that do not exist: {dangling}"


@pytest.mark.parametrize("page", [p for p in ALL_PAGES if p not in PAGES], ids=lambda p: p.name)
def test_overview_sees_every_page_beyond_the_commands(page):
    name, section = page.stem, page.suffix[1:]
    assert re.search(rf"(?<![\w-]){re.escape(name)}\s*\({section}\)", page_text(MAN / "agora.1")), \
        f"agora.1 does not refer to {name}({section})"


@pytest.mark.parametrize("page", ALL_PAGES, ids=lambda p: p.name)
def test_groff_accepts_page(page):
    if not shutil.which("groff"):
        pytest.skip("groff is not installed")
    done = subprocess.run(
        ["groff", "-man", "-ww", "-z", str(page)],
        capture_output=True, text=True, env={**os.environ, "LC_ALL": "C.UTF-8"},
    )
    assert done.returncode == 0 and not done.stderr, f"groff on {page.name}: exit {done.returncode}\n{done.stderr}"


def json_entry(page: Path) -> str:
    """The OPTIONS entry of `--json` on `page` (as page_text gives it): what the command's JSON holds."""
    match = re.search(r"^\.B --json\n(.*?)(?=^\.TP|^\.SH|\Z)", man_section(page, "OPTIONS"), re.M | re.S)
    assert match, f"{page.name} has no --json entry"
    return match.group(1)


# A page whose --json entry refers to another's for some fields (digest's debts are owed's): both entries.
JSON_ENTRIES = {"owed": ["owed"], "digest": ["digest", "owed"]}


@pytest.mark.parametrize("command", sorted(JSON_ENTRIES))
def test_every_field_of_the_json_a_real_hub_gives_is_in_the_json_entry(hub, cli, command):
    with seats(hub, "alice", "bob") as s:
        send(s["bob"], "@alice", "review?", ask=True)
    printed = json.loads(cli(command, "--as", "alice", "--json").stdout)
    entry = "".join(json_entry(page_for(name)) for name in JSON_ENTRIES[command])
    assert printed["i_owe"], "no debt: the fields of one would go unchecked"
    missing = sorted(name for name in set(printed) | nested_fields(printed) if not mentions(entry, name))
    assert not missing, f"agora-{command}.1 --json does not name {missing}"


# --- shared by the section 5 and 7 pages ----------------------------------------------------

def man_section(page: Path, heading: str) -> str:
    """The text of `page` (as page_text gives it) under `.SH heading`, up to the next `.SH`."""
    match = re.search(rf'^\.SH\s+"?{re.escape(heading)}"?\s*\n(.*?)(?=^\.SH\s|\Z)', page_text(page), re.M | re.S)
    assert match, f"{page.name} has no section {heading}"
    return match.group(1)


def subsections(text: str) -> dict[str, str]:
    """Each `.SS` heading in `text` -> the text under it."""
    parts = re.split(r'^\.SS\s+"?([^"\n]+?)"?\s*$', text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def tags(text: str) -> list[str]:
    """The tag line of every `.TP` entry in `text`."""
    return re.findall(r"^\.TP\n(.+)$", text, re.M)


def tag_names(text: str) -> set[str]:
    """The field names the `.TP` tags of `text` document: `.BR ref ", " seq` gives ref and seq;
    a parenthesised type after a name (`.BR agent " (string, optional)"`) is not one."""
    names = set()
    for tag in tags(text):
        tag = re.sub(r'"\s*\(.*', "", re.sub(r"^\.[A-Z]+\s*", "", tag))
        names.update(re.findall(r"[a-z][a-z_]*", tag))
    return names


# --- agora-rpc(7): every method of the dispatch table ----------------------------------------

RPC = MAN / "agora-rpc.7"
RPC_METHODS = subsections(man_section(RPC, "METHODS"))
KIND_WORDS = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object", list: "list"}
ERROR_CLASSES = sorted(
    {cls for cls in vars(errors).values() if isinstance(cls, type) and issubclass(cls, errors.AgoraError)},
    key=lambda cls: cls.__name__)
REASONS = {cls.reason for cls in ERROR_CLASSES}


def method_block(method: str, title: str) -> str:
    """The part of a method's section under `.B Params`, `.B Result` or `.B Errors`."""
    parts = re.split(r"^\.B\s+(Params|Result|Errors)\s*$", RPC_METHODS.get(method, ""), flags=re.M)
    return dict(zip(parts[1::2], parts[2::2])).get(title, "")


class _Declared(Exception):
    """Raised at `call.finish()`: by then a handler has read every parameter it accepts."""


class _DeclaringParams(Params):
    """Params that record each name a handler reads (with its kind and whether it is required)
    and hand back a value of that kind, so the handler goes on to its `call.finish()`."""

    def __init__(self):
        super().__init__({})
        self.declared: dict[str, tuple[object, bool]] = {}

    def get(self, name, kind=object, default=_MISSING):
        self.declared[name] = (kind, default is _MISSING)
        if default is not _MISSING:
            return default
        first = kind[0] if isinstance(kind, tuple) else kind
        return {str: "x", int: 1, float: 1.0, bool: False, list: [], dict: {}}[first]

    def done(self):
        raise _Declared


def declared_params(handler) -> dict[str, tuple[object, bool]]:
    """name -> (kind, required) for every parameter `handler` accepts: the names it reads before
    `call.finish()`, which refuses every other (handlers/__init__.py)."""
    params = _DeclaringParams()
    try:
        handler(Call(hub=None, actor=Actor(), params=params))
    except _Declared:
        return params.declared
    raise AssertionError(f"{handler.__qualname__} returned without calling call.finish()")


def kind_words(kind) -> set[str]:
    kinds = set(kind) if isinstance(kind, tuple) else {kind}
    if float in kinds:
        kinds.discard(int)  # "number" says an integer is welcome
    return {KIND_WORDS[k] for k in kinds}


def test_rpc_documents_exactly_the_dispatch_table():
    assert len(METHODS) > 20, "the dispatch table was not found: the checks below would prove nothing"
    missing, extra = sorted(set(METHODS) - set(RPC_METHODS)), sorted(set(RPC_METHODS) - set(METHODS))
    assert not missing and not extra, (
        f"agora-rpc.7 METHODS: undocumented methods {missing}; documented methods the hub does not have {extra}")


@pytest.mark.parametrize("method", sorted(METHODS))
def test_rpc_documents_every_param_a_handler_accepts(method):
    declared = declared_params(METHODS[method][0])
    if method in STEADY:  # the fast path must accept exactly what the batch path accepts
        assert declared_params(STEADY[method]) == declared, f"{method}: the steady handler accepts other params"
    block = method_block(method, "Params")
    assert block, f"agora-rpc.7 {method} has no Params block"
    documented = dict(re.findall(r'^\.TP\n\.BR?\s+(\S+)\s+"\s*\(([^)]*)\)"', block, re.M))
    assert sorted(documented) == sorted(declared), \
        f"{method}: documented params {sorted(documented)}, accepted {sorted(declared)}"
    for name, (kind, required) in declared.items():
        words = documented[name]
        presence = "required" if required else "optional"
        assert presence in words, f"{method} {name}: ({words}) should say {presence}"
        for word in kind_words(kind):
            assert word in words, f"{method} {name}: ({words}) should name its type, {word}"
    if not declared:
        assert "None." in block, f"{method} takes no params: its Params block should say None."


@pytest.mark.parametrize("method", sorted(METHODS))
def test_rpc_says_who_may_call_each_method(method):
    handler, access = METHODS[method]
    operator_only = [name for name, (modes, _) in policy.CAPABILITIES.items() if not modes]
    if access == AGENT:
        expected = "Caller: an agent only."
    elif any(f'"{capability}"' in inspect.getsource(handler) for capability in operator_only):
        expected = "Caller: the local operator only."
    else:
        expected = "Caller: the local operator or an agent."
    first = RPC_METHODS.get(method, "").strip().splitlines()[:1]
    assert first == [expected], f"agora-rpc.7 {method} should start with {expected!r}, not {first}"


@pytest.mark.parametrize("method", sorted(METHODS))
def test_rpc_lists_only_real_reasons_as_a_method_errors(method):
    named = {re.sub(r"^\.[A-Z]+\s*", "", tag).strip() for tag in tags(method_block(method, "Errors"))}
    assert named <= REASONS, f"{method} lists errors that are no reason word: {sorted(named - REASONS)}"


@pytest.mark.parametrize("cls", ERROR_CLASSES, ids=lambda cls: cls.__name__)
def test_rpc_documents_every_error_code_and_reason(cls):
    assert re.search(rf'^\.TP\n\.BR {cls.code} "\s*{re.escape(cls.reason)}"$', man_section(RPC, "ERRORS"), re.M), \
        f"agora-rpc.7 ERRORS lacks {cls.code} {cls.reason} ({cls.__name__})"


def forbidden_rules() -> list[str]:
    """Every `data.rule` a forbidden error can carry: policy capabilities some mode lacks, and rule= words."""
    rules = {name for name, (modes, _) in policy.CAPABILITIES.items() if set(modes) != set(LIVENESS_MODES)}
    for path in (ROOT / "agorad").rglob("*.py"):
        rules.update(re.findall(r'\brule="([\w.-]+)"', path.read_text(encoding="utf-8")))
    return sorted(rules)


@pytest.mark.parametrize("rule", forbidden_rules())
def test_rpc_documents_every_forbidden_rule(rule):
    assert re.search(rf"^\.TP\n\.B {re.escape(rule)}\s*$", man_section(RPC, "ERRORS"), re.M), \
        f"agora-rpc.7 ERRORS does not explain the rule {rule}"


def test_rpc_names_the_data_members_a_real_hub_sends_with_a_stale_version(hub):
    """What a method's Errors block says to read from data (data.X) is there in a real hub's error: the
    version conflicts of charters.set and phases.set, and charters.get's missing version, carry
    current_version, which the page once called data.current (a program reading that found nothing)."""
    from agorad.surface.errors import AgoraError

    with seats(hub, "a") as s:
        calls = {"charters.set": (hub.call, {"text": "rules", "version": 5}),
                 "charters.get": (hub.call, {"version": 9}),
                 "phases.set": (s["a"].call, {"channel": "commons", "track": "t", "stage": "open", "version": 5})}
        for method, (call, params) in calls.items():
            with pytest.raises(AgoraError) as refused:
                call(method, **params)
            named = set(re.findall(r"data\.(\w+)", method_block(method, "Errors")))
            assert named, f"{method}: its Errors block names no data member, so this test checks nothing"
            assert named <= set(refused.value.data), \
                f"{method}: the page names data.{sorted(named)}, the hub sent {sorted(refused.value.data)}"


def test_rpc_names_exactly_the_methods_a_paused_hub_lets_through():
    text = subsections(man_section(RPC, "DESCRIPTION"))["A paused hub"]
    named = set(re.findall(r"(?<![\w.-])([a-z]+\.[a-z_]+)(?![\w-])", text)) & set(METHODS)
    assert sorted(named) == sorted(WHILE_PAUSED), "agora-rpc.7 \"A paused hub\" and methods.WHILE_PAUSED differ"


DELIVERY = {"id": 1, "ts": 1.5, "agent": "b", "channel": "commons", "seq": 1, "sender": "a", "title": "t",
            "body": "x", "flags": "to-me", "owed": 0}


def test_rpc_documents_every_field_of_a_push():
    documented = tag_names(subsections(man_section(RPC, "DESCRIPTION"))["Push notifications"])
    assert sorted(set(line_fields(DELIVERY)) - documented) == []


# Objects keyed by data, not by field names; True: their values are objects with fields.
DATA_KEYED = {"meta": False, "by_status": False, "cursors": True}


def nested_fields(value, top: bool = True) -> set[str]:
    """The field names inside a result (not its own top-level ones), skipping objects keyed by data."""
    found = set()
    if isinstance(value, list):
        for item in value:
            found |= nested_fields(item, False)
    elif isinstance(value, dict):
        for key, item in value.items():
            if not top:
                found.add(key)
            if key not in DATA_KEYED:
                found |= nested_fields(item, False)
            elif DATA_KEYED[key]:
                for inner in item.values():
                    found |= nested_fields(inner, False)
    return found


def rpc_scenario(hub) -> tuple[dict[str, list[dict]], list[dict]]:
    """Call every method of the dispatch table on a real hub; return method -> results, and the pushes."""
    results: dict[str, list[dict]] = {}

    def call(client, method, **params):
        results.setdefault(method, []).append(client.call(method, **params))
        return results[method][-1]

    with hub.client() as op, hub.client() as alice, hub.client() as bob:
        call(op, "hub.hello")
        alice_key = call(op, "agents.add", agent="alice", liveness_mode="async", interval="10m",
                         meta={"team": "docs"})["key"]
        bob_key = call(op, "agents.add", agent="bob")["key"]
        call(op, "agents.add", agent="carol", permanent=True)
        call(alice, "hub.hello", agent="alice", key=alice_key)
        call(bob, "hub.hello", agent="bob", key=bob_key)
        call(alice, "agents.heartbeat", status="working", task="docs")
        call(alice, "agents.heartbeat", status="working", task="docs")  # steady: answered without a transaction
        call(alice, "agents.heartbeat", interval="20m")
        call(op, "agents.update", agent="carol", liveness_mode="async", interval="1h", meta={"team": "docs"})
        call(alice, "kb.put", key="profile/alice", value="{}")
        call(op, "kb.put", key="profile/dan", value='{"liveness_mode": "async"}')  # known only by its profile
        call(alice, "kb.get", key="profile/alice")
        call(alice, "kb.list", prefix="profile/", limit=10)
        call(bob, "inbox.subscribe")
        call(alice, "channels.create", channel="dev")
        call(op, "channels.create", channel="ops")
        call(bob, "channels.join", channel="dev")
        call(alice, "messages.send", target="dev", title="review?", body="@bob please", ask=True)
        call(alice, "messages.send", target="@bob", title="hi", to=["bob"], urgency="next_turn")
        call(bob, "inbox.check", limit=10)
        call(bob, "inbox.digest")
        call(bob, "owed.list")
        call(bob, "messages.read", ref="dev#1")
        call(bob, "messages.send", target="dev", title="done", reply_to="dev#1")
        call(alice, "messages.send", target="@bob", title="and you?", ask_each=True)
        call(bob, "messages.send", target="@alice", title="no", reply_to="dm:alice--bob#2", decline=True)
        call(alice, "owed.list")
        call(alice, "messages.read", ref="dm:alice--bob#3")
        call(bob, "inbox.ack", ref=["dev#1"])
        call(bob, "inbox.ack", upto="dm:alice--bob#1")
        call(bob, "inbox.ack", all=True)
        call(op, "charters.set", text="Reply within the hour.")
        call(op, "charters.set", channel="dev", text="Review before merge.", version=0)
        call(alice, "phases.set", channel="dev", track="release", stage="work")
        call(bob, "phases.set", channel="dev", track="release", stage="gate", version=1)
        call(bob, "inbox.check", limit=10)  # a charter unread and a phase open
        call(bob, "inbox.digest")
        call(bob, "charters.get")
        call(bob, "charters.get", channel="dev", version=1)
        call(bob, "phases.list", channel="dev")
        call(bob, "channels.list")
        call(bob, "channels.leave", channel="dev")
        call(alice, "claims.open", channel="dev", title="write the docs", cadence_minutes=30)
        call(alice, "claims.open", channel="dev", title="review", link="claim:1")
        call(alice, "claims.receipt", ref="claim:1", text="outline done")
        call(op, "claims.update", ref="claim:1", version=1, cadence_minutes=60)
        call(alice, "claims.park", ref="claim:2", version=1)
        call(op, "claims.done", ref="claim:2", version=2)
        call(alice, "claims.list", channel="dev", state="open", owner="alice", limit=10)
        call(alice, "claims.show", ref="claim:1")
        call(op, "steward.report", cadences=2)
        call(op, "agents.get", agent="alice")
        call(op, "agents.resolve", agent="alice")
        call(op, "agents.list", counts=True, include_expired=True)
        call(op, "hub.status")
        call(op, "hub.sweep")
        call(op, "hub.pause", reason="docs", operator_seats=["alice"])
        call(op, "hub.status")  # its `paused` object
        call(op, "hub.resume")
        call(op, "clock.advance", seconds=1)
        call(op, "agents.rename", old="carol", new="dave", reason="docs")
        call(op, "agents.get", agent="carol")  # through the alias: aliases and a redirect
        call(op, "agents.rekey", agent="carol")  # through the alias too
        call(op, "kb.delete", key="profile/dan")
        call(op, "agents.remove", agent="dave")
        return results, list(bob.notifications(timeout=0))


def test_rpc_documents_every_field_a_real_hub_answers(hub):
    results, pushes = rpc_scenario(hub)
    uncalled = sorted(set(METHODS) - set(results))
    assert not uncalled, f"rpc_scenario calls no {uncalled}: add a call, so that its result fields are checked"
    page = page_text(RPC)
    undocumented = set()
    for method, replies in results.items():
        documented = tag_names(method_block(method, "Result"))
        for reply in replies:
            undocumented |= {f"{method} result: {k}" for k in reply if k not in documented}
            undocumented |= {f"{method} result, inside: {k}" for k in nested_fields(reply) if not mentions(page, k)}
    assert not undocumented, f"agora-rpc.7 does not document {sorted(undocumented)}"
    assert pushes and all(p["method"] == "inbox.delivery" for p in pushes)
    assert set(pushes[0]["params"]) == set(line_fields(DELIVERY))


def json_examples() -> list[tuple[str, str]]:
    """(page, line) for every example line that is a whole frame or notify line (after a `->` or `<-` marker)."""
    found = []
    for page in ALL_PAGES:
        for block in re.findall(r"^\.EX\n(.*?)^\.EE", page_text(page), re.M | re.S):
            for line in block.splitlines():
                line = re.sub(r"^(->|<-)\s+", "", line)
                try:
                    value = json.loads(line)
                except ValueError:
                    continue
                if isinstance(value, dict) and ("jsonrpc" in value or "v" in value):
                    found.append((page.name, line))
    return found


def test_json_examples_are_found():
    assert len(json_examples()) >= 4, json_examples()


@pytest.mark.parametrize("page,line", json_examples())
def test_json_examples_are_what_the_hub_writes(page, line):
    """Key order, spacing and number forms as the hub's encoder writes them; a notify line's fields in order."""
    value = json.loads(line)
    assert encode(value).decode() == line + "\n", f"{page}: the hub would write this line differently"
    delivery = value.get("params", value) if value.get("method") == "inbox.delivery" else value
    if "v" in delivery:
        assert list(delivery) == list(line_fields(DELIVERY)), f"{page}: a notify line's fields come in another order"


# --- agora-files(5): every file under the home --------------------------------------------

FILES_PAGE = MAN / "agora-files.5"


def documented_files() -> set[str]:
    """The names the FILES entries of agora-files.5 give, relative to <home>."""
    entries = " ".join(tags(man_section(FILES_PAGE, "FILES")))
    return {name.rstrip("/") for name in re.findall(r'<home>/([^\s"]+)', entries)}


def names_the_code_spells() -> list[str]:
    """Every name under the home as agorad/surface/paths.py builds it (agent id shown as <id>,
    a hook's name as <hook>): Home's properties and one-id methods, and the seat's files."""
    root = Path("/the-home")
    home = Home(root)
    notify = home_paths.notify_file(root, "ID")
    found = {notify, home_paths.rotated(notify), home_paths.hook_stamp(root, "ID", "HOOK")}
    found |= {home_paths.listen_file(root, "ID", what) for what in home_paths.LISTEN_FILES}
    found |= {home_paths.drive_file(root, "ID", what) for what in home_paths.DRIVE_FILES}
    for name, member in vars(Home).items():
        if isinstance(member, property):
            value = getattr(home, name)
            found.update(value if isinstance(value, tuple) else [value])
        elif inspect.isfunction(member) and not name.startswith("_") and len(inspect.signature(member).parameters) == 2:
            found.add(member(home, "ID"))
    return sorted({str(p.relative_to(root)).replace("ID", "<id>").replace("HOOK", "<hook>")
                   for p in found if isinstance(p, Path) and p != root})  # Home.root: the home itself


def log_events() -> list[str]:
    """Every event name the hub's code passes to runtime.log.log."""
    found = set()
    for path in (ROOT / "agorad").rglob("*.py"):
        found.update(re.findall(r'\blog\("([a-z][a-z0-9-]*)"', path.read_text()))
    return sorted(found)


def test_log_events_are_found():
    assert {"ready", "notify-write-failed", "notify-file-lost", "sigusr2"} <= set(log_events())


@pytest.mark.parametrize("event", log_events())
def test_agora_up_names_every_event_the_hub_logs(event):
    assert event.replace("-", "\\-") in (MAN / "agora-up.1").read_text(), f"agora-up.1 does not name the log event {event}"


def test_files_page_finds_the_names():
    core = {"agora.db", "agorad.sock", "keys/<id>.key", "<id>-inbox.log", "listen-<id>.offset", "drive-<id>.pid"}
    assert core <= set(names_the_code_spells()), names_the_code_spells()


@pytest.mark.parametrize("name", names_the_code_spells())
def test_files_page_documents_every_name_the_code_spells(name):
    assert name in documented_files(), f"agora-files.5 FILES has no entry <home>/{name}"


def test_files_page_documents_every_field_of_a_notify_line():
    documented = tag_names(man_section(FILES_PAGE, "NOTIFY FILES"))
    assert sorted(set(line_fields(DELIVERY)) - documented) == []


def test_files_page_documents_every_file_a_hub_and_a_listener_make(hub):
    seen: set[str] = set()
    facts: set[str] = set()

    def look():
        for path in hub.home.rglob("*"):
            name = str(path.relative_to(hub.home))
            if not re.search(r"(^|/)\..+\.\d+\.tmp$", name):  # an atomic write in flight
                seen.add(re.sub(r"\b(yak|zed)\b", "<id>", name))
        for pidfile in hub.home.glob("*.pid"):
            found = read_pidfile(pidfile)
            facts.update(f"{key}=" for key in (found[1] if found else ()))

    yak_key = hub.add_agent("yak")
    hub.add_agent("zed")
    listener = Listener(hub, "--once", "--adaptive", "--as", "zed", "--debounce", "0",
                        "--lock", str(hub.home / "listen-zed.lock"))
    listener.wait_for("AGORA_LISTEN armed")
    look()  # the listener's lock and pidfile exist while it runs
    with hub.client("yak", yak_key) as yak:
        yak.call("messages.send", target="@zed", title="wake up", ask=True)
    status, lines, stderr = listener.finish()
    assert status == 2, (lines, stderr)
    look()  # and its state files once it woke
    assert {"listen-<id>.pid", "listen-<id>.offset", "listen-<id>.backoff", "listen-<id>.owedsig"} <= seen
    assert sorted(seen - documented_files()) == []
    assert {"version=", "socket=", "heartbeat=", "source=", "agent="} <= facts
    assert sorted(f for f in facts if f not in page_text(FILES_PAGE)) == []



# --- the repo is self-contained -------------------------------------------------------------

# Documents a clone of this repo does not have, and this workplace's own paths. docs/ARCHITECTURE.md is in the repo.
OUTSIDE = re.compile(r"DESIGN\.md|\.\./shared\b|\bshared docs\b|CONVENTIONS\.md|\bseed 00\d|(?<![~\w])/wor[k]/")


def test_no_file_points_to_a_document_outside_the_repo():
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout: which files belong to the repo is unknown")
    names = [name for name in listed.stdout.decode().split("\0") if name]
    assert len(names) > 50, names
    offenders = []
    for name in names:
        try:
            lines = (ROOT / name).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):  # binary, or removed from the work tree
            continue
        offenders += [f"{name}:{n}: {line.strip()[:100]}" for n, line in enumerate(lines, 1) if OUTSIDE.search(line)]
    assert not offenders, "point to the repo's own docs (man/, README.md, docs/ARCHITECTURE.md) instead:\n" + \
        "\n".join(offenders)
