"""``python manage.py adduser NAME --role student|instructor [--password-file F]``.

Without a password file, a random password is made and printed once (the lab keeps only its hash).
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from lab.accounts.models import Role, set_role


class Command(BaseCommand):
    help = "Add a user with a role (student or instructor); prints a generated password unless given one."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--role", choices=Role.values, default=Role.STUDENT)
        parser.add_argument(
            "--password-file",
            type=Path,
            help="read the password from this file's first line (not the command line)",
        )
        parser.add_argument("--email", default="")

    def handle(self, *args: Any, **options: Any) -> None:
        User = get_user_model()
        username: str = options["username"].strip()
        if not username:
            raise CommandError("the user name is empty")
        if User.objects.filter(username=username).exists():
            raise CommandError(
                f"there is a user {username!r} already (change their role on the People page, /people/)"
            )
        path: Path | None = options["password_file"]
        generated = path is None
        if path is None:
            password = secrets.token_urlsafe(12)
        else:
            try:
                lines = path.read_text(encoding="utf-8").splitlines()
            except OSError as error:
                raise CommandError(f"cannot read {path}: {error.strerror}") from None
            password = lines[0].strip() if lines else ""
            if not password:
                raise CommandError(f"{path} holds no password on its first line")
        user = User(username=username, email=options["email"])
        try:
            User._meta.get_field("username").run_validators(username)
            validate_password(password, user)
        except ValidationError as error:
            raise CommandError(" ".join(error.messages)) from None
        with transaction.atomic():
            user.set_password(password)
            user.save()
            set_role(user, options["role"])
        self.stdout.write(f"User {username} added, role {options['role']}.")
        if generated:
            self.stdout.write(f"Password (shown once, keep it): {password}")
