"""Settings for the test suite: lab.settings with what tests need changed."""

import atexit
import shutil
import tempfile
from pathlib import Path

from lab.settings import *  # noqa: F403

# pytest-django creates the test database in memory; anything else the lab
# writes goes to a throwaway directory, never to var/.
LAB_DATA_DIR = Path(tempfile.mkdtemp(prefix="kafka-lab-tests-"))
atexit.register(shutil.rmtree, LAB_DATA_DIR, ignore_errors=True)
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
