"""One root exception; each subclass carries its JSON-RPC code and reason word.

A subclass's docstring is its default message. The server turns these into
JSON-RPC error objects; the client turns error objects back into these; the
CLI maps them to exit statuses in one place (`agorad.cli.common`).
"""

from __future__ import annotations


class AgoraError(Exception):
    """Something went wrong in the hub."""

    code = -32603
    reason = "internal"

    def __init__(self, message: str | None = None, **data):
        super().__init__(message or (self.__doc__ or "").strip())
        self.data = data

    @property
    def message(self) -> str:
        return self.args[0]

    def to_wire(self) -> dict:
        return {"code": self.code, "message": self.message, "data": {"reason": self.reason, **self.data}}


class ParseError(AgoraError):
    """The frame is not valid JSON."""

    code, reason = -32700, "parse-error"


class InvalidRequest(AgoraError):
    """The frame is not a JSON-RPC 2.0 request."""

    code, reason = -32600, "invalid-request"


class MethodNotFound(AgoraError):
    """No such method."""

    code, reason = -32601, "method-not-found"


class InvalidParams(AgoraError):
    """The parameters are wrong."""

    code, reason = -32602, "invalid-params"


class InternalError(AgoraError):
    """The hub failed to handle the request; nothing was changed."""

    code, reason = -32603, "internal"


class Unauthorized(AgoraError):
    """The agent or key is not recognised."""

    code, reason = -32001, "unauthorized"


class Forbidden(AgoraError):
    """Policy does not allow this call."""

    code, reason = -32002, "forbidden"


class NotFound(AgoraError):
    """No such object."""

    code, reason = -32003, "not-found"


class Conflict(AgoraError):
    """The object already exists or changed meanwhile."""

    code, reason = -32004, "conflict"


class TooLarge(AgoraError):
    """The frame or value is over its size limit."""

    code, reason = -32005, "too-large"


class Paused(AgoraError):
    """The hub is paused."""

    code, reason = -32006, "paused"


class Unavailable(AgoraError):
    """The hub is not running or cannot be reached."""

    code, reason = -32010, "unavailable"


_BY_REASON = {cls.reason: cls for cls in AgoraError.__subclasses__()}
# What a hub answers a seat's hello with when trying again cannot help (a wrong key, a removed seat): a
# client that reconnects by itself stops, or waits out the remote port's hello throttle, on these.
SEAT_REFUSALS = (Unauthorized.reason, NotFound.reason, Forbidden.reason)


def from_wire(error: dict) -> AgoraError:
    """Rebuild the exception a server sent as a JSON-RPC error object."""
    data = dict(error.get("data") or {})
    cls = _BY_REASON.get(data.pop("reason", ""), AgoraError)
    exc = cls(str(error.get("message", "")), **data)
    exc.code = error.get("code", cls.code)
    return exc
