"""How setup edits one file: our part is found and replaced, everything else is kept.

Each target turns a file's current text (None: no file) into its text with our
part written (`wire`) or taken out (`unwire`; None: delete the file), and says
whether our part is there and current (`state`). A text it cannot parse is
refused with a SetupError before anything is written: setup never overwrites a
corrupt file the user will want to fix by hand.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

WIRED, STALE, MISSING = "wired", "stale", "missing"
# The agora subcommands a harness config runs, and the options every command setup writes carries
# (wiring.seat_args): a handler running one of them with both, under an event setup uses, is setup's own.
OUR_SUBCOMMANDS = ("listen", "hook", "mcp")
SEAT_OPTIONS = ("--home", "--as")


class SetupError(Exception):
    """Setup cannot go on; the message says which file and what to do. Nothing has been written."""


def is_ours(handler) -> bool:
    """Whether a hook handler is in the form setup writes: `agora listen|hook|mcp` naming --home and --as (any
    path to agora, any home and seat: a re-run replaces the wiring of an earlier seat, or of agora before it
    moved). A user's own agora command without them (relying on the record, or $AGORA_HOME) is theirs."""
    command = handler.get("command") if isinstance(handler, dict) else None
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return (len(words) > 1 and os.path.basename(words[0]) == "agora" and words[1] in OUR_SUBCOMMANDS
            and all(option in words for option in SEAT_OPTIONS))


@dataclass
class Target:
    path: Path  # absolute

    def wire(self, text: str | None) -> str | None:
        raise NotImplementedError

    def unwire(self, text: str | None) -> str | None:
        raise NotImplementedError

    def has_ours(self, text: str | None) -> bool:
        raise NotImplementedError

    def state(self, text: str | None) -> str:
        if not self.has_ours(text):
            return MISSING
        return WIRED if in_line_ends_of(text, self.wire) == text else STALE


@dataclass
class OwnedFile(Target):
    """A file that is all ours (a rule file): written whole, deleted on removal.

    `marker` is text every version of ours contains: a file at the path without it
    is the user's, and setup refuses to replace it.
    """

    content: str = ""
    marker: str = ""

    def wire(self, text):
        if text is not None and not self.has_ours(text):
            raise SetupError(f"{self.path} exists and was not written by agora setup; move it away and run setup again")
        return self.content

    def unwire(self, text):
        return None if self.has_ours(text) else text

    def has_ours(self, text):
        return text is not None and self.marker in text


@dataclass
class SeatDirIgnore(OwnedFile):
    """`.agora/.gitignore`: keeps the seat directory out of version control. A user's own file there is
    neither refused nor replaced (it is theirs to keep as they like), only left alone."""

    def wire(self, text):
        return text if text is not None and not self.has_ours(text) else self.content


BEGIN = "<!-- agora:begin (written by `agora setup`; re-run it to change this block, `agora setup --remove` to take it out) -->"
END = "<!-- agora:end -->"


@dataclass
class MarkedBlock(Target):
    """A block between markers at the top of a Markdown file (CLAUDE.md, AGENTS.md, GEMINI.md)."""

    body: str = ""

    @property
    def block(self) -> str:
        return f"{BEGIN}\n{self.body.rstrip()}\n{END}\n"

    def _split(self, text: str) -> tuple[str, str] | None:
        """(before, after) our block, or None when there is none; refuses half a block."""
        start, end = text.find(BEGIN), text.find(END)
        if start < 0 and end < 0:
            return None
        if start < 0 or end < start or text.count(BEGIN) > 1 or text.count(END) > 1:
            raise SetupError(f"{self.path}: the agora markers are broken (one is missing, repeated or out of "
                             "order); remove the agora block by hand and run setup again")
        after = text[end + len(END):]
        for _ in range(2):  # the block's own line end, and the blank line setup put after it
            after = after[2:] if after.startswith("\r\n") else after[1:] if after.startswith("\n") else after
        return text[:start], after

    def wire(self, text):
        rest = self.unwire(text) or ""
        return self.block + ("\n" + rest if rest else "")

    def unwire(self, text):
        if text is None:
            return None
        parts = self._split(text)
        if parts is None:
            return text
        remaining = parts[0] + parts[1]
        return remaining or None

    def has_ours(self, text):
        return text is not None and self._split(text) is not None


