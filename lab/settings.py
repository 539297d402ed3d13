"""Django settings for Kafka Lab.

Driven by the environment where it matters:

* ``LAB_DATA_DIR``: where the lab keeps its state (SQLite database, managed
  ZooKeeper, broker logs); default ``var/`` at the top of the checkout.
* ``DJANGO_DEBUG``: ``1`` (default) for development, ``0`` in production.
* ``DJANGO_SECRET_KEY``: required when DEBUG is off; a development key otherwise.
* ``DJANGO_ALLOWED_HOSTS``: comma-separated; default loopback names.
* ``LAB_ZOOKEEPER``: ``host:port,...`` of the ZooKeeper the lab uses. ``make run``
  (``python -m lab.serve``) starts a managed server and sets it.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def _env_flag(name: str, default: bool) -> bool:
    value = os.environ.get(name, "").strip().lower()
    if not value:
        return default
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be 1/0, true/false, yes/no or on/off, not {value!r}")


LAB_DATA_DIR = Path(os.environ.get("LAB_DATA_DIR", "").strip() or BASE_DIR / "var")
LAB_ZOOKEEPER = os.environ.get("LAB_ZOOKEEPER", "").strip()
# Set by lab.serve when it started the ZooKeeper itself: where its config and log are.
LAB_ZOOKEEPER_MANAGED_DIR = os.environ.get("LAB_ZOOKEEPER_MANAGED_DIR", "").strip()
LAB_KAFKA_VERSION = "Kafka 3.x in ZooKeeper mode"

DEBUG = _env_flag("DJANGO_DEBUG", True)

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "").strip()
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is off")
    SECRET_KEY = "django-insecure-kafka-lab-development-only"  # used only when DEBUG is on

ALLOWED_HOSTS = [
    host.strip()
    for host in os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]").split(",")
    if host.strip()
]

INSTALLED_APPS = [
    "daphne",  # first: its runserver serves ASGI and websockets
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "template_partials",
    "lab.apps.LabConfig",
    "lab.accounts.apps.AccountsConfig",
    "lab.classroom.apps.ClassroomConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "lab.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

ASGI_APPLICATION = "lab.asgi.application"

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# One process serves the lab, so the in-memory layer is enough; a Redis layer
# slots in here when the lab runs on several processes.
CHANNEL_LAYERS = {"default": {"BACKEND": "lab.runtime.layers.LabChannelLayer"}}

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": LAB_DATA_DIR / "db.sqlite3",
    }
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = LAB_DATA_DIR / "static"

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {"lab": {"handlers": ["console"], "level": "INFO", "propagate": False}},
}
