"""The README's scripting example runs as written."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from lab.cluster import free_ports

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_scripting_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.DOTALL)
    example = next(b for b in blocks if "Cluster.create" in b)
    exec(compile(example, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "RecordMetadata(topic='orders'" in out
    assert "'leader': 2" in out  # broker 1 was killed: the next in-sync replica leads orders-0
    assert "leader_election" in out


def test_the_log_start_is_never_called_lso() -> None:
    # In Kafka the LSO is the last stable offset (transactions); the README may name it only to say so.
    text = README.read_text()
    for found in re.finditer(r"\bLSO\b", text):
        assert "last stable offset" in text[found.start() - 120 : found.end() + 120], found.start()
    assert "the log start, HW and LEO marked" in text


def test_the_secured_listener_commands_work_as_copied(tmp_path: Path) -> None:
    """The README's SASL_SSL commands, as written, on free ports: the cluster, then kcat's three."""
    text = README.read_text()
    block = next(b for b in re.findall(r"```sh\n(.*?)```", text, re.DOTALL) if "--listener SASL_SSL" in b)
    lines = [line for line in block.splitlines() if line and not line.startswith("#")]
    base = free_ports(6)

    def on_free_ports(line: str) -> str:
        return re.sub(r"\b909([2-7])\b", lambda m: str(base + int(m.group(1)) - 2), line)

    serve_line, *kcat_lines = (on_free_ports(line) for line in lines)
    assert serve_line.startswith("python -m lab.cluster ")
    cluster = subprocess.Popen(
        [sys.executable, *shlex.split(serve_line)[1:]],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        said = [cluster.stdout.readline().strip() for _ in range(3)]  # type: ignore[union-attr]
        expected = [on_free_ports(line[2:]) for line in block.splitlines() if line.startswith("# ")]
        assert said == expected, cluster.stderr.read() if cluster.poll() is not None else said  # type: ignore[union-attr]
        outputs = []
        for line in kcat_lines:
            done = subprocess.run(
                line, shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False
            )
            assert done.returncode == 0, (line, done.stderr)
            outputs.append(done.stdout)
        assert "3 brokers" in outputs[0]
        assert outputs[2].strip() == "key1 hello"
    finally:
        cluster.terminate()
        cluster.wait(30)