@dataclass
class JsonHooks(Target):
    """Hook handlers in a JSON config, merged beside the user's own.

    `grouped`: events hold matcher groups `{"hooks": [handler, ...]}` (Claude Code, Codex,
    Gemini CLI; a flat list registers nothing in Codex, silently); otherwise events hold
    handlers directly (Cursor). `top` holds keys the file needs besides hooks (Cursor's
    `version`), written only when missing.
    """

    events: dict = field(default_factory=dict)  # event -> [handler, ...]
    grouped: bool = True
    top: dict = field(default_factory=dict)
    hooks_key: str = "hooks"

    def load(self, text: str | None) -> dict:
        """The file's object. Only the events setup writes must hold lists: a key of another kind beside them
        (Gemini CLI's `"enabled": true`) is the harness's, and stays as it is."""
        data = _load_object(self.path, text)
        hooks = data.get(self.hooks_key, {})
        if not isinstance(hooks, dict) or not all(isinstance(hooks[e], list) for e in self.events if e in hooks):
            raise SetupError(f"{self.path}: `{self.hooks_key}` is not an object whose events hold lists; fix it by "
                             "hand, setup will not overwrite it")
        return data

    def _ours(self, hooks: dict) -> list:
        """The (event, entries) where setup's handlers can be: only the events it writes. An agora command
        the user hooked to another event (PreToolUse) is theirs."""
        return [(event, entries) for event, entries in hooks.items() if event in self.events]

    def _without_ours(self, data: dict, prune: bool = True) -> dict:
        """`data` without our handlers; `prune` drops what that empties (a re-wire keeps it in place,
        so the keys keep their order and a re-run writes the same bytes)."""
        hooks = data.get(self.hooks_key)
        if hooks is None:
            return data
        for event, entries in self._ours(hooks):
            hooks[event] = [kept for kept in (self._strip(entry) for entry in entries) if kept is not None]
            if prune and entries and not hooks[event]:
                del hooks[event]
        if prune and not hooks:
            del data[self.hooks_key]
        return data

    def _strip(self, entry):
        """The entry without our handlers; None when it held only ours."""
        if not self.grouped:
            return None if is_ours(entry) else entry
        if not (isinstance(entry, dict) and isinstance(entry.get("hooks"), list)):
            return entry
        kept = [handler for handler in entry["hooks"] if not is_ours(handler)]
        if entry["hooks"] and not kept:
            return None
        return {**entry, "hooks": kept}

    def wire(self, text):
        data = self._without_ours(self.load(text), prune=False)
        for key, value in self.top.items():
            data.setdefault(key, value)
        hooks = data.setdefault(self.hooks_key, {})
        for event, handlers in self.events.items():
            hooks.setdefault(event, []).extend([{"hooks": handlers}] if self.grouped else handlers)
        return dump(data)

    def unwire(self, text):
        if text is None:
            return None
        data = self._without_ours(self.load(text))
        for key, value in self.top.items():
            if data.get(key) == value and len(data) == 1:
                del data[key]  # a file that held only our hooks and the key they needed
        return dump(data) if data else None

    def has_ours(self, text):
        data = self.load(text)
        return any(self._strip(entry) != entry for _, entries in self._ours(data.get(self.hooks_key, {}))
                   for entry in entries)


