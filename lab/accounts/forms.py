"""Login forms that count failures and refuse past the limit (lab.accounts.throttle): the lab's own
login page and the Django admin's."""

from __future__ import annotations

from typing import Any

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError

from lab.accounts import throttle


class ThrottledLogin:
    """Mixed into an AuthenticationForm: refused past the limit before the password is even checked."""

    throttled: throttle.TooManyAttempts | None = None

    def clean(self) -> dict[str, Any]:
        form: Any = self
        username = str(form.cleaned_data.get("username") or "")
        try:
            throttle.check(throttle.LOGIN, form.request, username)
        except throttle.TooManyAttempts as error:
            self.throttled = error
            raise ValidationError(error.message, code="throttled") from None
        try:
            cleaned: dict[str, Any] = super().clean()  # type: ignore[misc]
        except ValidationError as error:
            if error.code == "invalid_login":
                throttle.failed(throttle.LOGIN, form.request, username)
            raise
        throttle.forget_account(throttle.LOGIN, username)
        return cleaned


class LoginForm(ThrottledLogin, AuthenticationForm):
    pass


class AdminLoginForm(ThrottledLogin, AdminAuthenticationForm):
    """The admin's login: staff, and instructors (who edit exercises there; lab/admin_site.py)."""

    def confirm_login_allowed(self, user: Any) -> None:
        from lab.access import is_instructor

        if user.is_staff or not user.is_active or not is_instructor(user):
            super().confirm_login_allowed(user)
