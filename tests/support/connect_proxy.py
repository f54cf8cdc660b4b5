"""A small HTTP ``CONNECT`` proxy (what a corporate egress proxy is to a kubeconfig's ``proxy-url``):
it opens the tunnel each client asks for, relays bytes both ways, and records the targets. Real
sockets; the TLS inside the tunnel is between the client and the API server."""

from __future__ import annotations

import select
import socket
import threading

from tests.support import hanging


class ConnectProxy(hanging.Listening):
    """``url`` relays ``CONNECT host:port`` tunnels; ``tunnels`` lists the targets asked for."""

    thread_name = "connect-proxy"

    def __init__(self) -> None:
        self.tunnels: list[str] = []
        super().__init__()

    def _accepted(self, conn: socket.socket) -> None:
        self._open.append(conn)
        threading.Thread(target=self._tunnel, args=(conn,), daemon=True).start()

    def _tunnel(self, client: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = client.recv(4096)
            if not chunk:
                client.close()
                return
            head += chunk
        method, target, _ = head.split(b"\r\n", 1)[0].decode().split(" ", 2)
        if method != "CONNECT":
            client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            client.close()
            return
        host, _, port = target.rpartition(":")
        try:
            upstream = socket.create_connection((host, int(port)), timeout=5)
        except OSError:
            client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            client.close()
            return
        self._open.append(upstream)
        self.tunnels.append(target)
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        self._relay(client, upstream)

    @staticmethod
    def _relay(client: socket.socket, upstream: socket.socket) -> None:
        with client, upstream:
            while True:
                readable, _, _ = select.select([client, upstream], [], [], 60)
                if not readable:
                    return
                for source in readable:
                    other = upstream if source is client else client
                    try:
                        data = source.recv(65536)
                    except OSError:
                        return
                    if not data:
                        return
                    other.sendall(data)
