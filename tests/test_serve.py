"""`python -m lab.serve`, what `make run` runs: serves the lab, and leaves nothing behind when stopped."""

from __future__ import annotations

import json
import re
import signal
import socket
import stat
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.lab_server import LabServer
from tests.processes import alive, pids_mentioning, wait_until
from tests.scenarios.helpers import RUNAWAY

pytestmark = pytest.mark.long(80)


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        body: bytes = response.read()
        return body.decode()


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_serves_with_a_managed_zookeeper_and_stops_everything(tmp_path: Path, how: signal.Signals) -> None:
    server = LabServer(tmp_path)
    try:
        url = server.start()
        home = _get(url + "/")
        assert "ZooKeeper answers at" in home
        assert "started by <code>make run</code>" in home
        javas = pids_mentioning(str(tmp_path / "zookeeper"))
        assert len(javas) == 1, f"expected one managed ZooKeeper, found {javas}"
        assert _get(url + "/static/vendor/htmx.min.js").startswith("var htmx=")

        assert server.stop(how) == 0, server.output()
    finally:
        server.stop(signal.SIGKILL)
    # lab.serve stopped and reaped ZooKeeper itself before exiting: nothing to wait for.
    assert not alive(javas[0])
    assert pids_mentioning(str(tmp_path)) == []
    output = server.output()
    assert "ZooKeeper: stopping..." in output
    assert output.rstrip().endswith("Kafka Lab stopped.")
    assert (tmp_path / "db.sqlite3").is_file(), "migrate should have created the database in LAB_DATA_DIR"
    assert f"Database: SQLite {tmp_path / 'db.sqlite3'} (WAL) (migrated)" in output


def test_lab_zookeeper_is_used_and_nothing_started(tmp_path: Path, zookeeper: str) -> None:
    server = LabServer(tmp_path, zookeeper=zookeeper)
    try:
        url = server.start()
        home = _get(url + "/")
        assert f"LAB_ZOOKEEPER={zookeeper}" in home
        assert "ZooKeeper answers at" in home
        assert pids_mentioning(str(tmp_path)) == []  # no java with a config under our data dir
        assert not (tmp_path / "zookeeper").exists()
    finally:
        assert server.stop() == 0, server.output()


def test_port_in_use_is_refused_clearly_before_starting_anything(tmp_path: Path) -> None:
    server = LabServer(tmp_path)
    with socket.create_server(("127.0.0.1", server.port)):
        assert server.run_to_exit() == 1
    output = server.output()
    assert f"Port {server.port} on 127.0.0.1 is in use" in output
    assert f"make run PORT={server.port + 1}" in output
    assert "Traceback" not in output
    assert not (tmp_path / "zookeeper").exists()


def test_without_java_it_serves_on_the_memory_store_and_says_what_to_install(tmp_path: Path) -> None:
    server = LabServer(tmp_path, env={"PATH": str(tmp_path / "empty-bin")})
    try:
        url = server.start()
        login = _get(url + "/accounts/login/")
        assert "No ZooKeeper configured" in login
        assert "apt-get install -y zookeeper" in login
    finally:
        assert server.stop() == 0, server.output()
    output = server.output()
    assert "Cannot start ZooKeeper: Java is not installed" in output
    assert "Labs keep their metadata in memory" in output
    assert "apt-get install -y zookeeper" in output
    assert "Traceback" not in output


def test_make_run_makes_the_demo_user_and_lab_and_says_how_to_log_in(tmp_path: Path, zookeeper: str) -> None:
    server = LabServer(tmp_path, zookeeper=zookeeper)
    try:
        server.start()
        password = (tmp_path / "demo-password").read_text().strip()
        output = server.output()
        assert f"Log in as demo with password {password} (kept in {tmp_path / 'demo-password'})" in output
        assert "Labs: demo (the demo lab is /labs/demo/)" in output
    finally:
        assert server.stop() == 0, server.output()
    assert "Labs: stopping..." in server.output()


