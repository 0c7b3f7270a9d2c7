"""The package's layers, held as rules (docs/ARCHITECTURE.md "Layers").

`agorad/surface` is the light surface every other package may import; `agorad/domain`
holds the concepts and their rules; `agorad/store` holds every SQL statement;
`agorad/runtime` is the running hub; `agorad/cli` is the thin front end.
Reception (`agora_listen`) sees only the surface, so `agora listen --once`, which runs in a
loop, never loads the database or the server; the driver (`agora_drive`) sees the surface,
reception's library and the harness modules of `agora_setup`, never the hub itself.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# package -> the agorad packages it may import (besides itself)
ALLOWED = {
    "agorad.surface": set(),
    "agorad.store": {"agorad.surface"},
    "agorad.domain": {"agorad.surface", "agorad.store"},
    "agorad.runtime": {"agorad.surface", "agorad.store", "agorad.domain"},
    "agorad.cli": {"agorad.surface", "agorad.store", "agorad.domain", "agorad.runtime", "agora_listen", "agora_setup",
                   "agora_mcp", "agora_drive"},
    "agora_listen": {"agorad.surface"},
    "agora_setup": {"agorad.surface"},
    "agora_drive": {"agorad.surface", "agora_listen", "agora_setup"},  # agora_setup.harnesses: the adapters
    "agora_mcp": {"agorad.surface"},
    "agora_sdk": {"agorad.surface"},  # the SDK: a Python agent's process never loads the hub
}
OURS = ("agorad", "agora_listen", "agora_setup", "agora_drive", "agora_mcp", "agora_sdk")
# Packages that may import an optional extra's distributions: package -> extra. Only `agora mcp` needs
# the mcp SDK; the CLI adapter imports agora_mcp lazily, inside the command.
OPTIONAL = {"agora_mcp": "mcp"}


def package_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] not in OURS:
        return None
    if parts[0] == "agorad" and len(parts) > 1:
        return ".".join(parts[:2])
    return parts[0]


def runtime_imports(path: Path) -> list[str]:
    """The modules `path` imports, leaving out `if TYPE_CHECKING:` blocks (never run)."""
    tree = ast.parse(path.read_text())
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for body in node.body for child in ast.walk(body))
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [f"{node.module}.{alias.name}" if node.module == "agorad" else node.module for alias in node.names]
    return found


def module_files():
    for top in OURS:
        for path in sorted((ROOT / top).rglob("*.py")):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            yield module, path


def test_agorad_top_level_holds_only_the_layers():
    entries = {p.name for p in (ROOT / "agorad").iterdir() if not p.name.startswith("__pycache__")}
    assert entries == {"__init__.py", "surface", "domain", "store", "runtime", "cli"}


def test_every_import_points_down_the_layers():
    wrong = []
    for module, path in module_files():
        own = package_of(module)
        if own == "agorad":  # agorad/__init__.py: the version only
            continue
        for target in runtime_imports(path):
            package = package_of(target)
            if package is None or package == own or target == "agorad.__version__":
                continue
            if package not in ALLOWED[own]:
                wrong.append(f"{module} imports {target}")
    assert wrong == []


def printed_by(probe: str) -> str:
    """What `probe` prints, run in a fresh interpreter (so only what it imports is loaded)."""
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()


def loaded_by(imports: str, modules: tuple[str, ...], prefixes: tuple[str, ...]) -> list[str]:
    """Which of `modules` (or modules under `prefixes`) a fresh interpreter has loaded after `imports`."""
    probe = (f"import sys, {imports}\n"
             f"print(','.join(sorted(m for m in sys.modules if m in {modules!r} or m.startswith({prefixes!r}))))\n")
    return [name for name in printed_by(probe).split(",") if name]


def test_reception_loads_neither_the_database_nor_the_server():
    assert loaded_by("agorad.cli, agorad.cli.listen, agora_listen.listener", ("apsw", "mcp", "agora_mcp"),
                     ("agorad.runtime", "agorad.domain", "agorad.store", "mcp.", "agora_mcp.")) == []


def test_only_the_remote_port_and_its_clients_load_websockets():
    """The hub loads it only with --listen (runtime/remote.py), the CLI, `agora mcp` and the SDK only for a
    URL (surface/wsclient.py, surface/aiowire.py): the Unix-socket clients, the file listener and the stop hook
    start as fast as before."""
    assert loaded_by("agorad.cli, agorad.cli.up, agorad.runtime.daemon, agorad.cli.listen, agorad.cli.watch, "
                     "agora_listen.listener, agora_listen.wsource, agorad.surface.client, agorad.surface.wsclient, "
                     "agorad.cli.common, agorad.cli.hook_fast, agora_mcp.connection, agorad.surface.aiowire, agora_sdk, "
                     "agora_sdk.aio", (),
                     ("websockets",)) == []


def test_only_agora_mcp_loads_the_mcp_sdk():
    """The hub and every command but `agora mcp` run without the optional extra; even loading the
    command's module (as `agora --help` does) leaves the SDK unloaded."""
    probe = (
        "import sys, agorad.cli, agorad.cli.up, agorad.runtime.daemon, agorad.cli.mcp\n"
        "from agorad.cli import main\n"
        "main.all_commands()\n"
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'agora_mcp', 'pydantic'))))\n"
    )
    assert printed_by(probe) == ""


