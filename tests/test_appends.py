"""The notify appends in C (agorad/runtime/_appends.c) held to their plain Python version (helper.py)."""

from __future__ import annotations

import ast
import errno
import fcntl
import os
import shutil
import subprocess
import sys
import sysconfig
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agorad.runtime import helper


def _can_build() -> bool:
    """A C compiler and the Python headers, as setuptools looks for them: then the install should have built it."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(compiler) is not None and os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))


_SOURCE = os.path.join(os.path.dirname(helper.__file__), "_appends.c")


def _why_not_built(source: str) -> str:
    """The compiler's own complaint about `source`: pip shows a failed optional build only with -v, and the Makefile's
    install is --quiet, so without this a failed build says nothing of why."""
    command = [*(sysconfig.get_config_var("CC") or "cc").split(), "-fsyntax-only",
               "-I" + sysconfig.get_paths()["include"], source]
    said = subprocess.run(command, capture_output=True, text=True).stderr.strip()
    if said:
        return f"{' '.join(command)} says:\n{said[-2000:]}\n"
    return (f"{' '.join(command)} finds nothing wrong, so the build itself failed (was $CC set?): "
            "`.venv/bin/pip install -v --no-deps -e . --config-settings editable_mode=compat` shows it")


def _c_write_each():
    """The C write_each. Missing where it could have been built is a failure (the install leaves it out without
    a word: setup.py marks it optional); missing where it could not, the plain version serves and this skips."""
    try:
        from agorad.runtime._appends import write_each
    except ImportError as exc:
        if _can_build():
            pytest.fail(f"the C appends were not built although a C compiler and the Python headers are here ({exc}): "
                        f"{_why_not_built(_SOURCE)}; `make clean test` builds them again")
        pytest.skip("no C compiler or Python headers here: the notify appends run in plain Python")
    return write_each


def test_the_c_appends_are_built_and_are_what_the_helper_uses():
    """The install builds them quietly or not at all (setup.py: optional), so this is what says they were."""
    assert helper.write_each is _c_write_each()  # skips where they could not have been built
    assert helper.APPENDS == "c"


def test_the_c_appends_are_built_from_the_c_file_as_it_is_now():
    """A build older than _appends.c is the old code: these tests would hold that to the Python version, not the
    new one (a .c that no longer compiles leaves no build: the Makefile removes the old one first)."""
    _c_write_each()  # skips where they could not have been built
    from agorad.runtime import _appends

    assert os.stat(_appends.__file__).st_mtime >= os.stat(_SOURCE).st_mtime, (
        f"{_appends.__file__} is older than {_SOURCE}: `make test` builds it again")


def test_a_failed_build_is_reported_with_the_compilers_words(tmp_path):
    """What `_c_write_each` fails with where the build failed: the compiler's error, or where to see the build's."""
    if not _can_build():
        pytest.skip("no C compiler or Python headers here")
    broken = tmp_path / "_appends.c"
    broken.write_text(open(_SOURCE).read() + "\nnot C at all\n")
    said = _why_not_built(str(broken))
    assert "error" in said and str(broken) in said
    assert "pip install -v" in _why_not_built(_SOURCE)  # it compiles: the reason was the build's, pip -v shows it


def _outcome(results: list) -> list:
    return [(type(r), r.errno, r.strerror) if isinstance(r, OSError) else r for r in results]


class _Files:
    """Open descriptors of every kind a pair can name: appendable files, a read-only one, a closed one,
    a non-blocking pipe already full, and one far past any open file."""

    def __init__(self, directory):
        self.directory = directory
        self.fds: list[int] = []
        self.appendable = [self._open(f"f{n}", os.O_WRONLY | os.O_CREAT | os.O_APPEND) for n in range(4)]
        self.read_only = self._open("f0", os.O_RDONLY)
        self.closed = self._open("gone", os.O_WRONLY | os.O_CREAT)
        os.close(self.closed)
        self.fds.remove(self.closed)
        reader, self.full_pipe = os.pipe()
        self.fds += [reader, self.full_pipe]
        os.set_blocking(self.full_pipe, False)
        while True:
            try:
                os.write(self.full_pipe, b"x" * 65536)
            except BlockingIOError:
                break
        self.far = 1 << 20

    def _open(self, name, flags) -> int:
        fd = os.open(self.directory / name, flags, 0o600)
        self.fds.append(fd)
        return fd

    def contents(self) -> list[bytes]:
        return [(self.directory / f"f{n}").read_bytes() for n in range(4)]

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)


def test_each_kind_of_descriptor_gives_what_os_write_gives(tmp_path):
    c_write_each = _c_write_each()
    outcomes, contents = [], []
    for name, write_each in (("plain", helper.plain_write_each), ("c", c_write_each)):
        (tmp_path / name).mkdir()
        files = _Files(tmp_path / name)
        try:
            pairs = [(files.appendable[0], b"one\n"), (files.read_only, b"two\n"), (files.closed, b"three\n"),
                     (files.full_pipe, b"four\n"), (files.far, b"five\n"), (-1, b"five\n"),
                     (files.appendable[1], b""), (files.appendable[0], b"six\n")]
            outcomes.append(_outcome(write_each(pairs)))
            contents.append(files.contents())
        finally:
            files.close()
    assert outcomes[0] == outcomes[1]
    assert contents[0] == contents[1] == [b"one\nsix\n", b"", b"", b""]
    assert [o if isinstance(o, int) else (o[0], o[1]) for o in outcomes[1]] == [
        4, (OSError, errno.EBADF), (OSError, errno.EBADF), (BlockingIOError, errno.EAGAIN), (OSError, errno.EBADF), (OSError, errno.EBADF), 0, 4]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.binary(max_size=300)), max_size=40))
def test_any_run_of_pairs_gives_the_same_results_and_files_in_both(tmp_path_factory, picks):
    """Picks 0-3 are appendable files, 4 the read-only one, 5 the closed one, 6 no descriptor at all (-1)."""
    c_write_each = _c_write_each()
    outcomes, contents = [], []
    for write_each in (helper.plain_write_each, c_write_each):
        files = _Files(tmp_path_factory.mktemp("appends"))
        try:
            named = files.appendable + [files.read_only, files.closed, -1]
            outcomes.append(_outcome(write_each([(named[pick], line) for pick, line in picks])))
            contents.append(files.contents())
        finally:
            files.close()
    assert outcomes[0] == outcomes[1]
    assert contents[0] == contents[1]


@pytest.mark.parametrize("pairs", [
    ((3, b"x"),), [(3,)], [(3, "text")], [("3", b"x")], [(3.0, b"x")], [(1 << 40, b"x")], [(-(1 << 40), b"x")],
    [[3, b"x"]],
], ids=["not a list", "one item", "str line", "str fd", "float fd", "huge fd", "hugely negative fd", "list pair"])
def test_a_malformed_pair_is_refused_before_anything_is_written(tmp_path, pairs):
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        pairs = [(fd, b"first\n"), *pairs] if isinstance(pairs, list) else pairs
        with pytest.raises((TypeError, OverflowError)):  # what os.write raises for each, but before any write
            _c_write_each()(pairs)
    finally:
        os.close(fd)
    assert (tmp_path / "f").read_bytes() == b""


def test_the_gil_is_released_while_the_writes_block(tmp_path):
    """A write into a full blocking pipe waits until a Python thread reads: held with the GIL, it never would."""
    write_each = _c_write_each()
    reader, writer = os.pipe()
    line = b"y" * (4 * fcntl.fcntl(writer, fcntl.F_GETPIPE_SZ))
    got = bytearray()

    def drain():
        while len(got) < len(line):
            got.extend(os.read(reader, 65536))

    drainer = threading.Thread(target=drain, daemon=True)
    drainer.start()
    try:
        assert write_each([(writer, line)]) == [len(line)]
        drainer.join(timeout=30)
    finally:
        os.close(writer)
        os.close(reader)
    assert bytes(got) == line


def test_an_error_message_in_a_locale_that_is_not_utf_8_is_os_writes(tmp_path):
    """After setlocale(LC_ALL) in a Latin-1 locale strerror speaks Latin-1 (glibc: EPIPE in French is
    "Relais bris\xe9 (pipe)"): the message is decoded as os.write decodes it, and the results are not lost."""
    write_each = _c_write_each()
    if shutil.which("localedef") is None or not os.path.exists("/usr/share/locale/fr/LC_MESSAGES/libc.mo"):
        pytest.skip("no localedef or no French glibc messages here")
    made = subprocess.run(["localedef", "-i", "fr_FR", "-f", "ISO-8859-1", str(tmp_path / "fr_FR.ISO-8859-1")],
                          capture_output=True)
    if not (tmp_path / "fr_FR.ISO-8859-1").exists():
        pytest.skip(f"localedef could not make fr_FR.ISO-8859-1: {made.stderr[-200:]!r}")
    script = (
        "import locale, os, sys\n"
        "locale.setlocale(locale.LC_ALL, 'fr_FR.ISO-8859-1')\n"
        "from agorad.runtime import helper\n"
        "from agorad.runtime._appends import write_each\n"
        "outcomes = []\n"
        "for each in (helper.plain_write_each, write_each):\n"
        "    reader, writer = os.pipe()\n"
        "    os.close(reader)\n"
        "    outcomes.append([(type(r).__name__, r.errno, r.strerror) for r in each([(writer, b'x')])])\n"
        "    os.close(writer)\n"
        "print(ascii(outcomes))\n"
    )
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30,
                         env={**os.environ, "LOCPATH": str(tmp_path), "LC_ALL": "", "LANGUAGE": ""})
    assert ran.returncode == 0, ran.stderr
    plain, c = ast.literal_eval(ran.stdout)
    assert c == plain and plain[0][:2] == ("BrokenPipeError", errno.EPIPE)
    assert plain[0][2] != os.strerror(errno.EPIPE)  # the French message, else this showed nothing
