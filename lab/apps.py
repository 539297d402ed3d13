from django.apps import AppConfig
from django.contrib.admin.apps import AdminConfig


class LabConfig(AppConfig):
    name = "lab"
    verbose_name = "Kafka Lab"

    def ready(self) -> None:
        from lab import revocation

        # Open lab pages check again when something may have taken their access away.
        revocation.connect()


class LabAdminConfig(AdminConfig):
    """Django's admin with the lab's site: instructors let in for what is theirs (lab/admin_site.py)."""

    default_site = "lab.admin_site.LabAdminSite"