def test_the_sdk_over_the_unix_socket_loads_neither_the_hub_nor_websockets():
    """A Python agent on the hub's host pays for no database, no server and no WebSocket library:
    websockets loads only when a client is given a URL."""
    assert loaded_by("agora_sdk", ("apsw", "websockets", "click"),
                     ("agorad.runtime", "agorad.domain", "agorad.store", "agorad.cli", "websockets.")) == []


def declared_dependencies(extra: str | None = None) -> set[str]:
    """The distributions pyproject.toml declares: the required ones, or those of one optional extra."""
    import re
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = project["dependencies"] if extra is None else project["optional-dependencies"][extra]
    return {normalised(re.split(r"[<>=!~\[ ;]", spec, maxsplit=1)[0]) for spec in specs}


def normalised(name: str) -> str:
    """A distribution name as PEP 503 compares them (tomli-w and tomli_w are one)."""
    import re

    return re.sub(r"[-_.]+", "-", name).lower()


def imported_distributions(extra: str | None = None) -> set[str]:
    """The installed distributions the code imports at run time, lazily imported ones included: by the
    packages that need no extra, or by those that come with `extra` (OPTIONAL)."""
    from importlib.metadata import packages_distributions

    providers = packages_distributions()
    found = set()
    for module, path in module_files():
        if OPTIONAL.get(module.split(".")[0]) != extra:
            continue
        for target in runtime_imports(path):
            top = target.split(".")[0]
            if top not in OURS and top not in sys.stdlib_module_names:
                found.update(normalised(name) for name in providers.get(top, [top]))
    return found


def test_declared_runtime_dependencies_are_what_the_code_imports():
    assert declared_dependencies() == imported_distributions()


@pytest.mark.parametrize("extra", sorted(set(OPTIONAL.values())))
def test_an_extra_declares_what_its_packages_import_beyond_the_required(extra):
    """The mcp extra names the SDK; what agora_mcp imports besides it (anyio, pydantic) comes with the SDK,
    so it must be among the SDK's own requirements rather than declared again."""
    from importlib.metadata import requires

    declared = declared_dependencies(extra)
    beyond = imported_distributions(extra) - declared_dependencies()
    brought = {normalised(re.split(r"[<>=!~\[ ;(]", r, maxsplit=1)[0]) for d in declared for r in requires(d) or ()
               if "extra ==" not in r}
    assert declared <= beyond, f"the {extra} extra declares what nothing imports"
    assert beyond - declared <= brought, f"imported but neither declared nor brought by {sorted(declared)}"
