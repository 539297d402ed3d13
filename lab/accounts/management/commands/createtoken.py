"""``python manage.py createtoken USERNAME NAME``: an API token; the secret is printed once, only its hash is kept."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from lab.accounts.models import ApiToken


class Command(BaseCommand):
    help = "Create an API token for a user; prints its secret once (send it as 'Authorization: Bearer ...')."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("name", help="what the token is for, e.g. 'failover script'")

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"there is no user {options['username']!r}")
        if not user.is_active:
            raise CommandError(f"user {user.get_username()} is inactive: a token of theirs would not work")
        try:
            token, secret = ApiToken.issue(user, options["name"])
        except ValueError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"Token {token.name!r} for {user.get_username()} (shown once, keep it):")
        self.stdout.write(secret)
