"""A tiny in-process POP3 proxy in front of the real Dovecot, for what Dovecot cannot be
configured to do: lack UIDL (RFC 1939 makes it optional) or PIPELINING (RFC 2449), or
fail to send one message.

Everything else (login, LIST, RETR, DELE, QUIT and their effects on the maildir)
is Dovecot's own answer, forwarded line by line. Commands are handled one at a
time, so a pipelining client still gets its answers in order.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["pop3_proxy"]

_MULTILINE = {b"CAPA", b"RETR", b"TOP"}
_MULTILINE_WITHOUT_ARGUMENT = {b"LIST", b"UIDL"}


def _serve(client: socket.socket, upstream_port: int, hide: frozenset[bytes], refuse_retr: frozenset[int]) -> None:
    try:
        _forward(client, upstream_port, hide, refuse_retr)
    except OSError:
        return  # the client or the server went away: so does the session


def _forward(client: socket.socket, upstream_port: int, hide: frozenset[bytes], refuse_retr: frozenset[int]) -> None:
    with client, socket.create_connection(("127.0.0.1", upstream_port), timeout=30) as upstream:
        from_client = client.makefile("rb")
        from_server = upstream.makefile("rb")
        with from_client, from_server:
            client.sendall(from_server.readline())
            while True:
                line = from_client.readline()
                if not line:
                    return
                words = line.split()
                verb = words[0].upper() if words else b""
                if verb in hide:
                    client.sendall(b"-ERR Unknown command: " + verb + b"\r\n")
                    continue
                if verb == b"RETR" and len(words) > 1 and int(words[1]) in refuse_retr:
                    client.sendall(b"-ERR Message could not be read (test proxy)\r\n")
                    continue
                upstream.sendall(line)
                status = from_server.readline()
                if not status:
                    return
                multiline = status.startswith(b"+OK") and (
                    verb in _MULTILINE or (verb in _MULTILINE_WITHOUT_ARGUMENT and len(words) == 1)
                )
                out = [status]
                while multiline:
                    body_line = from_server.readline()
                    if not body_line:
                        return
                    if verb == b"CAPA" and body_line.strip().upper() in hide:
                        continue
                    out.append(body_line)
                    if body_line == b".\r\n":
                        break
                client.sendall(b"".join(out))
                if verb == b"QUIT":
                    return


@contextmanager
def pop3_proxy(
    upstream_port: int, *, hide: frozenset[str] = frozenset(), refuse_retr: frozenset[int] = frozenset()
) -> Iterator[int]:
    """Run the proxy on a free 127.0.0.1 port for the duration of the block; yield the port.

    ``hide`` names capabilities (``UIDL``, ``PIPELINING``) dropped from CAPA; a hidden
    command is answered -ERR. ``refuse_retr`` names messages RETR fails for.
    """
    hidden = frozenset(name.upper().encode() for name in hide)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    threads: list[threading.Thread] = []
    stopping = threading.Event()

    def accept() -> None:
        while not stopping.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                return
            thread = threading.Thread(target=_serve, args=(client, upstream_port, hidden, refuse_retr), daemon=True)
            thread.start()
            threads.append(thread)

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stopping.set()
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        acceptor.join(timeout=5)
        for thread in threads:
            thread.join(timeout=5)
