"""What every browser page shares: access rules, pagination, the home page.

Reading needs a login (`LOGIN_URL` is the admin login page); changing
anything needs a staff account, a POST and a CSRF token. The CSRF check is
Django's middleware; `staff_action` adds the rest, in the order a user
meets them: not logged in → login page, logged in but not staff → 403,
wrong method → 405.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Page, Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import render

from hyperguild.contributions import home_counts

PAGE_SIZE = 25


def staff_action(view: Callable) -> Callable:
    """Login (redirect), then staff (403), then POST only (405)."""

    @login_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not request.user.is_staff:
            raise PermissionDenied("changing the brain or the training data needs a staff account")
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        return view(request, *args, **kwargs)

    return wrapped


def staff_page(view: Callable) -> Callable:
    """A page that only shows something staff can act on (forms, previews, exports): login, then staff."""

    @login_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not request.user.is_staff:
            raise PermissionDenied("this page needs a staff account")
        return view(request, *args, **kwargs)

    return wrapped


def paginate(request: HttpRequest, queryset, per_page: int = PAGE_SIZE) -> tuple[Page, str]:
    """The requested page (bad numbers fall back to the first or last) and the query string without `page`."""
    page = Paginator(queryset, per_page).get_page(request.GET.get("page"))
    params = request.GET.copy()
    params.pop("page", None)
    encoded = params.urlencode()
    return page, (encoded + "&") if encoded else ""


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """Where a reviewer starts: what is waiting (counts registered by the apps) and where to go."""
    return render(request, "hyperguild/home.html", home_counts())
