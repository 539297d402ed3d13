"""The Django admin, for administrators (staff) and, for what is theirs to edit, instructors.

Instructors are let in (Django's own site admits staff only) and see only what a model admin grants
them by role (``InstructorsMay``): the exercises. Accounts and roles are theirs on the People page,
not here: the admin's user form could make anyone a superuser.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from lab.access import is_instructor


class LabAdminSite(admin.AdminSite):
    site_header = "Kafka Lab administration"
    site_title = "Kafka Lab admin"
    index_title = "Administration"

    def has_permission(self, request: HttpRequest) -> bool:
        user: Any = request.user
        return bool(user.is_active and (user.is_staff or is_instructor(user)))


class InstructorsMay(admin.ModelAdmin):  # type: ignore[type-arg]
    """A model admin instructors use in full (view, add, change, delete), besides staff with the permissions."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return super().has_module_permission(request) or is_instructor(request.user)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_view_permission(request, obj) or is_instructor(request.user)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return super().has_add_permission(request) or is_instructor(request.user)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_change_permission(request, obj) or is_instructor(request.user)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_delete_permission(request, obj) or is_instructor(request.user)
