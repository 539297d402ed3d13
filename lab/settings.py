"""Django settings for Kafka Lab.

Driven by the environment where it matters:

* ``LAB_DATA_DIR``: where the lab keeps its state (SQLite database, managed
  ZooKeeper, broker logs); default ``var/`` at the top of the checkout.
* ``DJANGO_DEBUG``: ``1`` (default) for development, ``0`` in production.
* ``DJANGO_SECRET_KEY``: required when DEBUG is off; a development key otherwise.
* ``DJANGO_ALLOWED_HOSTS``: comma-separated; default loopback names.
* ``LAB_ZOOKEEPER``: ``host:port,...`` of the ZooKeeper the lab uses. ``make run``
  (``python -m lab.serve``) starts a managed server and sets it.
* ``LAB_LISTEN``: ``host:port`` daphne listens on, set by ``lab.serve``. Off loopback
  (``make run HOST=0.0.0.0``) the lab serves a class: DEBUG defaults to off, the secret key is
  generated once and kept in ``<LAB_DATA_DIR>/secret-key``, the machine's addresses and names are
  allowed hosts (``DJANGO_ALLOWED_HOSTS`` adds more), and it stays plain HTTP (no https redirect,
  no secure-only cookies: a classroom LAN has no TLS; put a TLS proxy in front for anything else).
* ``LAB_WIRE_PORTS`` (``19092-19999``): the ports labs' brokers listen on for Kafka clients, one per
  broker, kept for the life of the lab (``lab.ports``). ``LAB_ADVERTISED_HOST``: the host brokers
  tell clients to connect to; default 127.0.0.1 on loopback, this machine's primary address when
  ``make run HOST=0.0.0.0`` serves a class.

Limits (see README, "Limits"): ``LAB_MAX_LABS_PER_USER`` (10), ``LAB_MAX_LABS_PER_INSTRUCTOR`` (20),
``LAB_MAX_LIVE_LABS`` (40), enforced by ``lab.limits`` on every path that makes a lab.
``LAB_SLEEP_AFTER_S`` (30): how long a lab nobody uses runs before it sleeps (0: never).

Production (see README, "Production settings"): ``DATABASE_URL`` (``postgres://...``, needs the
``postgres`` extra; default SQLite in ``LAB_DATA_DIR``, in WAL mode), ``LAB_REDIS`` or ``REDIS_URL``
(channels' Redis layer; default in-memory; ``make run WORKERS=N`` sets it), ``LAB_MAX_LABS_PER_WORKER`` (20), ``DJANGO_CSRF_TRUSTED_ORIGINS``, ``DJANGO_BEHIND_PROXY``,
``DJANGO_SSL_REDIRECT``, ``DJANGO_SECURE_COOKIES``, ``DJANGO_HSTS_SECONDS``,
``DJANGO_HSTS_INCLUDE_SUBDOMAINS``, ``DJANGO_HSTS_PRELOAD``: with DEBUG off, HTTPS is the default
everywhere and ``manage.py check --deploy`` passes.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

from lab.hosts import LISTEN_ENV_VAR, parse_listen, served_hosts, wire_hosts

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


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, not {value!r}") from None


def _env_at_least_one(name: str, default: int) -> int:
    value = _env_int(name, default)
    if value < 1:
        raise ImproperlyConfigured(f"{name} must be 1 or more, not {value}")
    return value


def _env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def _needs(module: str, extra: str, variable: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise ImproperlyConfigured(
            f"{variable} is set, but {module} is not installed: pip install -e '.[{extra}]'"
        )


# SQLite in WAL mode: readers never wait for the writer, nor the writer for readers (a lab's pages
# read while its driver thread saves). A writer waits up to 20 s for another instead of failing at
# once. Transactions begin IMMEDIATE, taking the write lock at BEGIN: in WAL mode a transaction that
# reads and then writes fails with "database is locked" if another writer committed in between, which
# waiting cannot cure; one that holds the lock from the start never meets that.
SQLITE_OPTIONS: dict[str, Any] = {
    "init_command": "PRAGMA journal_mode=WAL",
    "transaction_mode": "IMMEDIATE",
    "timeout": 20,  # seconds: sqlite3's busy timeout
}


def sqlite_database(path: str | Path) -> dict[str, Any]:
    return {"ENGINE": "django.db.backends.sqlite3", "NAME": path, "OPTIONS": dict(SQLITE_OPTIONS)}


def database_from_url(url: str) -> dict[str, Any]:
    """Django's DATABASES entry for ``postgres://user:password@host:port/name?sslmode=require``
    (``postgresql://`` too) or ``sqlite:///relative/path`` / ``sqlite:////absolute/path``."""
    parts = urlsplit(url)
    if parts.scheme in ("postgres", "postgresql", "pgsql"):
        name = unquote(parts.path.lstrip("/"))
        if not name:
            raise ImproperlyConfigured(
                "DATABASE_URL names no database: postgres://user:password@host:port/NAME"
            )
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": name,
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": unquote(parts.hostname or ""),
            "PORT": str(parts.port or ""),
            "OPTIONS": dict(parse_qsl(parts.query)),
        }
    if parts.scheme == "sqlite":
        path = url[len("sqlite:///") :] if url.startswith("sqlite:///") else ""
        if not path:
            raise ImproperlyConfigured(
                "DATABASE_URL for SQLite is sqlite:///relative/path or sqlite:////absolute/path"
            )
        return sqlite_database(path)
    raise ImproperlyConfigured(
        f"DATABASE_URL must start with postgres:// or sqlite:///, not {parts.scheme!r}"
    )


