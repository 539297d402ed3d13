"""Roles and API tokens.

A user is a student unless their profile says instructor (or they are staff). API tokens are
shown once when created and stored only as a SHA-256 hash with a short prefix to recognise them.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

TOKEN_PREFIX = "klab_"


class Role:
    STUDENT = "student"
    INSTRUCTOR = "instructor"
    values = (STUDENT, INSTRUCTOR)
    choices = ((STUDENT, "Student"), (INSTRUCTOR, "Instructor"))


class Profile(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile")
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.STUDENT)

    def __str__(self) -> str:
        return f"{self.user} ({self.role})"


def role_of(user: Any) -> str:
    if not getattr(user, "is_authenticated", False):
        return "anonymous"
    if user.is_staff:
        return Role.INSTRUCTOR
    profile = Profile.objects.filter(user=user).first()
    return str(profile.role) if profile is not None else Role.STUDENT


def set_role(user: Any, role: str) -> None:
    if role not in Role.values:
        raise ValueError(f"role must be one of {', '.join(Role.values)}, not {role!r}")
    Profile.objects.update_or_create(user=user, defaults={"role": role})


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, db_index=True)
    digest = models.CharField(max_length=64, unique=True)
    created = models.DateTimeField(auto_now_add=True)
    last_used = models.DateTimeField(null=True, blank=True)
    revoked = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created",)

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def active(self) -> bool:
        return self.revoked is None

    @classmethod
    def issue(cls, user: Any, name: str) -> tuple[ApiToken, str]:
        """A new token and its secret; the secret is never stored and cannot be shown again."""
        name = name.strip()
        if not name:
            raise ValueError("a token needs a name (what it is for)")
        if len(name) > 100:
            raise ValueError("a token name has at most 100 characters")
        secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
        token = cls.objects.create(
            user=user, name=name, prefix=secret[: len(TOKEN_PREFIX) + 6], digest=_digest(secret)
        )
        return token, secret

    @classmethod
    def authenticate(cls, secret: str) -> Any | None:
        """The user a bearer secret belongs to, or None (unknown, revoked or inactive user)."""
        if not secret.startswith(TOKEN_PREFIX):
            return None
        token = (
            cls.objects.select_related("user").filter(digest=_digest(secret), revoked__isnull=True).first()
        )
        if token is None or not token.user.is_active:
            return None
        cls.objects.filter(pk=token.pk).update(last_used=timezone.now())
        return token.user

    def revoke(self) -> None:
        if self.revoked is None:
            self.revoked = timezone.now()
            self.save(update_fields=["revoked"])


class FailedAttempt(models.Model):
    """A failed login or join-code guess, kept while it counts (lab.accounts.throttle)."""

    action = models.CharField(max_length=20)  # "login", "join"
    key = models.CharField(max_length=200)  # "address:10.0.0.5", "account:ada"
    at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["action", "key", "at"], name="failed_attempt_lookup")]

    def __str__(self) -> str:
        return f"{self.action} {self.key} at {self.at:%H:%M:%S}"
