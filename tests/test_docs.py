"""The man pages in man/ stay in step with the click commands, and groff accepts them.

One page per top-level command (`man/agora-NAME.1`, group subcommands inside
the group's page), plus `agora.1` (the overview) and `agorad.1` (the daemon,
the same command as `agora up`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import click
import pytest

from agorad.cli import main

MAN = Path(__file__).resolve().parent.parent / "man"
PAGES = sorted(MAN.glob("*.1"))
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


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_references_to_agora_pages_resolve(page):
    refs = set(re.findall(r"(?<![\w-])(agora(?:d|-[a-z]+)?)\s*\(1\)", page_text(page)))
    dangling = sorted(r for r in refs if not (MAN / f"{r}.1").is_file())
    assert not dangling, f"{page.name} refers to pages that do not exist: {dangling}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_groff_accepts_page(page):
    if not shutil.which("groff"):
        pytest.skip("groff is not installed")
    done = subprocess.run(
        ["groff", "-man", "-ww", "-z", str(page)],
        capture_output=True, text=True, env={**os.environ, "LC_ALL": "C.UTF-8"},
    )
    assert done.returncode == 0 and not done.stderr, f"groff on {page.name}: exit {done.returncode}\n{done.stderr}"
