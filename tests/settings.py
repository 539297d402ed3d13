"""Settings for the test suite: lab.settings with what tests need changed."""

import atexit
import os
import random
import shutil
import tempfile
from pathlib import Path

from lab.settings import *  # noqa: F403
from lab.settings import sqlite_database

# Anything the lab writes goes to a throwaway directory, never to var/.
LAB_DATA_DIR = Path(tempfile.mkdtemp(prefix="kafka-lab-tests-"))
atexit.register(shutil.rmtree, LAB_DATA_DIR, ignore_errors=True)

# The database the lab runs on: SQLite in a file, WAL, with the lab's own options, so tests with threads
# (two requests at once, a lab's driver saving while a page reads) meet what production meets, not a
# shared in-memory database's table locks. DATABASE_URL (postgres://...) runs the suite on PostgreSQL
# instead: pytest-django makes and drops a test_<name> database beside the one it names.
if not os.environ.get("DATABASE_URL", "").strip():
    DATABASES = {
        "default": {
            **sqlite_database(LAB_DATA_DIR / "db.sqlite3"),
            "TEST": {"NAME": str(LAB_DATA_DIR / "test-db.sqlite3")},
        }
    }
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Each run of the suite takes its labs' Kafka listener ports (lab.ports) from a window of its own, so
# runs side by side on one machine do not all reach for the same first ports: lab.ports passes over a
# port in use, but two runs could pick one in the same instant, before either listens on it.
_WIRE_BASE = random.Random().randrange(20_000, 31_700, 50)
LAB_WIRE_PORTS = f"{_WIRE_BASE}-{_WIRE_BASE + 999}"
