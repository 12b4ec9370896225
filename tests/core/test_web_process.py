"""Web processes each listen on a socket of their own that shares the port (hyperguild/web_process.py)."""

from __future__ import annotations

import http.client
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from hyperguild.lib import balance
from hyperguild.web_process import port_taken, shared_socket
from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]


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


def test_a_process_over_its_share_of_connections_lets_one_go_and_a_balanced_one_keeps_them():
    # 50 connections split 27/23: the fuller process is over its share (25) by more than SLACK.
    assert balance.over_share(27, [27, 23], slot=0)
    assert not balance.over_share(23, [27, 23], slot=1)
    assert not balance.over_share(26, [26, 24], slot=0)  # within SLACK of 25
    # A developer's few connections are never moved (3 on one process: share 2, SLACK 1).
    assert not balance.over_share(3, [3, 0], slot=0)
    assert balance.over_share(4, [0, 4], slot=1)
    # A stale or odd count on the board never makes a process think its share is larger.
    assert balance.over_share(10, [10, -5, 0], slot=0)
    # A process that is not running (its slot not written lately) has no share: nothing moves to it.
    assert not balance.over_share(24, [24, None], slot=0)


def test_the_board_is_one_file_every_process_reads_and_writes_its_own_slot(tmp_path):
    path = tmp_path / "web.board"
    first, second = balance.Board(path, 2, 0), balance.Board(path, 2, 1)
    try:
        assert first.counts() == [None, None]  # never written
        first.publish(30)
        second.publish(20)
        assert first.counts() == second.counts() == [30, 20]
        slot_time = balance.SLOT.size * 1 + 8  # the second slot's time written, as if long ago
        struct.pack_into("<d", second.map, slot_time, time.monotonic() - balance.STALE_AFTER - 1)
        assert first.counts() == [30, None]
    finally:
        first.close()
        second.close()
    with pytest.raises(ValueError, match="slot 2 is not one of 2 slots"):
        balance.Board(path, 2, 2)


def test_connections_held_by_one_web_process_move_to_a_second_one_started_later(child_env, tmp_path):
    """Keep-alive connections stay where the kernel put them; without balancing, a process started
    after the clients connected would get none of them."""
    port, board = free_port(), tmp_path / "web.board"
    processes = []

    def start(slot: int) -> subprocess.Popen:
        process = subprocess.Popen(
            [sys.executable, "-m", "hyperguild.web_process", "--host", "127.0.0.1", "--port", str(port),
             "--board", str(board), "--slot", str(slot), "--slots", "2"],
            cwd=ROOT, env=child_env, start_new_session=True,
        )  # fmt: skip
        processes.append(process)
        deadline = time.monotonic() + 60
        while not any(c.status == psutil.CONN_LISTEN and c.laddr.port == port
                      for c in psutil.Process(process.pid).net_connections("tcp")):  # fmt: skip
            assert process.poll() is None, f"web process {slot} exited with {process.returncode}"
            assert time.monotonic() < deadline, f"web process {slot} is not listening after 60 s"
            time.sleep(0.1)
        return process

    clients = [http.client.HTTPConnection("127.0.0.1", port, timeout=10) for _ in range(24)]
    try:
        start(0)
        for client in clients:
            client.request("GET", "/health/live")
            assert client.getresponse().read() and client.sock is not None  # kept alive, on process 0
        def round_trips(rounds: int) -> int:
            closed = 0
            for _ in range(rounds):
                for client in clients:
                    client.request("GET", "/health/live")
                    response = client.getresponse()
                    assert response.status == 200
                    response.read()
                    closed += response.getheader("Connection", "").lower() == "close"
                time.sleep(0.01)  # the fuller process closes at most one connection per balance.MIN_GAP
            return closed

        assert round_trips(3) == 0  # alone, process 0 keeps all 24: its only peer is not running
        start(1)
        # About two closes per connection moved (a reconnection lands on either process), one per MIN_GAP.
        closed = round_trips(60)
        # Balanced: nothing more is closed (and every connection closed above is open again).
        assert round_trips(10) == 0, f"still closing after {closed} closed"
        time.sleep(0.3)  # both write their counts ten times a second
        counts = balance.Board(board, 2, 0).counts()
        assert sum(counts) == len(clients), counts
        assert max(counts) <= len(clients) // 2 + balance.SLACK, f"still uneven: {counts} ({closed} closed)"
        # Each reconnection lands on either process, so moving k connections takes about 2k closes.
        assert closed <= 4 * min(counts), f"{closed} connections closed to move {min(counts)}"
    finally:
        for client in clients:
            client.close()
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
