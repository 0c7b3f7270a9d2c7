"""filenames.py (names as strings, no pathlib) held to pathlib: each string is what the Path spells.

The stop hook names its files through filenames.py; everything else uses paths.py's Paths. A home
or file named one way must print, compare and open as the other names it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from agorad.surface import filenames, paths
from agorad.surface.paths import Home

# Path text built from the pieces pathlib treats specially: slashes (one, two, three), `.`, `..`, `~`.
PIECES = st.sampled_from(["", "/", "//", "///", ".", "..", "~", "~root", "a", "b c", "x.d", "~nosuchuser-agora"])
TEXTS = st.lists(PIECES, max_size=6).map("".join) | st.lists(PIECES, max_size=6).map("/".join)


def pathlib_home(text) -> str | type:
    try:
        return str(Path(text).expanduser().absolute())
    except RuntimeError:
        return RuntimeError


def ours(text) -> str | type:
    try:
        return filenames.home_root(text)
    except RuntimeError:
        return RuntimeError


@given(TEXTS)
def test_pathlib_form_is_how_pathlib_spells_it(text):
    assert filenames.pathlib_form(text) == str(Path(text))


@given(TEXTS.filter(bool))
def test_home_root_is_home_resolve_as_pathlib_did_it(text):
    assert ours(text) == pathlib_home(text)


@pytest.mark.parametrize("env", [None, "", "/srv/agora/", "~/h", "rel/../h", "//net/h"])
def test_the_default_home_is_pathlibs(env, monkeypatch):
    if env is None:
        monkeypatch.delenv("AGORA_HOME", raising=False)
    else:
        monkeypatch.setenv("AGORA_HOME", env)
    expected = str(paths.default_home().absolute())
    assert filenames.home_root() == expected == str(Home.resolve().root) == Home.resolve().root_text
    assert filenames.home_root("") == expected  # an empty --home is no --home


@pytest.mark.parametrize("root", ["/the-home", Path("/the-home"), "/the-home/", "//h", "rel"])
def test_each_name_is_the_paths_name(root):
    home = Home(root)
    assert home == Home(Path(root)) and hash(home) == hash(Home(Path(root)))
    assert home.root == Path(root) and str(home.root) == home.root_text
    assert str(home.key_file("bob")) == filenames.pathlib_form(filenames.key_file(root, "bob"))
    for what in filenames.LISTEN_FILES:
        assert paths.listen_file(root, "bob", what) == Path(filenames.listen_file(root, "bob", what)) \
            == Path(root) / f"listen-bob.{what}"
    for what in filenames.DRIVE_FILES:
        assert paths.drive_file(root, "bob", what) == Path(root) / f"drive-bob.{what}"
    assert paths.hook_stamp(root, "bob", "stop") == Path(root) / "hook-bob.stop.stamp"
    assert paths.notify_file(root, "bob") == Path(root) / "bob-inbox.log"
    assert paths.seat_record(root) == Path(root) / ".agora" / "seat.toml"


def test_exists_is_path_exists(tmp_path):
    (tmp_path / "file").write_text("x")
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "inside").write_text("x")
    cases = [tmp_path / "file", tmp_path / "missing", tmp_path / "file" / "under-a-file", tmp_path / "a\0b"]
    for path in cases:
        assert filenames.exists(path) == filenames.exists(str(path)) == path.exists()
    locked.chmod(0)
    try:
        if os.geteuid() != 0:  # root searches any directory
            with pytest.raises(PermissionError):
                (locked / "inside").exists()
            with pytest.raises(PermissionError):
                filenames.exists(locked / "inside")
    finally:
        locked.chmod(0o700)


def test_write_private_takes_str_and_path(tmp_path):
    for target in (tmp_path / "a", str(tmp_path / "b")):
        filenames.write_private(target, "text", sync=False)
        assert Path(target).read_text() == "text" and Path(target).stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]  # no temp file left behind
