"""Sign-in, the Tokens page and the OAuth discovery paths that describe nothing: a person makes, names, lists and revokes their own tokens.

A new token is shown once, on the page that made it; only its hash is kept.
The page also lists the person's recent activity: each request made with one of
their tokens or an OAuth grant (people.models.CredentialUse).
"""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone

from hyperguild.lib.typed import AuthenticatedHttpRequest
from ledger.costs import own_spend
from people.actions import TokenRequestError, do_create_personal_token, do_revoke_personal_token
from people.auth import known_scopes
from people.models import CredentialUse, PersonalToken
from people.permissions import role_scopes

ACTIVITY_ROWS = 50
LIFETIMES = (7, 30, 90, 180, 365)


class LoginView(auth_views.LoginView):
    """hyperguild's own sign-in page: every active account signs in here, staff or not."""

    template_name = "hyperguild/login.html"
    redirect_authenticated_user = True


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="where you use it, e.g. laptop or ci")
    scopes = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple)
    expires_days = forms.TypedChoiceField(coerce=int, label="expires after")

    def __init__(self, *args: Any, user: User | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Only the scopes the person's role allows now (people.permissions): a token can hold no more.
        allowed = set(role_scopes(user, list(known_scopes())))
        cast(forms.MultipleChoiceField, self.fields["scopes"]).choices = [
            (scope, f"{scope} — {what}") for scope, what in known_scopes().items() if scope in allowed
        ]
        lifetimes = [days for days in LIFETIMES if days <= settings.HYPERGUILD_TOKEN_MAX_DAYS]
        cast(forms.TypedChoiceField, self.fields["expires_days"]).choices = [
            (str(days), f"{days} days") for days in lifetimes
        ]
        self.fields["expires_days"].initial = str(settings.HYPERGUILD_TOKEN_DEFAULT_DAYS)


def _page(
    request: AuthenticatedHttpRequest, form: TokenForm, *, new_secret: str = "", status: int = 200
) -> HttpResponse:
    tokens = PersonalToken.objects.filter(user=request.user)
    activity = CredentialUse.objects.filter(user=request.user)[:ACTIVITY_ROWS]
    return render(
        request,
        "hyperguild/tokens.html",
        {
            "form": form,
            "tokens": tokens,
            "activity": activity,
            "new_secret": new_secret,
            "now": timezone.now(),
            "default_days": settings.HYPERGUILD_TOKEN_DEFAULT_DAYS,
            "spend": own_spend(request.user),
        },
        status=status,
    )


@login_required
def tokens(request: AuthenticatedHttpRequest) -> HttpResponse:
    if request.method == "GET":
        return _page(request, TokenForm(user=request.user))
    if request.method != "POST":
        return HttpResponseNotAllowed(["GET", "POST"])
    form = TokenForm(request.POST, user=request.user)
    if not form.is_valid():
        return _page(request, form, status=400)
    data = form.cleaned_data
    try:
        issued = do_create_personal_token(
            request.user, name=data["name"], scopes=data["scopes"], expires_days=data["expires_days"]
        )
    except TokenRequestError as exc:
        form.add_error(None, exc.message)
        return _page(request, form, status=400)
    # Shown once, in this answer: never stored, never in a redirect or a message cookie.
    return _page(request, TokenForm(user=request.user), new_secret=issued.secret, status=201)


@login_required
def revoke_token(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    # Only one's own: another person's token id is a 404, as if it did not exist.
    token = get_object_or_404(PersonalToken, pk=pk, user=request.user)
    do_revoke_personal_token(token)
    messages.success(request, f"Revoked {token.prefix} ({token.name}); it opens nothing any more.")
    return redirect("hyperguild-tokens")


def well_known_not_found(request: HttpRequest, rest: str = "") -> JsonResponse:
    """An OAuth discovery path that describes nothing here: say so in JSON, not an HTML 404."""
    return JsonResponse(
        {
            "error": "not_found",
            "error_description": "no OAuth metadata here; see /.well-known/oauth-protected-resource/mcp/<endpoint>",
        },
        status=404,
    )
