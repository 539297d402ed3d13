from django.apps import AppConfig
from django.contrib.admin.apps import AdminConfig


class LabConfig(AppConfig):
    name = "lab"
    verbose_name = "Kafka Lab"

    def ready(self) -> None:
        from django.db.models.signals import post_delete

        from lab import revocation
        from lab.labs import lab_row_deleted
        from lab.models import Lab

        # Open lab pages check again when something may have taken their access away.
        revocation.connect()
        post_delete.connect(lab_row_deleted, sender=Lab, weak=False)


class LabAdminConfig(AdminConfig):
    """Django's admin with the lab's site: instructors let in for what is theirs (lab/admin_site.py)."""

    default_site = "lab.admin_site.LabAdminSite"