LAB_DATA_DIR = Path(os.environ.get("LAB_DATA_DIR", "").strip() or BASE_DIR / "var")
LAB_ZOOKEEPER = os.environ.get("LAB_ZOOKEEPER", "").strip()
# Set by lab.serve when it started the ZooKeeper itself: where its config and log are.
LAB_ZOOKEEPER_MANAGED_DIR = os.environ.get("LAB_ZOOKEEPER_MANAGED_DIR", "").strip()
LAB_KAFKA_VERSION = "Kafka 3.x in ZooKeeper mode"

# How many labs a person and the server may have (lab/limits.py). Every lab runs (make run starts them
# all), so the server cap is what one lab process on a 2-core machine serves without stalling; later
# it becomes per worker. Instructors prepare a demo per lesson and try exercises and scenarios first.
LAB_MAX_LABS_PER_USER = _env_at_least_one("LAB_MAX_LABS_PER_USER", 10)
LAB_MAX_LABS_PER_INSTRUCTOR = _env_at_least_one("LAB_MAX_LABS_PER_INSTRUCTOR", 20)
LAB_MAX_LIVE_LABS = _env_at_least_one("LAB_MAX_LIVE_LABS", 40)

# A lab nobody watches, uses or connects to sleeps after this many wall seconds: its clock stops and
# its thread parks until someone needs it again (lab/runtime/sleep.py). 0: never sleep.
LAB_SLEEP_AFTER_S = float(os.environ.get("LAB_SLEEP_AFTER_S", "").strip() or 30)

# Where lab.serve listens: on another machine's reach (not loopback) the lab serves a class.
LAB_LISTEN = parse_listen(os.environ.get(LISTEN_ENV_VAR, ""))
LAB_CLASSROOM = LAB_LISTEN is not None and not LAB_LISTEN.loopback

# Each broker of a lab listens for Kafka clients on a port of its own, kept for the life of the lab
# (lab/ports.py): taken from this range, below Linux's ephemeral ports (32768-60999) so that no
# outgoing connection holds one, and wide enough for every lab the server takes at 12 brokers each.
LAB_WIRE_PORTS = os.environ.get("LAB_WIRE_PORTS", "").strip() or "19092-19999"
# The listeners bind where the site does and advertise the host a client reaches (lab.hosts.wire_hosts):
# 127.0.0.1 on loopback; this machine's primary address for a class, or LAB_ADVERTISED_HOST.
_WIRE = wire_hosts(LAB_LISTEN, os.environ.get("LAB_ADVERTISED_HOST", ""))
LAB_WIRE_BIND_HOST = _WIRE.bind
LAB_ADVERTISED_HOST = _WIRE.advertised

# A class must never see DEBUG's pages (every URL, tracebacks, settings): off unless asked for.
DEBUG = _env_flag("DJANGO_DEBUG", not LAB_CLASSROOM)
SECRET_KEY_FILE = "secret-key"


def kept_secret(path: Path) -> str:
    """The secret in ``path``, made (random, mode 600) the first time: sessions survive a restart."""
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        text = ""
    if text:
        return text
    path.parent.mkdir(parents=True, exist_ok=True)
    text = secrets.token_urlsafe(50)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text + "\n")
    return text


SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "").strip()
if not SECRET_KEY:
    if LAB_CLASSROOM:
        SECRET_KEY = kept_secret(LAB_DATA_DIR / SECRET_KEY_FILE)
    elif not DEBUG:
        raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is off")
    else:
        SECRET_KEY = "django-insecure-kafka-lab-development-only"  # used only when DEBUG is on, on loopback

if LAB_CLASSROOM and LAB_LISTEN is not None:
    # The names a class reaches this machine by, and any the operator adds.
    ALLOWED_HOSTS = list(dict.fromkeys([*served_hosts(LAB_LISTEN), *_env_list("DJANGO_ALLOWED_HOSTS")]))
