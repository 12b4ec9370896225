"""`manage.py token create|list|revoke`: personal tokens for operators (the Tokens page does the same).

    manage.py token create alice --scope brain:read --scope brain:write [--expires-days 30] [--name laptop]
    manage.py token list [alice]
    manage.py token revoke hgp_3f9a2c1b

`create` prints the token alone on its last line (scripts take `| tail -n 1`); it is
never shown again. `revoke` takes the token's prefix (as `list` shows it) or its id.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from people.actions import TokenRequestError, do_create_personal_token, do_revoke_personal_token
from people.auth import known_scopes
from people.models import PersonalToken


class Command(BaseCommand):
    help = "Create, list and revoke people's personal bearer tokens (docs/people.md)."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="make a token for USERNAME and print it (once)")
        create.add_argument("username")
        create.add_argument(
            "--scope",
            action="append",
            default=[],
            dest="scopes",
            help=f"repeat for several; known: {', '.join(known_scopes()) or 'none registered'}",
        )
        create.add_argument(
            "--expires-days",
            type=int,
            default=None,
            help=f"lifetime in days (default {settings.HYPERGUILD_TOKEN_DEFAULT_DAYS})",
        )
        create.add_argument("--name", default="cli", help="what the token is for, shown in lists (default: cli)")
        listing = actions.add_parser("list", help="list tokens (of USERNAME, or everyone's)")
        listing.add_argument("username", nargs="?")
        revoke = actions.add_parser("revoke", help="revoke a token by its prefix (hgp_…) or id")
        revoke.add_argument("token")

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        getattr(self, f"handle_{action}")(**options)

    def handle_create(self, *, username: str, scopes: list[str], expires_days: int | None, name: str, **_: Any) -> str:
        user = self._user(username)
        try:
            issued = do_create_personal_token(user, name=name, scopes=scopes, expires_days=expires_days)
        except TokenRequestError as exc:
            raise CommandError(exc.message) from None
        token = issued.token
        self.stdout.write(
            self.style.SUCCESS(
                f"Token {token.prefix} ({token.name}) for {user.get_username()}: {' '.join(token.scopes)}, "
                f"expires {token.expires_at:%Y-%m-%d %H:%M} UTC. It is shown once, here:"
            )
        )
        self.stdout.write(issued.secret)
        return issued.secret

    def handle_list(self, *, username: str | None = None, **_: Any) -> None:
        tokens = PersonalToken.objects.select_related("user").order_by("user__username", "-created_at")
        if username:
            tokens = tokens.filter(user=self._user(username))
        now = timezone.now()
        for token in tokens:
            used = (
                f"{token.last_used_at:%Y-%m-%d %H:%M} from {token.last_used_ip}" if token.last_used_at else "never used"
            )
            expires = f"{token.expires_at:%Y-%m-%d}" if token.expires_at else "never"
            self.stdout.write(
                f"{token.id}\t{token.prefix}\t{token.user.get_username()}\t{token.name}\t{' '.join(token.scopes)}\t"
                f"{token.state(now)}\texpires {expires}\t{used}"
            )
        self.stdout.write(self.style.SUCCESS(f"{tokens.count()} token(s)"))

    def handle_revoke(self, *, token: str, **_: Any) -> None:
        match = (
            PersonalToken.objects.filter(pk=int(token))
            if token.isdigit()
            else PersonalToken.objects.filter(prefix=token)
        )
        found = list(match[:2])
        if not found:
            raise CommandError(f"No token {token!r}; `manage.py token list` shows prefixes and ids.")
        if len(found) > 1:
            raise CommandError(f"Several tokens start with {token!r}; revoke by id (`manage.py token list`).")
        revoked = do_revoke_personal_token(found[0])
        self.stdout.write(
            self.style.SUCCESS(f"Revoked {revoked.prefix} ({revoked.name}) of {revoked.user.get_username()}.")
        )

    def _user(self, username: str) -> User:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}; create the account in the admin (/admin/auth/user/add/) first.")
        return user
