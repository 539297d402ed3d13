from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "lab.accounts"
    label = "accounts"
    default_auto_field = "django.db.models.BigAutoField"
    verbose_name = "Accounts and API tokens"
