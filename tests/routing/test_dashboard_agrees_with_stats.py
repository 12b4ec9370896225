"""The routing dashboard and GET /routing/stats show the same figures for the same window."""

from __future__ import annotations

import re
from dataclasses import asdict

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from tests.routing.conftest import AUTH, FAST, THINKING, log


@pytest.mark.django_db(transaction=True)
def test_the_dashboard_and_routing_stats_agree_on_every_figure_for_the_same_window(asgi_server):
    for _ in range(3):
        log("review", FAST, "floor", "pass", latency_ms=120)
    rescued = log("review", FAST, "sample band", "fail", is_final=False, latency_ms=80, hours_ago=48)
    log("review", THINKING, "fail-open retry", "pass", attempt_of=rescued, latency_ms=900, hours_ago=48)
    log("review", THINKING, "override", "fail", latency_ms=700)
    log("debug", THINKING, "ceil", "pass", latency_ms=1500, hours_ago=120)
    log("debug", FAST, "min samples", "fail", latency_ms=60)
    log("debug", THINKING, "ceil", "pass", hours_ago=480)  # outside a 7-day window

    staff = get_user_model().objects.create_user("router", password="pw-router-123", is_staff=True)
    client = Client()
    client.force_login(staff)
    page = client.get(reverse("supervisor-routing"), {"days": 7})
    stats = httpx.get(f"{asgi_server}/routing/stats", params={"window": 7 * 24}, headers=AUTH).json()

    shown = asdict(page.context["figures"])
    for figure in ("calls", "calls_by_model", "fast_share", "attempts", "outages", "models", "skills"):
        assert shown[figure] == stats[figure], figure
    # The seeded history, as both sides must count it.
    assert stats["calls"] == 7 and stats["attempts"] == 8
    assert stats["fast_share"] == round(4 / 7, 4)  # a fast failure rescued by the thinking model is a thinking call
    assert stats["skills"]["review"]["router_pass_rate"] == 0.75  # 3 of 4 first choices; the override is left out
    assert stats["models"][THINKING] == {
        "attempts": 3,
        "passes": 2,
        "mean_latency_ms": round((900 + 700 + 1500) / 3, 1),
        "outages": 0,
    }

    html = page.content.decode()
    assert f"<b>{stats['calls']}</b><span>routed calls" in html
    assert f"<b>{round(stats['fast_share'] * 100)}%</b><span>went to the fast model" in html
    assert f"<b>{stats['attempts']}</b><span>model calls" in html
    # The tables: the per-skill row and the per-model row read the same figures.
    review = stats["skills"]["review"]
    assert f'<tr><td>review</td><td class="num">{review["calls"]}</td>' in html
    thinking = stats["models"][THINKING]
    row = re.search(rf"<td>{re.escape(THINKING)} <span class=\"badge\">thinking</span></td>(.*?)</tr>", html, re.S)
    assert row is not None
    cells = re.findall(r'<td class="num">([^<]*)</td>', row.group(1))
    assert cells == [str(thinking["attempts"]), str(thinking["passes"]), "1033 ms", str(thinking["outages"])]
