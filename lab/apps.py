from django.apps import AppConfig
from django.contrib.admin.apps import AdminConfig


class LabConfig(AppConfig):
    name = "lab"
    verbose_name = "Kafka Lab"


class LabAdminConfig(AdminConfig):
    """Django's admin with the lab's site: instructors let in for what is theirs (lab/admin_site.py)."""

    default_site = "lab.admin_site.LabAdminSite"
