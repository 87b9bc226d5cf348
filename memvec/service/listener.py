"""Closing a listening socket without resetting a connection it already let in.

When a server closes its listener, the kernel resets every connection still waiting in the accept
queue, and uvicorn closes every accepted connection whose request it has not read yet. A client (or
nginx) that connected a moment earlier has sent its request by then and sees the connection reset
after sending: for a POST that is a failure nobody may safely retry, since the server might have
run it. So a draining server first stops admitting (new connection attempts are dropped: the
client's retransmission a second later meets the closed port and is refused, which nginx passes to
the next server), gives what was let in a moment to be accepted and read, and only then closes.
"""

from __future__ import annotations

import ctypes
import socket
import struct
import sys
from collections.abc import Iterable
from typing import Protocol

SETTLE_S = 0.25  # for the accept queue to empty and the requests in it to be read (localhost: ~1 ms)
_SO_ATTACH_FILTER = 26  # Linux <asm-generic/socket.h>
_BPF_RET_K = 0x06  # classic BPF "return the constant": 0 = keep no byte of the packet, i.e. drop it


class _Settable(Protocol):
    def setsockopt(self, level: int, option: int, value: bytes, /) -> None: ...


def stop_admitting(listeners: Iterable[_Settable]) -> bool:
    """Drop every new connection attempt on `listeners` (a socket filter that keeps nothing) while
    the connections already established stay in the accept queue, to be accepted and served.
    False where the system has no socket filters (then closing is as abrupt as before)."""
    if not sys.platform.startswith("linux"):
        return False
    drop_everything = (ctypes.c_uint8 * 8).from_buffer_copy(struct.pack("HBBI", _BPF_RET_K, 0, 0, 0))
    program = struct.pack("HP", 1, ctypes.addressof(drop_everything))  # struct sock_fprog (native layout)
    try:
        for listener in listeners:
            listener.setsockopt(socket.SOL_SOCKET, _SO_ATTACH_FILTER, program)
    except OSError:
        return False
    return True
