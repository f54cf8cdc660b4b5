"""Servers that fail the way a wedged API server does, for the API client's timeout tests: real local
sockets, not a model of the Kubernetes API (the fault is the point, not the API).

* :class:`Silent` accepts every connection and never answers: it reads nothing and sends nothing,
  as a server whose process is stopped or whose handler is stuck does.
* :class:`Unaccepting` never accepts: its backlog is full, so a new connection's SYN is dropped and
  the client's connect waits, as behind a black-holing firewall.
* :class:`RetryAfter` answers every request with one status and a ``Retry-After`` header (an API
  server shedding load, asking for hours).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType
from typing import Self


class Listening:
    """A local TCP server whose thread hands each accepted connection to :meth:`_accepted`; ``url``
    is where it listens. A context manager that closes the listener and every connection in
    ``_open``. Subclasses set their own state before calling ``__init__`` (it starts the thread)."""

    thread_name = "listening-server"

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._open: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, name=self.thread_name, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._listener.getsockname()[:2]
        return host, port

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:  # closed
                return
            self._accepted(conn)

    def _accepted(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        for conn in self._open:
            with contextlib.suppress(OSError):
                conn.close()
        self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class Silent(Listening):
    """``url`` accepts connections and never answers; ``accepted`` counts them."""

    thread_name = "silent-server"

    @property
    def accepted(self) -> int:
        return len(self._open)

    def _accepted(self, conn: socket.socket) -> None:
        self._open.append(conn)


class Unaccepting:
    """A listening socket that never accepts, its backlog filled first: connecting to ``url`` hangs
    in the TCP handshake."""

    def __init__(self) -> None:
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(0)
        self._fillers: list[socket.socket] = []
        # Linux queues backlog + 1 connections; fill the queue so the next SYN is dropped.
        for _ in range(4):
            filler = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            filler.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                filler.connect(self._listener.getsockname())
            self._fillers.append(filler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def close(self) -> None:
        for filler in self._fillers:
            filler.close()
        self._listener.close()

    def __enter__(self) -> Unaccepting:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RetryAfter(Listening):
    """Answers every request with ``status`` and ``Retry-After: retry_after`` (seconds, as sent);
    ``requests`` counts the requests it answered."""

    thread_name = "retry-after-server"

    def __init__(self, *, status: int = 503, retry_after: str = "3600") -> None:
        self._status, self._retry_after = status, retry_after
        self.requests = 0
        super().__init__()

    def _accepted(self, conn: socket.socket) -> None:
        threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            pending = b""
            while True:
                try:
                    chunk = conn.recv(65536)
                except OSError:
                    return
                if not chunk:
                    return
                pending += chunk
                while b"\r\n\r\n" in pending:
                    head, _, pending = pending.partition(b"\r\n\r\n")
                    length = _content_length(head)
                    while len(pending) < length:
                        more = conn.recv(65536)
                        if not more:
                            return
                        pending += more
                    pending = pending[length:]
                    self.requests += 1
                    body = b'{"kind":"Status","code":%d,"message":"come back later"}' % self._status
                    conn.sendall(
                        b"HTTP/1.1 %d Busy\r\nRetry-After: %s\r\nContent-Type: application/json\r\n"
                        b"Content-Length: %d\r\n\r\n%s"
                        % (self._status, self._retry_after.encode(), len(body), body)
                    )


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    return 0