def in_line_ends_of(before: str | None, compute) -> str | None:
    """`compute(text)` for a file that holds `before`, with `before`'s line ends. A file whose every line ends in
    \r\n, with no other \r, is given to `compute` with \n and its result turned back; any other is given as it
    is (targets write \n: a CRLF settings.json came back LF, a CLAUDE.md half and half). Only a \n not after a
    \r is turned, so a saved copy of the user's file, which has its own, comes back as it was."""
    crlf = before is not None and before.count("\r") == before.count("\r\n") == before.count("\n") > 0
    after = compute(lf(before) if crlf else before)
    return re.sub(r"(?<!\r)\n", "\r\n", after) if crlf and after is not None else after


def lf(text: str) -> str:
    """`text` with each CRLF line end as LF."""
    return text.replace("\r\n", "\n")


def dump(data: dict) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _load_object(path: Path, text: str | None) -> dict:
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested past the parser's depth
        if _parses_without_comments(text):
            raise SetupError(f"{path} holds comments, which its harness may read but setup cannot keep in a file it "
                             "rewrites: take them out, or add setup's entries by hand (agora-setup(1), \"What each harness gets\"); "
                             "nothing was changed") from None
        raise SetupError(f"{path} is not valid JSON ({exc}); fix it by hand, setup will not overwrite it") from None
    if not isinstance(data, dict):
        raise SetupError(f"{path} is not a JSON object; fix it by hand, setup will not overwrite it")
    return data


def _parses_without_comments(text: str) -> bool:
    """Whether `text` is JSON once its // and /* */ comments are taken out (JSONC, as Gemini CLI's and
    VS Code's settings allow); strings are kept whole, so a "//" inside one is not a comment."""
    kept, at, quoted = [], 0, False
    while at < len(text):
        char = text[at]
        if quoted:
            kept.append(text[at:at + 2] if char == "\\" else char)
            at += 2 if char == "\\" else 1
            quoted = char != '"'
            continue
        if text.startswith("//", at):
            newline = text.find("\n", at)
            at = len(text) if newline < 0 else newline
            continue
        if text.startswith("/*", at):
            end = text.find("*/", at + 2)
            if end < 0:
                return False
            at = end + 2
            continue
        quoted = char == '"'
        kept.append(char)
        at += 1
    try:
        json.loads("".join(kept))
    except (ValueError, RecursionError):
        return False
    return True


def _container(path: Path, data: dict, keys: tuple[str, ...], create: bool):
    """The object at `keys` inside `data` (made when `create`), or None; refuses a non-object on the way."""
    here = data
    for key in keys:
        if key not in here:
            if not create:
                return None
            here[key] = {}
        here = here[key]
        if not isinstance(here, dict):
            raise SetupError(f"{path}: `{'.'.join(keys)}` is not an object; fix it by hand, setup will not overwrite it")
    return here


@dataclass
class JsonEntry(Target):
    """One named entry in a JSON object, e.g. `mcpServers.agora`: the name is ours, its value replaced whole."""

    keys: tuple[str, ...] = ()  # the object holding the entry
    name: str = "agora"
    value: dict = field(default_factory=dict)

    def wire(self, text):
        data = _load_object(self.path, text)
        _container(self.path, data, self.keys, create=True)[self.name] = self.value
        return dump(data)

    def unwire(self, text):
        if text is None:
            return None
        data = _load_object(self.path, text)
        holder = _container(self.path, data, self.keys, create=False)
        if holder is not None and self.name in holder:
            del holder[self.name]
            _prune_empty(data, self.keys)
        return dump(data) if data else None

    def has_ours(self, text):
        holder = _container(self.path, _load_object(self.path, text), self.keys, create=False)
        return holder is not None and self.name in holder


