"""A web process runs at most HYPERGUILD_WEB_CONCURRENCY requests at once, in arrival order,
and nothing that waits on another service holds a place (hyperguild/lib/admission.py)."""

from __future__ import annotations

import threading
import time

import pytest

from hyperguild.lib import admission
from hyperguild.lib.http import ServiceClient
from tests.fakes.http import FakeHTTPServer, Request, Response


def arrive_one_by_one(gate: admission.Gate, count: int, target) -> list[threading.Thread]:
    """Start `count` requests, each only once the one before is inside or in the queue."""
    threads = []
    for number in range(count):
        thread = threading.Thread(target=target, args=(number,))
        thread.start()
        threads.append(thread)
        deadline = time.monotonic() + 5
        while gate.running + len(gate.waiting) < number + 1 and time.monotonic() < deadline:
            time.sleep(0.001)
    return threads


def test_no_more_than_the_limit_run_and_the_others_go_in_arrival_order():
    gate = admission.Gate(2)
    running, peak, order = [0], [0], []
    lock = threading.Lock()
    done = [threading.Event() for _ in range(8)]

    def request(number: int) -> None:
        with admission.admitted(gate):
            with lock:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
                order.append(number)
            done[number].wait(5)
            with lock:
                running[0] -= 1

    def wait_for(count: int) -> None:
        deadline = time.monotonic() + 5
        while len(order) < count and time.monotonic() < deadline:
            time.sleep(0.001)

    threads = arrive_one_by_one(gate, 8, request)
    assert order == [0, 1]  # two in, six waiting
    for finished in range(6):  # each request that ends lets in the one that came first
        done[finished].set()
        wait_for(3 + finished)
        assert order == list(range(3 + finished))
    for event in done:
        event.set()
    for thread in threads:
        thread.join(10)
    assert peak[0] == 2
    assert gate.running == 0 and not gate.waiting


def test_a_request_waiting_on_another_service_gives_its_place_to_the_next_and_queues_again():
    calls = threading.Semaphore(0)
    release = threading.Event()

    def slow_service(request: Request) -> Response:
        calls.release()
        release.wait(10)
        return Response(200, {})

    server = FakeHTTPServer(handle=slow_service).start()
    gate = admission.Gate(1)
    entered = threading.Event()
    try:
        client = ServiceClient("slow test service", server.url, timeout=10, retries=0)

        def waits_on_the_service(_: int) -> None:
            with admission.admitted(gate):
                client.post_json("/embed", {"input": "x"})

        def quick(_: int) -> None:
            with admission.admitted(gate):
                entered.set()

        first = threading.Thread(target=waits_on_the_service, args=(0,))
        first.start()
        assert calls.acquire(timeout=5)  # the call is out, waiting for an answer
        assert gate.running == 0  # ... and its place is free
        second = threading.Thread(target=quick, args=(1,))
        second.start()
        assert entered.wait(5)  # the quick request ran meanwhile
        second.join(5)
        release.set()
        first.join(10)
        assert not first.is_alive() and gate.running == 0
    finally:
        release.set()
        server.stop()


def test_leave_gives_the_place_up_for_good_and_only_once():
    gate = admission.Gate(1)
    with admission.admitted(gate):
        assert gate.running == 1
        admission.leave()
        assert gate.running == 0
        admission.leave()
        with admission.outside():  # nothing to give up, nothing to take back
            pass
        assert gate.running == 0
    assert gate.running == 0  # the end of the request gives nothing back twice
    admission.leave()  # outside any request: nothing happens


@pytest.mark.parametrize("limit", [1, 3])
def test_places_are_never_lost_under_contention(limit):
    gate = admission.Gate(limit)
    seen = []
    lock = threading.Lock()

    def request(number: int) -> None:
        for _ in range(50):
            with admission.admitted(gate):
                with lock:
                    seen.append(gate.running)
                if number % 3 == 0:
                    with admission.outside():
                        time.sleep(0.001)

    threads = [threading.Thread(target=request, args=(i,)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert max(seen) <= limit
    assert gate.running == 0 and not gate.waiting
