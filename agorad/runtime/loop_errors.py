"""What the event loop reports with nowhere to send it, in the hub's log without flooding it.

Out of descriptors (EMFILE, ENFILE) or memory, asyncio's accept loop reports each failed
`accept()` and tries the next pending connection, up to the listening socket's backlog in one
turn (CPython 3.11 `selector_events._accept_connection`: no break after the failure), and
schedules a retry for each: a burst of held connections wrote thousands of tracebacks a second
into `agorad.log` (a review measured 122 MB in a minute, which rotation would only have cycled). Such a
report is one `accept-failed` line, at most once per `log.Sparse` spell. Everything else goes to
asyncio's default handler, as before.
"""

from __future__ import annotations

import asyncio
import errno

from agorad.runtime.log import Sparse

_RESOURCE_ERRORS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


class AcceptFailures:
    """The loop's exception handler: accept failures logged sparingly, the rest as asyncio would."""

    def __init__(self):
        self.log = Sparse("accept-failed")

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict) -> None:
        exc = context.get("exception")
        if isinstance(exc, OSError) and exc.errno in _RESOURCE_ERRORS and "accept" in str(context.get("message")):
            self.log(error=errno.errorcode.get(exc.errno, exc.errno), detail=exc.strerror or exc)
        else:
            loop.default_exception_handler(context)


def install(loop: asyncio.AbstractEventLoop) -> None:
    loop.set_exception_handler(AcceptFailures())
