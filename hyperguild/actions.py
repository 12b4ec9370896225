"""Writes that belong to the service itself."""

from __future__ import annotations

import os
import secrets
import socket
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone
from django_q.models import Schedule
from oauth2_provider.models import get_access_token_model, get_refresh_token_model

from hyperguild.auth import check_scopes, known_scopes, new_personal_token, token_digest
from hyperguild.contributions import schedules, task_queue
from hyperguild.errors import DomainError
from hyperguild.models import (
    ClientRegistrationAttempt,
    CredentialUse,
    McpCancellation,
    McpTask,
    ModelCall,
    PersonalToken,
    RedeemedAuthorizationCode,
    WorkerHeartbeat,
)
from hyperguild.permissions import role_scopes

if TYPE_CHECKING:
    from django.contrib.auth.models import User

HEARTBEAT_NAME = "qcluster"


@transaction.atomic
def do_record_worker_heartbeat(name: str = HEARTBEAT_NAME) -> WorkerHeartbeat:
    beat, _ = WorkerHeartbeat.objects.update_or_create(
        name=name,
        defaults={"beat_at": timezone.now(), "host": socket.gethostname(), "pid": os.getpid()},
    )
    return beat


@transaction.atomic
def do_ensure_schedules() -> list[str]:
    """Create or update the periodic django-q2 schedules the service needs.

    Each app registers (name, func, seconds) providers with
    `hyperguild.contributions.register_schedules`; running this twice changes nothing.
    """
    wanted: list[tuple[str, str, int]] = [
        ("hyperguild-heartbeat", "hyperguild.tasks.heartbeat", settings.HYPERGUILD_WORKER_HEARTBEAT_SECONDS),
        *schedules(),
    ]

    names = []
    for name, func, seconds in wanted:
        # django-q2 schedules count in minutes; sub-minute intervals round up.
        minutes = max(1, round(seconds / 60))
        Schedule.objects.update_or_create(
            name=name,
            defaults={
                "func": func,
                "schedule_type": Schedule.MINUTES,
                "minutes": minutes,
                "repeats": -1,
                "cluster": task_queue(func),
            },
        )
        names.append(name)
    return names


@transaction.atomic
def do_ensure_admin_account(username: str, password: str = "") -> tuple[User | None, str | None]:
    """Create a superuser if there is none.

    Returns (user, generated_password): the password is returned only when
    it was generated here, so the caller can print it once.
    """
    User = get_user_model()
    if User.objects.filter(is_superuser=True).exists():
        return None, None
    generated = None
    if not password:
        generated = password = secrets.token_urlsafe(12)
    user = User.objects.create_superuser(username=username, email="", password=password)
    return user, generated


CANCELLATION_KEEP = timedelta(days=1)


@transaction.atomic
def do_record_mcp_cancellation(endpoint: str, request_id_json: str, reason: str = "") -> None:
    McpCancellation.objects.create(
        endpoint=endpoint, request_id=request_id_json[:300], reason=(reason or "")[:500], created_at=timezone.now()
    )


@transaction.atomic
def do_purge_mcp_cancellations() -> int:
    deleted, _ = McpCancellation.objects.filter(created_at__lt=timezone.now() - CANCELLATION_KEEP).delete()
    return deleted


# McpTask rows are no longer written (issue 49: a long call is its app's job record, supervisor.jobs); the
# rows of tasks started before that are purged when they expire, then the model can go.
@transaction.atomic
def do_purge_expired_mcp_tasks() -> int:
    deleted, _ = McpTask.objects.filter(expires_at__lt=timezone.now()).delete()
    return deleted


def do_purge_credential_uses() -> int:
    """Forget audit rows older than HYPERGUILD_AUDIT_KEEP_DAYS (the tokens keep their own last use)."""
    cutoff = timezone.now() - timedelta(days=settings.HYPERGUILD_AUDIT_KEEP_DAYS)
    deleted, _ = CredentialUse.objects.filter(at__lt=cutoff).delete()
    return deleted


class TokenRequestError(DomainError):
    """A personal token that cannot be made as asked (unknown scope, bad lifetime, no name)."""


@dataclass(frozen=True)
class IssuedToken:
    """A token just made: `secret` is shown once and never stored."""

    token: PersonalToken
    secret: str


