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
import shlex
from dataclasses import dataclass, field
from pathlib import Path

WIRED, STALE, MISSING = "wired", "stale", "missing"
# The agora subcommands a harness config runs; a handler running one of them is setup's own.
OUR_SUBCOMMANDS = ("listen", "hook", "mcp")


class SetupError(Exception):
    """Setup cannot go on; the message says which file and what to do. Nothing has been written."""


def is_ours(handler) -> bool:
    """Whether a hook handler runs `agora listen|hook|mcp` (an absolute path to agora, any version)."""
    command = handler.get("command") if isinstance(handler, dict) else None
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return len(words) > 1 and os.path.basename(words[0]) == "agora" and words[1] in OUR_SUBCOMMANDS


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
        return WIRED if self.wire(text) == text else STALE


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
        after = after[1:] if after.startswith("\n") else after
        after = after[1:] if after.startswith("\n") else after  # the blank line setup put after the block
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
        if text is None or not text.strip():
            return {}
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise SetupError(f"{self.path} is not valid JSON ({exc}); fix it by hand, setup will not overwrite it") from None
        if not isinstance(data, dict):
            raise SetupError(f"{self.path} is not a JSON object; fix it by hand, setup will not overwrite it")
        hooks = data.get(self.hooks_key, {})
        if not isinstance(hooks, dict) or not all(isinstance(v, list) for v in hooks.values()):
            raise SetupError(f"{self.path}: `{self.hooks_key}` is not an object of lists; fix it by hand, "
                             "setup will not overwrite it")
        return data

    def _without_ours(self, data: dict) -> dict:
        hooks = data.get(self.hooks_key)
        if hooks is None:
            return data
        for event, entries in list(hooks.items()):
            hooks[event] = [kept for kept in (self._strip(entry) for entry in entries) if kept is not None]
            if entries and not hooks[event]:
                del hooks[event]
        if not hooks:
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
        data = self._without_ours(self.load(text))
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
        return any(self._strip(entry) != entry for entries in data.get(self.hooks_key, {}).values()
                   for entry in entries)


def dump(data: dict) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


@dataclass
class ValidToml(Target):
    """A TOML file setup does not change but must be valid for the harness to load the wiring."""

    why: str = ""

    def check(self, text: str | None) -> None:
        import tomllib

        if text is None:
            return
        try:
            tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise SetupError(f"{self.path} is not valid TOML ({exc}); {self.why}; fix it by hand, "
                             "setup will not overwrite it") from None

    def wire(self, text):
        self.check(text)
        return text

    def unwire(self, text):
        return text

    def has_ours(self, text):
        return False

    def state(self, text):
        self.check(text)
        return WIRED
