"""Web processes each listen on a socket of their own that shares the port (hyperguild/web_process.py)."""

from __future__ import annotations

import selectors
import socket

from hyperguild.web_process import port_taken, shared_socket
from tests.conftest import free_port


def test_connections_are_spread_over_the_sockets_that_share_a_port():
    port = free_port()
    first, second = shared_socket("127.0.0.1", port), shared_socket("127.0.0.1", port)
    clients = []
    try:
        for _ in range(64):
            clients.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        accepted = {first: 0, second: 0}
        with selectors.DefaultSelector() as selector:
            for listener in accepted:
                listener.setblocking(False)
                selector.register(listener, selectors.EVENT_READ)
            while sum(accepted.values()) < len(clients):
                ready = selector.select(timeout=5)
                assert ready, f"connections waiting in no accept queue: {accepted}"
                for key, _ in ready:
                    connection, _ = key.fileobj.accept()
                    connection.close()
                    accepted[key.fileobj] += 1
        # A shared accept queue could hand all 64 to one socket; the kernel's hash does not.
        assert accepted[first] > 0 and accepted[second] > 0, accepted
    finally:
        for sock in [*clients, first, second]:
            sock.close()


def test_a_port_another_program_listens_on_is_reported_taken():
    port = free_port()
    assert port_taken("127.0.0.1", port) is False
    with socket.socket() as other:
        other.bind(("127.0.0.1", port))
        other.listen()
        assert port_taken("127.0.0.1", port) is True
