"""The listening socket, shared by the scoring server and the replica supervisor."""

from __future__ import annotations

import errno
import socket


def bind(host: str, port: int) -> tuple[socket.socket, str]:
    """A listening socket on `port`, or on a free port when that one is in use; and a note."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    note = ""
    try:
        sock.bind((host, port))
    except OSError as error:
        if error.errno != errno.EADDRINUSE:
            raise
        sock.bind((host, 0))
        note = f"port {port} in use; took {sock.getsockname()[1]}"
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock, note
