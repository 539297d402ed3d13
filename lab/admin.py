"""The admin: labs alongside users."""

from django.contrib import admin

from lab.models import Lab


@admin.register(Lab)
class LabAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "owner", "brokers", "zookeeper_chroot", "created")
    search_fields = ("name", "slug", "owner__username")
