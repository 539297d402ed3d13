"""Production settings from the environment: ``manage.py check --deploy`` passes, and each variable does its part.

Each case runs Django in a subprocess with only the environment given, as a server would start.
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from lab.settings import database_from_url

SQLITE_WAL = {"init_command": "PRAGMA journal_mode=WAL", "transaction_mode": "IMMEDIATE", "timeout": 20}

REPO = Path(__file__).resolve().parent.parent

_SHOW = (
    "import json, lab.settings as s; "
    "print(json.dumps({'debug': s.DEBUG, 'hosts': s.ALLOWED_HOSTS, 'redirect': s.SECURE_SSL_REDIRECT, "
    "'session_secure': s.SESSION_COOKIE_SECURE, 'csrf_secure': s.CSRF_COOKIE_SECURE, "
    "'hsts': s.SECURE_HSTS_SECONDS, 'subdomains': s.SECURE_HSTS_INCLUDE_SUBDOMAINS, "
    "'proxy': getattr(s, 'SECURE_PROXY_SSL_HEADER', None), 'trusted': s.CSRF_TRUSTED_ORIGINS, "
    "'db': s.DATABASES['default'], 'layer': s.CHANNEL_LAYERS['default']}, default=str))"
)


def _env(tmp_path: Path, **env: str) -> dict[str, str]:
    clean = {
        k: v for k, v in os.environ.items() if not k.startswith(("LAB_", "DJANGO_", "DATABASE_", "REDIS_"))
    }
    return {**clean, "LAB_DATA_DIR": str(tmp_path), **env}


def _production(tmp_path: Path, **env: str) -> dict[str, str]:
    return _env(
        tmp_path,
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_ALLOWED_HOSTS="lab.example.org",
        **env,
    )


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True, check=False, timeout=120
    )


def _settings(env: dict[str, str]) -> dict[str, object]:
    done = _run(["-c", _SHOW], env)
    assert done.returncode == 0, done.stderr
    shown: dict[str, object] = json.loads(done.stdout)
    return shown


def test_check_deploy_passes_with_the_production_environment(tmp_path: Path) -> None:
    done = _run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], _production(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues" in done.stdout


def test_check_deploy_fails_with_the_development_defaults(tmp_path: Path) -> None:
    done = _run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], _env(tmp_path))
    assert done.returncode != 0
    for warning in ("security.W018", "security.W008", "security.W012", "security.W016", "security.W004"):
        assert warning in done.stderr, warning  # DEBUG, no SSL redirect, insecure cookies, no HSTS


def test_production_needs_a_secret_key(tmp_path: Path) -> None:
    env = _production(tmp_path)
    del env["DJANGO_SECRET_KEY"]
    done = _run(["manage.py", "check"], env)
    assert done.returncode != 0
    assert "DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is off" in done.stderr


def test_production_is_https_with_secure_cookies_and_hsts(tmp_path: Path) -> None:
    shown = _settings(_production(tmp_path))
    assert shown["debug"] is False
    assert shown["hosts"] == ["lab.example.org"]
    assert shown["redirect"] is True
    assert shown["session_secure"] is True
    assert shown["csrf_secure"] is True
    assert shown["hsts"] == 31_536_000
    assert shown["subdomains"] is True
    assert shown["proxy"] is None  # X-Forwarded-Proto is trusted only when told there is a proxy
    # SQLite and the in-memory channel layer stay the defaults.
    assert shown["db"]["ENGINE"] == "django.db.backends.sqlite3"  # type: ignore[index]
    assert shown["db"]["NAME"] == str(tmp_path / "db.sqlite3")  # type: ignore[index]
    assert shown["layer"] == {"BACKEND": "lab.runtime.layers.LabChannelLayer"}


def test_behind_a_proxy_and_with_choices_made(tmp_path: Path) -> None:
    shown = _settings(
        _production(
            tmp_path,
            DJANGO_BEHIND_PROXY="1",
            DJANGO_SSL_REDIRECT="0",
            DJANGO_HSTS_SECONDS="600",
            DJANGO_CSRF_TRUSTED_ORIGINS="https://lab.example.org, https://class.example.org",
            DATABASE_URL=f"sqlite:///{tmp_path}/other.sqlite3",
        )
    )
    assert shown["proxy"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert shown["redirect"] is False
    assert shown["hsts"] == 600
    assert shown["trusted"] == ["https://lab.example.org", "https://class.example.org"]
    assert shown["db"] == {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": f"{tmp_path}/other.sqlite3",
        "OPTIONS": SQLITE_WAL,  # whichever file it is
    }


def test_bad_values_are_named(tmp_path: Path) -> None:
    for env, message in (
        ({"DJANGO_HSTS_SECONDS": "a year"}, "DJANGO_HSTS_SECONDS must be a whole number"),
        ({"DJANGO_BEHIND_PROXY": "maybe"}, "DJANGO_BEHIND_PROXY must be 1/0"),
        ({"DATABASE_URL": "mysql://x/y"}, "DATABASE_URL must start with postgres:// or sqlite:///"),
    ):
        done = _run(["manage.py", "check"], _production(tmp_path, **env))
        assert done.returncode != 0
        assert message in done.stderr


@pytest.mark.parametrize(
    ("variable", "value", "module", "extra"),
    [
        ("DATABASE_URL", "postgres://lab:pw@db:5432/lab", "psycopg", "postgres"),
        ("REDIS_URL", "redis://cache:6379/0", "channels_redis", "redis"),
    ],
)
def test_postgres_and_redis_come_with_their_extras(
    tmp_path: Path, variable: str, value: str, module: str, extra: str
) -> None:
    env = _production(tmp_path, **{variable: value})
    if importlib.util.find_spec(module) is None:
        done = _run(["manage.py", "check"], env)
        assert done.returncode != 0
        assert f"{variable} is set, but {module} is not installed: pip install -e '.[{extra}]'" in done.stderr
    else:
        shown = _settings(env)
        if variable == "REDIS_URL":
            assert shown["layer"] == {
                "BACKEND": "lab.runtime.redis_layer.LabRedisChannelLayer",
                "CONFIG": {"hosts": [{"address": value, "socket_timeout": 30}]},
            }
        else:
            assert shown["db"]["ENGINE"] == "django.db.backends.postgresql"  # type: ignore[index]


def test_database_urls_parse_into_djangos_settings() -> None:
    assert database_from_url(
        "postgres://lab:p%40ss%2Fword@db.example.org:6432/kafka_lab?sslmode=require"
    ) == {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "kafka_lab",
        "USER": "lab",
        "PASSWORD": "p@ss/word",
        "HOST": "db.example.org",
        "PORT": "6432",
        "OPTIONS": {"sslmode": "require"},
    }
    assert database_from_url("postgresql://localhost/lab")["HOST"] == "localhost"
    assert database_from_url("postgresql://localhost/lab")["PORT"] == ""
    assert database_from_url("sqlite:////srv/lab/db.sqlite3") == {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": "/srv/lab/db.sqlite3",
        "OPTIONS": SQLITE_WAL,
    }
    with pytest.raises(ImproperlyConfigured, match="names no database"):
        database_from_url("postgres://db.example.org/")
    with pytest.raises(ImproperlyConfigured, match="sqlite:///relative/path"):
        database_from_url("sqlite://")
