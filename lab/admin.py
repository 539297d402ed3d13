"""The admin: labs alongside users."""

from typing import Any

from django.contrib import admin

from lab.models import Lab


@admin.register(Lab)
class LabAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "owner", "brokers", "zookeeper_chroot", "created")
    search_fields = ("name", "slug", "owner__username")

    def has_add_permission(self, request: Any) -> bool:
        # A lab is made by lab.labs.create_lab (the home page, the API, manage.py createlab), which
        # checks the lab limits and gives it its own data directory and ZooKeeper chroot.
        return False
