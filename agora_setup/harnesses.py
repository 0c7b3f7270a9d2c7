"""Which files `agora setup` writes for each harness, and how it finds the harnesses a workspace uses.

The facts each wiring rests on were measured with the real CLIs (README "Harness
tests", tests/harness/): Claude Code runs an `asyncRewake` command hook in the
background and turns its exit 2 into a new turn with its stderr; Codex needs
matcher groups (a flat list registers nothing) and skips an `async` hook;
Cursor's stop hook returns `followup_message`; Gemini CLI's AfterAgent hook
re-prompts with `{"decision": "block"}`, has no background hook, and takes its
timeouts in milliseconds; opencode has plugins, not hooks (opencode_plugin.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agora_setup import opencode_plugin, rules
from agora_setup.targets import Composite, JsonEntry, JsonHooks, JsonListItems, MarkedBlock, OwnedFile, Target, TomlBlock
from agorad.surface import settings, wiring

BACKSTOP_TIMEOUT = 30  # seconds: a stop hook's whole run, generous for a loaded hub (it needs one round-trip)
SHARED_RULES = "AGENTS.md"  # read by Codex and opencode both: one block for the two


@dataclass(frozen=True)
class Seat:
    agent: str
    home: Path
    exe: str  # the absolute `agora`
    workspace: Path
    mcp: bool = True  # write MCP entries: `agora mcp` can run here (the optional `mcp` extra is installed)

    def at(self, relative: str) -> Path:
        return self.workspace / relative


def _command(argv: list[str]) -> str:
    return wiring.shell(argv)


def _start(seat: Seat, harness: str) -> list[str]:
    return wiring.session_start(seat.exe, harness, seat.agent, seat.home)


MCP_NAME = "agora"  # the server's name in every MCP config: an entry of this name is setup's own


def mcp_installed() -> bool:
    """Whether `agora mcp` can start here: an entry for a server that cannot start is ignored silently."""
    import importlib.util

    return importlib.util.find_spec("mcp") is not None


def _only_with_mcp(seat: Seat, targets: list) -> list:
    return targets if seat.mcp else []


def _mcp(seat: Seat) -> dict:
    """An MCP entry's command and args (the hub rides in --home: harnesses scrub AGORA_HOME)."""
    argv = wiring.mcp_server(seat.exe, seat.agent, seat.home)
    return {"command": argv[0], "args": argv[1:]}


def claude(seat: Seat) -> list[Target]:
    listen = {"type": "command", "command": _command(wiring.hook_listen(seat.exe, seat.agent, seat.home)),
              "asyncRewake": True, "timeout": settings.HOOK_TIMEOUT}
    backstop = {"type": "command", "command": _command(wiring.backstop(seat.exe, "claude", seat.agent, seat.home)),
                "timeout": BACKSTOP_TIMEOUT}
    settings_json = seat.at(".claude/settings.json")
    return [
        Composite(settings_json, parts=(
            # Never UserPromptSubmit: a listener armed at every prompt is a wake storm.
            JsonHooks(settings_json, events={"SessionStart": [listen], "Stop": [backstop, listen]}),
            # The project's .mcp.json server without the approval dialog, and its tools without a
            # permission prompt each (Claude honours both once the workspace is trusted).
            *_only_with_mcp(seat, [
                JsonListItems(settings_json, keys=("enabledMcpjsonServers",), items=(MCP_NAME,)),
                JsonListItems(settings_json, keys=("permissions", "allow"), items=(f"mcp__{MCP_NAME}",)),
            ]),
        )),
        *_only_with_mcp(seat, [JsonEntry(seat.at(".mcp.json"), keys=("mcpServers",), name=MCP_NAME,
                                         value={"type": "stdio", **_mcp(seat)})]),
        MarkedBlock(seat.at("CLAUDE.md"), body=rules.claude(seat.exe, seat.agent, seat.home)),
    ]


