"""A cancellation that reaches another replica than the one running the call."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.utils import timezone

from hyperguild.actions import do_purge_mcp_cancellations, do_record_mcp_cancellation
from hyperguild.mcp.cancellation import request_id_key, session_caller_key
from hyperguild.models import McpCancellation
from tests.conftest import mcp_post, parse_sse, rpc

pytestmark = pytest.mark.django_db(transaction=True)

SESSION = {"Mcp-Session-Id": "replica-test-client"}
CALLER = session_caller_key("replica-test-client")


def start_waiting_call(url: str, request_id) -> tuple[threading.Thread, dict]:
    outcome: dict = {}

    def call() -> None:
        message = rpc(
            "tools/call", {"name": "wait_for_cancel", "arguments": {}, "_meta": {"progressToken": 1}}, request_id
        )
        outcome["response"] = mcp_post(url, message, SESSION)

    caller = threading.Thread(target=call)
    caller.start()
    return caller, outcome


def test_a_cancellation_recorded_by_another_replica_stops_the_call(selftest_endpoint):
    _, state, url = selftest_endpoint
    caller, outcome = start_waiting_call(url, "req-77")
    assert state.started.wait(10)

    # What the replica that received notifications/cancelled writes; nothing is cancelled in this process directly.
    do_record_mcp_cancellation("selftest", request_id_key("req-77", CALLER), "user pressed Esc")

    assert state.cancel_seen.wait(10)
    caller.join(10)
    final = parse_sse(outcome["response"].text)[-1]
    assert final["result"]["isError"] is True


def test_an_old_cancellation_of_a_reused_id_does_not_stop_a_new_call(selftest_endpoint):
    _, state, url = selftest_endpoint
    McpCancellation.objects.create(
        endpoint="selftest", request_id=request_id_key(5, CALLER), created_at=timezone.now() - timedelta(minutes=5)
    )
    caller, _ = start_waiting_call(url, 5)
    assert state.started.wait(10)
    assert not state.cancel_seen.wait(2.5)  # two watcher polls went by
    mcp_post(url, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}, SESSION)
    assert state.cancel_seen.wait(10)
    caller.join(10)


def test_the_cancelled_notification_is_recorded_for_the_other_replicas(selftest_endpoint):
    _, _, url = selftest_endpoint
    message = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9, "reason": "x"}}
    response = mcp_post(url, message, SESSION)
    assert response.status_code == 202
    record = McpCancellation.objects.get()
    assert (record.endpoint, record.request_id, record.reason) == ("selftest", f"{CALLER} 9", "x")


def test_day_old_cancellation_records_are_purged():
    McpCancellation.objects.create(endpoint="brain", request_id="1", created_at=timezone.now() - timedelta(days=2))
    McpCancellation.objects.create(endpoint="brain", request_id="2", created_at=timezone.now())
    assert do_purge_mcp_cancellations() == 1
    assert list(McpCancellation.objects.values_list("request_id", flat=True)) == ["2"]
