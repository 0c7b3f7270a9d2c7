"""The hub's helper thread: work beside the loop thread's while one of them waits in the kernel.

The hub is one event-loop thread, and most of its time in a big post is spent
in system calls that release the GIL: write(2) to each member's notify file,
and at FULL the fsync inside COMMIT. One helper thread, made on first use,
takes a share of that time:

- `write_each` of many lines: the helper writes the second half while the loop
  thread writes the first, so half the write(2) calls run on the other core.
  Measured on 1,000 files: 0.67 ms instead of 1.1 when the kernel ran the two
  on two cores (it does not always: a thread woken for a millisecond's work is
  often kept on the waker's core). Below `HELPER_FROM` lines the hand-over
  (a wake-up and a join, tens of microseconds) costs more than it saves.
  The writes are C's (`_appends.c`, built at install) where it was built: each
  `os.write` releases and retakes the GIL, so the two Python halves took turns
  at it, where each C half runs whole with the GIL released. 1,000 appends a
  clock tick apart: 2.0 -> 1.5 ms (median); a post to 1,000 members through the
  socket 0.5-0.75 ms faster (bench/README.md, "Fan-out: the appends in C").
  `plain_write_each` is the same in Python, for a machine without a compiler.
- `during(main, beside)`: the helper runs `beside` (work that needs no
  database, such as formatting a big fan-out's notify lines) while the loop
  thread runs `main` (a COMMIT). An fsync waits for the disk, not a core, so
  this pays even on one core.

Every call returns only when the helper's part has: for the rest of the hub the
work is as synchronous as before. In `write_each` each file appears once, so no
two threads ever append to one file, and a file's lines keep their order.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from agorad.runtime.log import log

HELPER_FROM = 256  # lines (to write, or to format) before the helper thread takes a share
T = TypeVar("T")


def plain_write_each(pairs: list[tuple[int, bytes]]) -> list[int | OSError]:
    """os.write(fd, line) for each pair, in order: the bytes each wrote, or the error it raised."""
    done: list[int | OSError] = []
    write = os.write
    for fd, line in pairs:
        try:
            done.append(write(fd, line))
        except OSError as exc:
            done.append(exc)
    return done


try:  # the same with the GIL released once for all the pairs (tests/test_appends.py holds the two together)
    from agorad.runtime._appends import write_each
    APPENDS = "c"
except ImportError:  # not built: the install found no C compiler or no Python headers
    write_each = plain_write_each
    APPENDS = "python"


def _run_all(work: list[Callable[[], None]]) -> None:
    for item in work:
        try:
            item()
        except Exception as exc:  # a head start only: whoever needed it does the work itself
            log("helper-failed", error=type(exc).__name__, detail=str(exc)[:200])


class Helper:
    """One helper thread, made on first use; see the module docstring."""

    def __init__(self, two_threads_from: int = HELPER_FROM):
        self.two_threads_from = two_threads_from
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False

    def write_each(self, pairs: list[tuple[int, bytes]]) -> list[int | OSError]:
        if len(pairs) < self.two_threads_from:
            return write_each(pairs)
        half = len(pairs) // 2
        other = self._submit(write_each, pairs[half:])
        if other is None:  # no helper thread: all of them here
            return write_each(pairs)
        mine = write_each(pairs[:half])
        return mine + other.result()

    def during(self, main: Callable[[], T], beside: list[Callable[[], None]]) -> T:
        """main() here while `beside` runs on the helper; main's result (or error) once both are done.
        Without a helper thread, `beside` is skipped: it is only ever a head start."""
        helped = self._submit(_run_all, beside) if beside else None
        try:
            return main()
        finally:
            if helped is not None:
                helped.result()

    def _submit(self, fn, *args) -> Future | None:
        """The helper's future for fn(*args); None when there is no helper thread to run it (closed, or the
        system would not start a thread): the caller then does the work itself, and nothing waits forever."""
        with self._lock:
            if self._closed:
                return None
            try:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(1, thread_name_prefix="agora-helper")
                return self._pool.submit(fn, *args)
            except RuntimeError as exc:  # "can't start new thread", or the interpreter shutting down
                log("helper-unavailable", error=str(exc)[:200])
                return None

    def close(self) -> None:
        """End the helper thread; later work runs on the caller's thread."""
        with self._lock:
            pool, self._pool, self._closed = self._pool, None, True
        if pool is not None:
            pool.shutdown(wait=True)