def codex(seat: Seat) -> list[Target]:
    def handler(argv):  # never `async = true`: Codex silently skips such a hook
        return {"type": "command", "command": _command(argv), "timeout": BACKSTOP_TIMEOUT}

    return [
        JsonHooks(seat.at(".codex/hooks.json"), events={
            "SessionStart": [handler(_start(seat, "codex"))],
            "Stop": [handler(wiring.backstop(seat.exe, "codex", seat.agent, seat.home))],
        }),
        # An unattended seat must never freeze on an approval dialog: approve agora's tools (Codex's
        # default_tools_approval_mode, codex-rs/config/src/mcp_types.rs). `required`: Codex 0.171 builds
        # a turn's first request only with the servers ready by then, silently leaving the rest out
        # (measured: half the first requests lacked agora's tools); a required server is waited for.
        *_only_with_mcp(seat, [TomlBlock(seat.at(".codex/config.toml"), data={"mcp_servers": {MCP_NAME: {
            **_mcp(seat), "default_tools_approval_mode": "approve", "required": True,
            "tool_timeout_sec": settings.MCP_TOOL_TIMEOUT}}})]),
        MarkedBlock(seat.at(SHARED_RULES), body=rules.codex(seat.exe, seat.agent, seat.home)),
    ]


def cursor(seat: Seat) -> list[Target]:
    backstop = {"command": _command(wiring.backstop(seat.exe, "cursor", seat.agent, seat.home)),
                "timeout": BACKSTOP_TIMEOUT}
    return [
        OwnedFile(seat.at(".cursor/rules/agora.mdc"), content=rules.cursor(seat.exe, seat.agent, seat.home),
                  marker=rules.CURSOR_MARKER),
        JsonHooks(seat.at(".cursor/hooks.json"), events={"stop": [backstop]}, grouped=False, top={"version": 1}),
        *_only_with_mcp(seat, [JsonEntry(seat.at(".cursor/mcp.json"), keys=("mcpServers",), name=MCP_NAME,
                                         value=_mcp(seat))]),
    ]


def gemini(seat: Seat) -> list[Target]:
    # Gemini fingerprints a hook by name and command and warns once when either changes: keep both stable.
    timeout_ms = BACKSTOP_TIMEOUT * 1000

    def handler(name: str, argv: list[str]) -> dict:
        return {"name": name, "type": "command", "command": _command(argv), "timeout": timeout_ms}

    settings_json = seat.at(".gemini/settings.json")
    return [
        Composite(settings_json, parts=(
            JsonHooks(settings_json, events={
                "SessionStart": [handler("agora-start", _start(seat, "gemini"))],
                "AfterAgent": [handler("agora-backstop", wiring.backstop(seat.exe, "gemini", seat.agent, seat.home))],
            }),
            # trust: the seat's own mailbox tools run without a confirmation each.
            *_only_with_mcp(seat, [JsonEntry(settings_json, keys=("mcpServers",), name=MCP_NAME,
                                             value={**_mcp(seat), "trust": True})]),
        )),
        # No background hook: a turn's end is raised, an idle session is not woken.
        MarkedBlock(seat.at("GEMINI.md"), body=rules.gemini(seat.exe, seat.agent, seat.home)),
    ]


def opencode(seat: Seat) -> list[Target]:
    plugin = opencode_plugin.source(seat.agent, wiring.hook_listen(seat.exe, seat.agent, seat.home),
                                    wiring.backstop(seat.exe, "opencode", seat.agent, seat.home),
                                    _start(seat, "opencode"))
    return [
        OwnedFile(seat.at(".opencode/plugins/agora.js"), content=plugin, marker=opencode_plugin.MARKER),
        MarkedBlock(seat.at(SHARED_RULES), body=rules.opencode(seat.exe, seat.agent, seat.home)),
    ]


# harness -> (its targets, the paths whose presence says a workspace uses it), in vocab.HARNESSES order
WIRING = {
    "claude": (claude, (".claude", "CLAUDE.md")),
    "cursor": (cursor, (".cursor", ".cursorrules")),
    "codex": (codex, (".codex",)),
    "gemini": (gemini, (".gemini", "GEMINI.md")),
    "opencode": (opencode, (".opencode", "opencode.json", "opencode.jsonc")),
}


def targets(names: list[str], seat: Seat) -> list[Target]:
    """Every file the named harnesses get, each path once (AGENTS.md's block speaks for all its readers)."""
    chosen: dict[Path, Target] = {}
    for name in names:
        for target in WIRING[name][0](seat):
            chosen.setdefault(target.path, target)
    shared = seat.at(SHARED_RULES)
    if shared in chosen:
        chosen[shared] = MarkedBlock(shared, body=rules.agents_md(names, seat.exe, seat.agent, seat.home))
    return list(chosen.values())


def detected(workspace: Path) -> list[str]:
    """The harnesses a workspace shows signs of using, in a stable order."""
    return [name for name, (_, signs) in WIRING.items() if any((workspace / sign).exists() for sign in signs)]


def supported() -> tuple[str, ...]:
    return tuple(WIRING)