def do_create_personal_token(
    user: User, *, name: str, scopes: list[str], expires_days: int | None = None
) -> IssuedToken:
    """Make a personal token for `user`; TokenRequestError, with nothing written, on bad input."""
    name = (name or "").strip()
    if not name or len(name) > 100:
        raise TokenRequestError("A token needs a name of 1 to 100 characters (where it is used, e.g. 'laptop').")
    try:
        ordered = check_scopes(scopes)
    except ValueError as exc:
        raise TokenRequestError(f"{exc}.") from None
    days = settings.HYPERGUILD_TOKEN_DEFAULT_DAYS if expires_days is None else expires_days
    if not 1 <= days <= settings.HYPERGUILD_TOKEN_MAX_DAYS:
        raise TokenRequestError(
            f"A token lives 1 to {settings.HYPERGUILD_TOKEN_MAX_DAYS} days (HYPERGUILD_TOKEN_MAX_DAYS); {days} was asked."
        )
    if not getattr(user, "is_active", False):
        raise TokenRequestError(f"{user} is not an active account; activate it before making it a token.")
    allowed = role_scopes(user, ordered)
    if len(allowed) < len(ordered):
        refused = [scope for scope in ordered if scope not in allowed]
        raise TokenRequestError(
            f"{user.get_username()}'s role does not allow {', '.join(refused)} (roles: docs/people.md); "
            f"it allows {', '.join(role_scopes(user, list(known_scopes()))) or 'no scope'}."
        )
    secret, prefix, digest = new_personal_token()
    now = timezone.now()
    with transaction.atomic():
        token = PersonalToken.objects.create(
            user=user,
            name=name,
            prefix=prefix,
            token_hash=digest,
            scopes=ordered,
            created_at=now,
            expires_at=now + timedelta(days=days),
        )
    return IssuedToken(token, secret)


def do_revoke_personal_token(token: PersonalToken) -> PersonalToken:
    """Revoke a token (idempotent: a revoked token keeps its first revocation time)."""
    with transaction.atomic():
        PersonalToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    token.refresh_from_db()
    return token


# --- OAuth: the registration rate limit and replayed authorization codes (hyperguild.oauth) -----------------

# How long a registration attempt counts against its address, and how long a redeemed code is remembered
# (a replay comes within the code's minute of life, or soon after: a day is ample).
REGISTRATION_WINDOW = timedelta(hours=1)
REDEEMED_CODE_KEPT = timedelta(days=1)


def do_admit_client_registration(address: str | None) -> bool:
    """Count one registration attempt from `address`: False, with nothing written, when it has had its hour's share.

    The limit is HYPERGUILD_OAUTH_REGISTRATIONS_PER_HOUR attempts per address, refused or not.
    """
    now = timezone.now()
    with transaction.atomic():
        # One address's attempts are counted one at a time: concurrent ones must not all see room for one more.
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"hyperguild-oauth-register:{address}"])
        ClientRegistrationAttempt.objects.filter(at__lt=now - REGISTRATION_WINDOW).delete()
        recent = ClientRegistrationAttempt.objects.filter(address=address, at__gte=now - REGISTRATION_WINDOW).count()
        if recent >= settings.HYPERGUILD_OAUTH_REGISTRATIONS_PER_HOUR:
            return False
        ClientRegistrationAttempt.objects.create(address=address, at=now)
    return True


def do_record_redeemed_code(
    code: str, client_id: str, *, access_token_checksum: str, token_family: uuid.UUID | None
) -> None:
    """Remember that `code` was exchanged, and for which tokens (only the code's SHA-256 is kept)."""
    now = timezone.now()
    with transaction.atomic():
        RedeemedAuthorizationCode.objects.filter(redeemed_at__lt=now - REDEEMED_CODE_KEPT).delete()
        RedeemedAuthorizationCode.objects.create(
            code_digest=token_digest(code),
            client_id=client_id,
            access_token_checksum=access_token_checksum,
            token_family=token_family,
            redeemed_at=now,
        )


def do_revoke_tokens_of_replayed_code(code: str, client_id: str) -> int:
    """A redeemed code came back (RFC 6749 §4.1.2): revoke every token issued from it. How many rows were hit."""
    with transaction.atomic():
        redeemed = (
            RedeemedAuthorizationCode.objects.select_for_update()
            .filter(code_digest=token_digest(code), client_id=client_id)
            .first()
        )
        if redeemed is None:
            return 0
        # The family holds the first refresh token and every one rotated from it, with their access tokens.
        get_refresh_token_model().revoke_family(redeemed.token_family)
        deleted, _ = get_access_token_model().objects.filter(token_checksum=redeemed.access_token_checksum).delete()
        redeemed.replayed_at = timezone.now()
        redeemed.save(update_fields=["replayed_at"])
    return 1 + deleted


def do_record_model_call(**values: Any) -> ModelCall:
    """Store one model call (hyperguild.lib.model_calls.record_model_call redacts and caps first).

    Not atomic of its own: inside a caller's transaction the record shares its fate, outside it is
    committed at once (autocommit), which is how the clients call it.
    """
    return ModelCall.objects.create(**values)


def do_mark_model_call(call_id: int, *, outcome: str, error: str) -> None:
    """Record a caller's verdict on an answer the model gave (bad output, degenerate, failed a check)."""
    ModelCall.objects.filter(pk=call_id).update(outcome=outcome, error=error)
