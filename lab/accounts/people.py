"""The People page: an instructor runs the class's accounts without the Django admin.

Add students (or instructors) by name, several at once, each with a generated password shown once;
reset a password (a new one, shown once; the old sessions end with it); set a role; deactivate or
reactivate an account. Administrators' accounts and the instructor's own are refused
(``lab.access.require_may_manage``). Everyone changes their own password on their account page.
"""

from __future__ import annotations

import re
import secrets
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from lab import access
from lab.accounts.models import Profile, Role, role_of, set_role
from lab.hosts import student_urls

MOST_AT_ONCE = 200
ROLE_ERROR = "The role must be student or instructor."


def new_password() -> str:
    """Random, 16 characters: read out or handed over once, then changed by its owner if they like."""
    return secrets.token_urlsafe(12)


def _rows(request: HttpRequest) -> list[dict[str, Any]]:
    User = get_user_model()
    people = User.objects.annotate(lab_count=Count("labs", distinct=True)).order_by("username")
    roles = dict(Profile.objects.values_list("user_id", "role"))
    rows = []
    for person in people:
        administrator = person.is_staff or person.is_superuser
        rows.append(
            {
                "person": person,
                "role": Role.INSTRUCTOR if administrator else roles.get(person.pk, Role.STUDENT),
                "administrator": administrator,
                "you": person.pk == request.user.pk,
            }
        )
    return rows


def _page(request: HttpRequest, *, status: int = 200, **extra: Any) -> HttpResponse:
    context = {
        "login_urls": student_urls(request.scheme, request.get_host(), settings.LAB_LISTEN),
        "rows": _rows(request),
        "roles": Role.choices,
        "names": "",
        "role": Role.STUDENT,
        **extra,
    }
    return render(request, "accounts/people.html", context, status=status)


@never_cache
@require_GET
@login_required
def people(request: HttpRequest) -> HttpResponse:
    access.require_instructor(request.user)
    return _page(request)


def _names(text: str) -> list[str]:
    return [name.strip() for name in re.split(r"[\n,]", text) if name.strip()]


def _check_names(names: list[str]) -> str:
    """What is wrong with the names to add, in a sentence; "" when nothing is."""
    User = get_user_model()
    if not names:
        return "Type at least one user name (one a line, or separated by commas)."
    if len(names) > MOST_AT_ONCE:
        return f"{len(names)} names: add at most {MOST_AT_ONCE} at once."
    field = User._meta.get_field("username")
    seen: set[str] = set()
    for name in names:
        if len(name) > field.max_length:
            return f"{name[:20]}… is longer than {field.max_length} characters."
        try:
            field.run_validators(name)
        except ValidationError:
            return f"{name} is not a user name: letters, digits and @ . + - _ only."
        if name.lower() in seen:
            return f"{name} is listed twice."
        seen.add(name.lower())
    taken = User.objects.filter(username__iregex=r"^(" + "|".join(re.escape(n) for n in names) + r")$")
    if taken:
        return ", ".join(sorted(t.get_username() for t in taken)) + " already has an account."
    return ""


@never_cache  # the answer shows passwords: no browser or proxy keeps it
@require_POST
@login_required
def add(request: HttpRequest) -> HttpResponse:
    """Add accounts (names one a line or comma-separated, one role); each password is shown once."""
    access.require_instructor(request.user)
    text = request.POST.get("names", "")
    role = request.POST.get("role", Role.STUDENT)
    names = _names(text)
    problem = ROLE_ERROR if role not in Role.values else _check_names(names)
    if problem:
        return _page(request, status=400, names=text[:20_000], role=role, names_error=problem)
    User = get_user_model()
    made = []
    with transaction.atomic():
        for name in names:
            password = new_password()
            person = User.objects.create_user(name, password=password)
            set_role(person, role)
            made.append({"username": name, "password": password})
    return _page(request, status=201, made=made, made_role=role)


def _person(username: str) -> Any:
    person = get_user_model().objects.filter(username=username).first()
    if person is None:
        raise Http404("No such person.")
    return person


@never_cache
@require_POST
@login_required
def reset_password(request: HttpRequest, username: str) -> HttpResponse:
    """A new generated password, shown once; the person's open sessions end with the old one."""
    person = _person(username)
    access.require_may_manage(request.user, person)
    password = new_password()
    person.set_password(password)
    person.save(update_fields=["password"])
    return _page(request, made=[{"username": person.get_username(), "password": password}], reset=True)


@require_POST
@login_required
def change_role(request: HttpRequest, username: str) -> HttpResponse:
    person = _person(username)
    access.require_may_manage(request.user, person)
    role = request.POST.get("role", "")
    if role not in Role.values:
        return _page(request, status=400, role_error=ROLE_ERROR, role_error_for=person.get_username())
    if role_of(person) != role:
        set_role(person, role)
        messages.success(
            request, f"{person.get_username()} is now {'an' if role == Role.INSTRUCTOR else 'a'} {role}."
        )
    return redirect("people")


@require_POST
@login_required
def change_active(request: HttpRequest, username: str) -> HttpResponse:
    """Deactivate (cannot log in; their labs and progress are kept) or reactivate an account."""
    person = _person(username)
    access.require_may_manage(request.user, person)
    active = request.POST.get("active") == "1"
    if person.is_active != active:
        person.is_active = active
        person.save(update_fields=["is_active"])
        messages.success(
            request,
            f"{person.get_username()} can log in again."
            if active
            else f"{person.get_username()} is deactivated: they cannot log in; their labs and progress are kept.",
        )
    return redirect("people")


class PasswordChangeView(auth_views.PasswordChangeView):
    """Your own password: the old one, then the new one twice (Django's checks on its strength)."""

    template_name = "accounts/password.html"
    success_url = reverse_lazy("account")

    def form_valid(self, form: Any) -> HttpResponse:
        response = super().form_valid(form)
        messages.success(self.request, "Your password is changed.")
        return response
