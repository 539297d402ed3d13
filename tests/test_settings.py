"""Settings come from the environment where it matters."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_SHOW = (
    "import json, lab.settings as s; "
    "print(json.dumps({'data': str(s.LAB_DATA_DIR), 'db': str(s.DATABASES['default']['NAME']), "
    "'debug': s.DEBUG, 'zk': s.LAB_ZOOKEEPER, 'layer': s.CHANNEL_LAYERS['default']['BACKEND']}))"
)


def _settings(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LAB_", "DJANGO_"))}
    return subprocess.run(
        [sys.executable, "-c", _SHOW],
        cwd=REPO,
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=False,
    )


def test_defaults_keep_state_in_var() -> None:
    shown = json.loads(_settings().stdout)
    assert shown == {
        "data": str(REPO / "var"),
        "db": str(REPO / "var" / "db.sqlite3"),
        "debug": True,
        "zk": "",
        "layer": "lab.runtime.layers.LabChannelLayer",
    }


def test_data_dir_and_zookeeper_from_the_environment(tmp_path: Path) -> None:
    shown = json.loads(_settings(LAB_DATA_DIR=str(tmp_path), LAB_ZOOKEEPER="zk1:2181,zk2:2181").stdout)
    assert shown["db"] == str(tmp_path / "db.sqlite3")
    assert shown["zk"] == "zk1:2181,zk2:2181"


def test_production_needs_a_secret_key() -> None:
    result = _settings(DJANGO_DEBUG="0")
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is off" in result.stderr
    assert json.loads(_settings(DJANGO_DEBUG="0", DJANGO_SECRET_KEY="s3cret").stdout)["debug"] is False


def test_a_malformed_debug_flag_is_named() -> None:
    result = _settings(DJANGO_DEBUG="maybe")
    assert "DJANGO_DEBUG must be 1/0" in result.stderr
