"""The hasher for OAuth client secrets (OAUTH2_PROVIDER["CLIENT_SECRET_HASHER"]).

A client secret is 128 random characters (oauth2_provider.generators.generate_client_secret): nobody can
guess it, so the million PBKDF2 rounds that protect a person's password buy nothing here, and they cost a
third of a second of CPU on every unauthenticated registration of a confidential client (issue 35,
finding 7). Salted PBKDF2 with few rounds keeps the stored value useless to whoever reads the database.
Secrets stored with the default hasher before still check (it stays in PASSWORD_HASHERS).
"""

from __future__ import annotations

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class ClientSecretHasher(PBKDF2PasswordHasher):
    algorithm = "pbkdf2_sha256_client_secret"
    iterations = 1000