def _api(url: str, token: str, body: Any = None) -> Any:
    request = urllib.request.Request(
        url,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_sigterm_stops_the_server_within_seconds_while_scenario_runs_run(
    tmp_path: Path, zookeeper: str
) -> None:
    server = LabServer(tmp_path, zookeeper=zookeeper)
    try:
        url = server.start()
        token = server.manage("createtoken", "demo", "runaway").strip().splitlines()[-1]
        runs = [_api(url + "/api/scenarios/runs", token, {"yaml": RUNAWAY}) for _ in range(3)]

        def running() -> bool:
            statuses = [_api(f"{url}/api/scenarios/runs/{run['id']}", token) for run in runs[:2]]
            return all(s["status"] == "running" and s["step"] >= 3 for s in statuses)

        assert wait_until(running, 60), server.output()
        began = time.monotonic()
        assert server.stop(signal.SIGTERM, timeout_s=60) == 0, server.output()
        took = time.monotonic() - began
    finally:
        server.stop(signal.SIGKILL)
    assert took < 5, f"SIGTERM took {took:.1f} s with two runaway runs and one queued"
    assert server.output().rstrip().endswith("Kafka Lab stopped.")


def _outbound_address() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect(("192.0.2.1", 9))
        address: str = sock.getsockname()[0]
    return address


def _status(url: str, host: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_make_run_for_a_class_serves_with_debug_off_a_kept_secret_and_friendly_pages(
    tmp_path: Path, zookeeper: str
) -> None:
    server = LabServer(tmp_path, zookeeper=zookeeper, host="0.0.0.0")
    try:
        server.start()
        address = _outbound_address()
        assert f"Classroom: students open http://{address}:{server.port}/" in server.output()
        assert "DEBUG is off" in server.output()
        # A student's machine reaches it by this machine's address.
        status, login = _status(f"http://{address}:{server.port}/accounts/login/")
        assert status == 200
        assert "Log in to Kafka Lab" in login
        # DEBUG is off: a missing page is the friendly one, with no list of the site's URLs.
        status, missing = _status(f"http://{address}:{server.port}/no/such/page/")
        assert status == 404
        assert 'data-status="404"' in missing
        assert "URLconf" not in missing
        assert "DEBUG = True" not in missing
        # Static files are still served with DEBUG off (the ASGI static handler, no other server).
        assert _get(f"http://{address}:{server.port}/static/lab.css").count("prefers-color-scheme") >= 1
        assert _get(server.url + "/static/vendor/htmx.min.js").startswith("var htmx=")
        # A name it does not serve is refused, and said so.
        status, refused = _status(server.url + "/", host="evil.example")
        assert status == 400
        assert "does not answer to the name" in refused
        secret = tmp_path / "secret-key"
        assert secret.is_file()
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    finally:
        assert server.stop() == 0, server.output()
    assert "Traceback" not in server.output()


def _accepts(hostport: str) -> bool:
    """Something listens at ``host:port``."""
    host, _, port = hostport.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=2):
            return True
    except OSError:
        return False


def _bootstrap(output: str) -> str:
    found = re.search(r"Kafka clients: the demo lab's bootstrap.servers=(\S+)", output)
    assert found, output
    return found.group(1)


def test_make_run_for_a_class_advertises_brokers_at_the_address_students_reach(
    tmp_path: Path, zookeeper: str
) -> None:
    """A student's client is told where every broker is: this machine's address, not 127.0.0.1 (which
    would send it to the student's own machine)."""
    from kafka import KafkaConsumer

    server = LabServer(tmp_path, zookeeper=zookeeper, host="0.0.0.0")
    try:
        server.start()
        address = _outbound_address()
        bootstrap = _bootstrap(server.output())
        assert [b.rpartition(":")[0] for b in bootstrap.split(",")] == [address] * 3
        assert f"on 0.0.0.0, advertised as {address}" in server.output()
        # The site answers once the demo lab is started, not once its brokers listen: under load the
        # listeners opened a moment later, and kafka-python gave up on the refused ports after 2 s.
        assert wait_until(lambda: all(_accepts(b) for b in bootstrap.split(",")), 60), server.output()
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, request_timeout_ms=20_000)
        try:
            assert "orders" in consumer.topics()
            brokers = consumer._client.cluster.brokers()  # what the lab's Metadata answer advertised
            assert {(b.host, b.port) for b in brokers} == {
                (address, int(b.rpartition(":")[2])) for b in bootstrap.split(",")
            }
        finally:
            consumer.close()
    finally:
        assert server.stop() == 0, server.output()


def test_make_run_on_loopback_advertises_loopback_and_a_bad_port_range_is_named(tmp_path: Path) -> None:
    server = LabServer(tmp_path / "ok")
    try:
        server.start()
        bootstrap = _bootstrap(server.output())
        assert all(b.startswith("127.0.0.1:") for b in bootstrap.split(","))
    finally:
        assert server.stop() == 0, server.output()
    bad = LabServer(tmp_path / "bad", env={"LAB_WIRE_PORTS": "9092"})
    assert bad.run_to_exit() == 1
    assert "LAB_WIRE_PORTS is a range of TCP ports like 19092-19999" in bad.output()
