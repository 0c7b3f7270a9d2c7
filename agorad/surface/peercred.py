"""Who is at the other end of a Unix socket: the peer's effective uid (and, on Linux, its pid), asked
of the kernel.

The hub serves its own uid only, and the socket's file mode is not the only
guard: each platform has its own call for a connected Unix socket's peer.
`agora down` asks the other way round, for the hub's pid (`peer_pid`).

- Linux: getsockopt(SOL_SOCKET, SO_PEERCRED) fills a struct ucred
  {pid_t pid; uid_t uid; gid_t gid;} (socket(7), unix(7)).
- macOS, FreeBSD, DragonFly: getsockopt(SOL_LOCAL, LOCAL_PEERCRED) fills a
  struct xucred {u_int cr_version; uid_t cr_uid; short cr_ngroups;
  gid_t cr_groups[16]; ...}, cr_version being XUCRED_VERSION (0). SOL_LOCAL
  is 0 and LOCAL_PEERCRED is 1 on all three: xnu bsd/sys/un.h and
  bsd/sys/ucred.h (apple-oss-distributions/xnu); FreeBSD sys/sys/un.h and
  sys/sys/ucred.h, where a union {void *; pid_t cr_pid;} follows the groups.
  This is the call getpeereid(3) makes on these systems.
- Other systems with getpeereid(3) in their C library (OpenBSD, NetBSD):
  that call, through ctypes.
- Anything else: PeerUnknown, and the hub refuses the client with a message
  that says why, rather than serve a peer it cannot name.
"""

from __future__ import annotations

import os
import _socket  # socket's C core, for two constants: socket.py loads enum and selectors (client.py)
import struct
import sys

_UCRED = struct.Struct("iII")  # Linux struct ucred: pid_t pid; uid_t uid; gid_t gid
SOL_LOCAL = 0
LOCAL_PEERCRED = 1
XUCRED_VERSION = 0
_XUCRED_HEAD = struct.Struct("II")  # u_int cr_version; uid_t cr_uid
# The largest layout (FreeBSD's, with the trailing union): the kernel copies out
# min(this, its own size), so the same request fits macOS's shorter struct.
_XUCRED_SIZE = struct.calcsize("IIh16IP")
_XUCRED_PLATFORMS = ("darwin", "freebsd", "dragonfly")


class PeerUnknown(Exception):
    """The peer's uid could not be learned; the message says why."""


def method() -> str | None:
    """How this platform names a socket's peer: SO_PEERCRED, LOCAL_PEERCRED, getpeereid, or None for no way."""
    if sys.platform.startswith("linux"):
        return "SO_PEERCRED"
    if sys.platform.startswith(_XUCRED_PLATFORMS):
        return "LOCAL_PEERCRED"
    if _getpeereid_function() is not None:
        return "getpeereid"
    return None


def peer_uid(sock) -> int:
    """The effective uid of the process at the other end of the connected Unix socket `sock`.

    Raises PeerUnknown when the platform offers no way to ask, or the kernel would not say.
    """
    how = method()
    try:
        if how == "SO_PEERCRED":
            _pid, uid, _gid = _UCRED.unpack(sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, _UCRED.size))
            return uid
        if how == "LOCAL_PEERCRED":
            return _xucred_uid(sock.getsockopt(SOL_LOCAL, LOCAL_PEERCRED, _XUCRED_SIZE))
        if how == "getpeereid":
            return _getpeereid(sock.fileno())
    except OSError as exc:
        raise PeerUnknown(f"asking the kernel for the peer's uid ({how}): {exc.strerror or exc}") from exc
    raise PeerUnknown(f"this platform ({sys.platform}) offers no way to learn a Unix socket peer's uid "
                      "(neither SO_PEERCRED, LOCAL_PEERCRED nor getpeereid)")


def foreign_owner(sock) -> int | None:
    """The uid of the process at the other end of `sock` when it is not this process's user; None when
    it is, or when the platform cannot say (the home's 0700 mode is then the only guard, as before).
    A client asks before it says anything: a socket in a home another user chose (a planted seat record
    names one) could otherwise collect a seat's key; a real hub serves its own uid only anyway."""
    try:
        uid = peer_uid(sock)
    except PeerUnknown:
        return None
    return None if uid == os.geteuid() else uid


def foreign_hub_message(path: str, owner: int) -> str:
    return (f"the process answering on {path} runs as uid {owner}, not as you (uid {os.geteuid()}): it is not "
            "your hub, and nothing is sent to it; check the home (--home, $AGORA_HOME, the seat record above "
            "this directory)")


def peer_pid(sock) -> int | None:
    """The pid of the process at the other end of `sock`, as this host's kernel names it (Linux
    SO_PEERCRED): 0 when the kernel cannot name it here (a process in a PID namespace this one does not
    see), None where the platform has no such call. A pid a hub reports itself is its own namespace's,
    which in a container is not this host's."""
    if method() != "SO_PEERCRED":
        return None
    pid, _uid, _gid = _UCRED.unpack(sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, _UCRED.size))
    return max(pid, 0)


def _xucred_uid(data: bytes) -> int:
    if len(data) < _XUCRED_HEAD.size:
        raise PeerUnknown(f"LOCAL_PEERCRED returned {len(data)} bytes, too few for a struct xucred")
    version, uid = _XUCRED_HEAD.unpack_from(data)
    if version != XUCRED_VERSION:
        raise PeerUnknown(f"LOCAL_PEERCRED returned a struct xucred of version {version}, not {XUCRED_VERSION}")
    return uid


_LOADED: dict = {}  # a cache by hand: functools loads collections, half a MiB of an armed listener (client.py)


def _getpeereid_function():
    """The C library's getpeereid(int s, uid_t *euid, gid_t *egid), or None; looked up once."""
    if "getpeereid" not in _LOADED:
        import ctypes

        try:
            _LOADED["getpeereid"] = getattr(ctypes.CDLL(None, use_errno=True), "getpeereid", None)
        except OSError:
            _LOADED["getpeereid"] = None
    return _LOADED["getpeereid"]


def _getpeereid(fd: int) -> int:
    import ctypes

    euid, egid = ctypes.c_uint32(), ctypes.c_uint32()  # uid_t and gid_t are 32-bit on every BSD
    if _getpeereid_function()(fd, ctypes.pointer(euid), ctypes.pointer(egid)) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    return euid.value
