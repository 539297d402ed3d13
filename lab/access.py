"""Who may see and who may act: one place for every page, htmx endpoint, API call and websocket.

- anonymous: nothing (pages redirect to the login, the API answers 401, websockets are refused);
- a student: their own labs (see and act), and instructors' demos they joined (see only);
- an instructor: every lab (see), their own labs (act), and instructor-only actions.

A lab someone may not see is a 404, never a 403, so its existence does not leak; a lab they may
see but not change (a demo) is a 403 on any action.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import Http404

from lab.accounts.models import Role, role_of
from lab.models import Lab


def is_instructor(user: Any) -> bool:
    return role_of(user) == Role.INSTRUCTOR


def visible_labs(user: Any) -> QuerySet[Lab]:
    if not getattr(user, "is_authenticated", False):
        return Lab.objects.none()
    if is_instructor(user):
        return Lab.objects.all()
    return Lab.objects.filter(Q(owner=user) | Q(demo__viewers__user=user, demo__active=True)).distinct()


def can_view(user: Any, lab: Lab) -> bool:
    return visible_labs(user).filter(pk=lab.pk).exists()


def can_act(user: Any, lab: Lab) -> bool:
    return getattr(user, "is_authenticated", False) and lab.owner_id == user.pk


def lab_for(user: Any, slug: str, *, act: bool = False) -> Lab:
    """The lab, if ``user`` may see it (Http404 otherwise); with ``act``, PermissionDenied unless they own it."""
    lab = visible_labs(user).filter(slug=slug).first()
    if lab is None:
        raise Http404("No such lab.")
    if act and not can_act(user, lab):
        raise PermissionDenied("This lab is shown to you read-only: only its owner can change it.")
    return lab


def require_instructor(user: Any) -> None:
    if not getattr(user, "is_authenticated", False):
        raise PermissionDenied("Log in first.")
    if not is_instructor(user):
        raise PermissionDenied("Only instructors can do this.")


def require_may_manage(user: Any, person: Any) -> None:
    """An instructor manages the class's accounts (add, reset a password, set a role, deactivate):
    not an administrator's (those live in the Django admin) and not their own (a slip would lock
    them out)."""
    require_instructor(user)
    if person.is_staff or person.is_superuser:
        raise PermissionDenied(
            f"{person.get_username()} is an administrator: their account is managed in the Django admin."
        )
    if person.pk == user.pk:
        raise PermissionDenied(
            "Not your own account: change your password on your account page; "
            "another instructor or an administrator changes your role."
        )