else:
    ALLOWED_HOSTS = _env_list("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
CSRF_TRUSTED_ORIGINS = _env_list("DJANGO_CSRF_TRUSTED_ORIGINS")  # e.g. https://lab.example.org

# Production is HTTPS: secure cookies, a redirect to https, HSTS. Behind a proxy that terminates TLS,
# DJANGO_BEHIND_PROXY=1 trusts its X-Forwarded-Proto (and only then: a client could send it too).
# A classroom served by lab.serve is plain HTTP on a LAN: a redirect to https would reach nothing and
# secure-only cookies would never come back, so there HTTPS is the operator's choice (or a proxy's).
BEHIND_PROXY = _env_flag("DJANGO_BEHIND_PROXY", False)
if BEHIND_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
_HTTPS = not DEBUG and (not LAB_CLASSROOM or BEHIND_PROXY)
SECURE_SSL_REDIRECT = _env_flag("DJANGO_SSL_REDIRECT", _HTTPS)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = _env_flag("DJANGO_SECURE_COOKIES", _HTTPS)
SECURE_HSTS_SECONDS = _env_int("DJANGO_HSTS_SECONDS", 31_536_000 if _HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = _env_flag("DJANGO_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = _env_flag("DJANGO_HSTS_PRELOAD", False)
# Preloading commits a domain to HTTPS in browsers for good: an operator's choice, so its reminder is off.
SILENCED_SYSTEM_CHECKS = [] if SECURE_HSTS_PRELOAD else ["security.W021"]

INSTALLED_APPS = [
    "daphne",  # first: its runserver serves ASGI and websockets
    "lab.apps.LabAdminConfig",  # django.contrib.admin, with instructors let in for exercises
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
    "ninja",  # installed so /api/docs serves the Swagger UI files ninja ships, not a CDN's
    "lab.api.apps.ApiConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "lab.request_size.RequestSizeMiddleware",  # before the CSRF check reads the form
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "lab.context_processors.RoleMiddleware",
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
                "lab.context_processors.people",
                "lab.context_processors.limits",
            ],
        },
    },
]

ASGI_APPLICATION = "lab.asgi.application"

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# One process (labs run in the web process): channels' in-memory layer, made cheap for fan-out.
# LAB_REDIS (set by lab.serve when it runs lab workers, or by hand: redis://host:port/0 or host:port;
# REDIS_URL is its older name): channels-redis, which the web process and the lab workers share.
CHANNEL_LAYERS: dict[str, Any] = {"default": {"BACKEND": "lab.runtime.layers.LabChannelLayer"}}
REDIS_URL = os.environ.get("LAB_REDIS", "").strip() or os.environ.get("REDIS_URL", "").strip()
if REDIS_URL:
    _needs("channels_redis", "redis", "LAB_REDIS" if os.environ.get("LAB_REDIS", "").strip() else "REDIS_URL")
    REDIS_URL = REDIS_URL if "://" in REDIS_URL else f"redis://{REDIS_URL}/0"
    # channels-redis waits on a channel with a blocking pop of up to 5 s; redis-py 8 reads with a shorter
    # socket timeout by default, which would end every idle wait with an error.
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "lab.runtime.redis_layer.LabRedisChannelLayer",
            "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": 30}]},
        }
    }
# Labs over worker processes (lab.worker): how many labs one worker runs at most.
# LAB_WORKERS > 0 (set by lab.serve --workers N): the web process runs no lab, lab.labs.live_of answers
# a RemoteLab that reaches the lab's owner over the channel layer.
LAB_MAX_LABS_PER_WORKER = _env_at_least_one("LAB_MAX_LABS_PER_WORKER", 20)
LAB_WORKERS = int(os.environ.get("LAB_WORKERS", "").strip() or 0)
# How long the web process waits for a lab's worker to answer a command before it says so (504).
LAB_WORKER_TIMEOUT_S = float(os.environ.get("LAB_WORKER_TIMEOUT_S", "").strip() or 30)
# A page watching a lab on a worker says so again this often; the worker forgets it after three misses
# (its web process died), so the lab may sleep.
LAB_PAGE_RENEW_S = float(os.environ.get("LAB_PAGE_RENEW_S", "").strip() or 20)

DATABASES = {"default": sqlite_database(LAB_DATA_DIR / "db.sqlite3")}
DATABASE_URL = os.environ.get("DATABASE_URL", "").strip()
if DATABASE_URL:
    _database = database_from_url(DATABASE_URL)
    DATABASES = {"default": _database}
    if _database["ENGINE"] == "django.db.backends.postgresql":
        _needs("psycopg", "postgres", "DATABASE_URL")

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
    "filters": {"without_traceback": {"()": "lab.errors.WithoutTraceback"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler"},
        "console_one_line": {"class": "logging.StreamHandler", "filters": ["without_traceback"]},
    },
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "lab": {"handlers": ["console"], "level": "INFO", "propagate": False},
        "django.security.DisallowedHost": {"handlers": ["console_one_line"], "propagate": False},
    },
}
