"""What every browser page shares: access rules, pagination, the home page.

Reading needs a signed-in person (`LOGIN_URL` is hyperguild's own sign-in page);
changing anything needs the role's permission (people.roles: `reviewer`
holds brain.review_note, `curator` agent_sessions.curate_trainingexample; staff
may do everything), a POST and a CSRF token. The CSRF check is Django's
middleware; `role_action` adds the rest, in the order a person meets them: not
signed in → sign-in page, signed in without the permission → 403 (an HTML page,
or the JSON error shape for JSON views), wrong method → 405.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar, cast

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, PermissionsMixin
from django.core.exceptions import PermissionDenied
from django.core.paginator import Page, Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.shortcuts import render

from hyperguild.contributions import home_counts
from hyperguild.errors import error_body

PAGE_SIZE = 25

_View = TypeVar("_View", bound=Callable[..., HttpResponse])  # a decorator hands back the view's own signature


def may(user: AbstractBaseUser | AnonymousUser, permission: str) -> bool:
    """Staff may do everything in the UI; everyone else, active, needs the permission (through a role).

    The same rule as every other door's (people.permissions.role_allows): a browser holds no token scopes,
    so only the role counts."""
    if not getattr(user, "is_active", False):
        return False
    if getattr(user, "is_staff", False):
        return True
    return isinstance(user, PermissionsMixin | AnonymousUser) and user.has_perm(permission)


def _refuse(permission: str, json: bool) -> HttpResponse:
    message = f"this needs the {permission} permission (a role that holds it, see docs/people.md) or a staff account"
    if json:
        return JsonResponse(error_body("permission_denied", message), status=403)
    raise PermissionDenied(message)


def role_action(permission: str, *, json: bool = False) -> Callable[[_View], _View]:
    """Sign-in (redirect), then the permission (403), then POST only (405)."""

    def decorate(view: _View) -> _View:
        @login_required
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not may(request.user, permission):
                return _refuse(permission, json)
            if request.method != "POST":
                return HttpResponseNotAllowed(["POST"])
            return view(request, *args, **kwargs)

        return cast(_View, wrapped)  # the same view behind the checks

    return decorate


def role_page(permission: str) -> Callable[[_View], _View]:
    """A page that only shows what the role can act on (forms, previews, exports): sign-in, then the permission."""

    def decorate(view: _View) -> _View:
        @login_required
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not may(request.user, permission):
                return _refuse(permission, False)
            return view(request, *args, **kwargs)

        return cast(_View, wrapped)  # the same view behind the checks

    return decorate


def staff_action(view: _View) -> _View:
    """Staff only (what no role grants, e.g. the reviewing guidelines): sign-in, then staff (403), then POST only."""

    @login_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_staff:
            raise PermissionDenied("this needs a staff account")
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        return view(request, *args, **kwargs)

    return cast(_View, wrapped)  # the same view behind the checks


def paginate(
    request: HttpRequest,
    queryset: Any,  # whatever Django's Paginator pages: a QuerySet, a list, or an object with count() and slices
    per_page: int = PAGE_SIZE,
) -> tuple[Page[Any], str]:
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