@dataclass
class JsonListItems(Target):
    """Items of ours in a JSON list, e.g. `permissions.allow`: added once each, the user's kept."""

    keys: tuple[str, ...] = ()  # the list's path; the last key names the list
    items: tuple[str, ...] = ()

    def _list(self, data: dict, create: bool):
        holder = _container(self.path, data, self.keys[:-1], create)
        if holder is None or (self.keys[-1] not in holder and not create):
            return None
        found = holder.setdefault(self.keys[-1], [])
        if not isinstance(found, list):
            raise SetupError(f"{self.path}: `{'.'.join(self.keys)}` is not a list; fix it by hand, "
                             "setup will not overwrite it")
        return found

    def wire(self, text):
        data = _load_object(self.path, text)
        found = self._list(data, create=True)
        found.extend(item for item in self.items if item not in found)
        return dump(data)

    def unwire(self, text):
        if text is None:
            return None
        data = _load_object(self.path, text)
        found = self._list(data, create=False)
        if found is not None:
            found[:] = [item for item in found if item not in self.items]
            if not found:
                _prune_empty(data, self.keys)
        return dump(data) if data else None

    def has_ours(self, text):
        found = self._list(_load_object(self.path, text), create=False)
        return bool(found) and any(item in found for item in self.items)


def _prune_empty(data: dict, keys: tuple[str, ...]) -> None:
    """Drop the containers along `keys` that setup's removal left empty, innermost first."""
    for depth in range(len(keys), 0, -1):
        holder = data
        for key in keys[:depth - 1]:
            holder = holder.get(key) if isinstance(holder, dict) else None
        if isinstance(holder, dict) and keys[depth - 1] in holder and holder[keys[depth - 1]] in ({}, []):
            del holder[keys[depth - 1]]


@dataclass
class Composite(Target):
    """Several parts of one file (hooks and permissions in one settings.json), applied in order."""

    parts: tuple = ()

    def wire(self, text):
        for part in self.parts:
            text = part.wire(text)
        return text

    def unwire(self, text):
        for part in reversed(self.parts):
            text = part.unwire(text)
        return text

    def has_ours(self, text):
        return any(part.has_ours(text) for part in self.parts)


TOML_BEGIN = "# agora:begin (written by `agora setup`; re-run it to change this block, `agora setup --remove` to take it out)"
TOML_END = "# agora:end"


@dataclass
class TomlBlock(Target):
    """Tables of ours in a TOML file, between comment markers at its end (the user's comments survive).

    `data` is rendered with tomli-w; the whole file must still parse, so a table of the same name
    the user wrote is refused rather than doubled.
    """

    data: dict = field(default_factory=dict)

    @property
    def block(self) -> str:
        import tomli_w

        return f"{TOML_BEGIN}\n{tomli_w.dumps(self.data)}{TOML_END}\n"

    def _parse(self, text: str) -> dict:
        import tomllib

        try:
            return tomllib.loads(text)
        except (tomllib.TOMLDecodeError, RecursionError) as exc:
            raise SetupError(f"{self.path} is not valid TOML ({exc}); fix it by hand, setup will not overwrite it") from None

    def _rest(self, text: str) -> str:
        start, end = text.find(TOML_BEGIN), text.find(TOML_END)
        if start < 0 and end < 0:
            return text
        if start < 0 or end < start:
            raise SetupError(f"{self.path}: the agora markers are broken; remove the agora block by hand and run "
                             "setup again")
        before, after = text[:start], text[end + len(TOML_END):].lstrip("\n")
        if before.endswith("\n\n"):
            before = before[:-1]  # the blank line setup put before the block
        return before + after

    def wire(self, text):
        rest = self._rest(text or "")
        theirs = self._parse(rest)
        clashing = [f"[{key}.{name}]" for key, tables in self.data.items() if isinstance(tables, dict)
                    for name in tables if isinstance(theirs.get(key), dict) and name in theirs[key]]
        if clashing:
            raise SetupError(f"{self.path} defines {', '.join(clashing)} itself, outside setup's block, and setup "
                             "would define it again: remove or rename it, then run setup again; nothing was changed")
        joined = rest + ("" if not rest else "\n" if rest.endswith("\n") else "\n\n") + self.block
        self._parse(joined)  # any other clash: refuse, never double a table
        return joined

    def unwire(self, text):
        if text is None:
            return None
        rest = self._rest(text)
        return rest or None

    def has_ours(self, text):
        return text is not None and TOML_BEGIN in text
