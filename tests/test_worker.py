"""Labs on lab workers (``make run WORKERS=N``), end to end: the real server with its workers, Redis and
ZooKeeper as processes, reached over HTTP as a person's browser or a script does."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from kazoo.client import KazooClient

from lab.runtime.courier import Courier
from lab.runtime.ownership import Ownership
from lab.runtime.redis_layer import LabRedisChannelLayer
from tests.lab_server import REPO, LabServer
from tests.processes import alive, wait_until

pytestmark = pytest.mark.long(210)


@pytest.fixture
def kazoo(zookeeper: str) -> Iterator[KazooClient]:
    client = KazooClient(hosts=zookeeper)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


def _serve(tmp_path: Path, zookeeper: str, workers: int, **env: str) -> LabServer:
    server = LabServer(tmp_path, zookeeper=zookeeper, workers=workers, env=env)
    server.start(timeout_s=120)
    return server


def _ownership(server: LabServer, zookeeper: str) -> Ownership:
    return Ownership(zookeeper, (server.data_dir / "instance-id").read_text().strip())


def _logged_in(server: LabServer) -> requests.Session:
    session = requests.Session()
    session.get(server.url + "/accounts/login/", timeout=10)
    password = (server.data_dir / "demo-password").read_text().strip()
    answer = session.post(
        server.url + "/accounts/login/",
        data={"username": "demo", "password": password, "csrfmiddlewaretoken": session.cookies["csrftoken"]},
        timeout=10,
    )
    assert answer.url == server.url + "/", answer.text[:500]
    return session


def _act(
    session: requests.Session, server: LabServer, slug: str, action: str, **params: Any
) -> requests.Response:
    return session.post(
        f"{server.url}/labs/{slug}/act/{action}/",
        data=params,
        headers={"X-CSRFToken": session.cookies["csrftoken"], "HX-Request": "true"},
        timeout=90,
    )


def test_the_web_process_runs_no_lab_and_a_command_reaches_the_labs_owner(
    tmp_path: Path, zookeeper: str, kazoo: KazooClient
) -> None:
    server = _serve(tmp_path, zookeeper, workers=2)
    zk = _ownership(server, zookeeper)
    try:
        workers = zk.workers()
        assert [w.name for w in workers] == ["1", "2"]
        assert server.process is not None
        assert all(w.pid != server.process.pid and alive(w.pid) for w in workers)
        lease = zk.lease("demo")
        assert lease is not None, "make run placed the demo lab on a worker"
        assert f"demo on worker {lease.worker}" in server.output()

        session = _logged_in(server)
        # The home page lists the lab as running, from the line its worker put on its lease.
        home = session.get(server.url + "/", timeout=30).text
        assert wait_until(lambda: "1 alive" in session.get(server.url + "/", timeout=30).text, 30), home
        page = session.get(server.url + "/labs/demo/", timeout=30)
        assert page.status_code == 200
        assert 'id="cluster-map"' in page.text  # the page's fragments, drawn by the lab's worker
        ports = re.search(r"the demo lab's bootstrap\.servers=(\S+)", server.output())
        assert ports is not None
        assert ports.group(1) in page.text  # and its "connect your own client" panel
        admin = session.get(server.url + "/labs/demo/admin/", timeout=60)  # the topic admin asks by command
        assert admin.status_code == 200
        assert "orders" in admin.text

        done = _act(
            session, server, "demo", "topic-create", name="from-web", partitions="1", replication_factor="3"
        )
        assert done.status_code == 200, done.text
        assert "Topic from-web created: 1 partition(s), replication factor 3." in done.text
        # The owner's cluster wrote it to ZooKeeper, in the lab's chroot, as Kafka does.
        chroot = server.manage("shell", "-c", _CHROOT_OF_DEMO).strip().splitlines()[-1]
        assert kazoo.exists(f"{chroot}/brokers/topics/from-web")
        # What the worker changed is saved for the lab's next start (the row's spec).
        assert "from-web" in server.manage("shell", "-c", _TOPICS_OF_DEMO)

        # A person's mistake travels back by Kafka's name, and changes nothing.
        refused = _act(session, server, "demo", "produce", topic="no-such-topic", count="1")
        assert refused.status_code == 400
        assert (
            "ILLEGAL_ARGUMENT: there is no topic &#x27;no-such-topic&#x27;; create it first" in refused.text
        )
        now = zk.lease("demo")
        assert now is not None
        assert (now.worker, now.since) == (lease.worker, lease.since)  # the same owner answered throughout
    finally:
        zk.close()
        assert server.stop() == 0, server.output()
    assert "Workers: stopping (each stops its labs)..." in server.output()
    assert not any(alive(w.pid) for w in workers), "a worker outlived make run"
    # The web process's courier stopped before the Redis it reads: a stop a person sees says nothing wrong.
    assert "Traceback" not in server.output(), server.output()


_EXERCISE_STARTED = (
    "from lab.classroom.models import ExerciseProgress as P; print(bool(P.objects.get().start))"
)
_CHROOT_OF_DEMO = "from lab.models import Lab; print(Lab.objects.get(slug='demo').zookeeper_chroot)"
_TOPICS_OF_DEMO = "from lab.models import Lab; print([t['name'] for t in Lab.objects.get(slug='demo').settings.get('topics', [])])"


def test_over_the_per_worker_cap_the_class_server_is_full(tmp_path: Path, zookeeper: str) -> None:
    server = _serve(tmp_path, zookeeper, workers=1, LAB_MAX_LABS_PER_WORKER="1")
    try:
        token = server.manage("createtoken", "demo", "cap").strip().splitlines()[-1]
        answer = requests.post(
            server.url + "/api/labs",
            json={"name": "Second"},
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        )
        assert answer.status_code == 409, answer.text
        body = answer.json()
        assert body["error"] == "POLICY_VIOLATION"
        assert re.search(
            r"the class server is full: every lab worker \(1\) already runs its 1 labs", body["message"]
        )
        # The lab was made (the limits of lab.limits allowed it) but cannot run: its page says why.
        session = _logged_in(server)
        page = session.get(server.url + "/labs/second/", timeout=60)
        assert page.status_code == 503
        assert "Second cannot run now" in page.text
        assert "the class server is full" in page.text
    finally:
        assert server.stop() == 0, server.output()


def test_a_killed_worker_is_started_again_under_its_name(tmp_path: Path, zookeeper: str) -> None:
    server = _serve(tmp_path, zookeeper, workers=1)
    zk = _ownership(server, zookeeper)
    try:
        [first] = zk.workers()
        os.kill(first.pid, signal.SIGKILL)
        assert wait_until(lambda: [w.pid for w in zk.workers()] not in ([], [first.pid]), 60), server.output()
        [again] = zk.workers()
        assert again.name == "1"
        assert alive(again.pid)
        assert (
            f"Worker 1 (pid {first.pid}) was killed by SIGKILL; starting it again in 0.5 s" in server.output()
        )
        # Its lab came back with it: the one worker there is took it up again.
        assert wait_until(lambda: (lease := zk.lease("demo")) is not None and lease.worker == "1", 60)
    finally:
        zk.close()
        assert server.stop() == 0, server.output()


def test_an_owner_that_does_not_answer_is_a_504_that_says_so(tmp_path: Path, zookeeper: str) -> None:
    server = _serve(tmp_path, zookeeper, workers=1, LAB_WORKER_TIMEOUT_S="2")
    zk = _ownership(server, zookeeper)
    try:
        session = _logged_in(server)
        assert _act(session, server, "demo", "clock-pause").status_code == 200
        [owner] = zk.workers()
        os.kill(owner.pid, signal.SIGSTOP)  # alive, holding its lease, answering nothing
        try:
            stuck = _act(session, server, "demo", "clock-resume")
        finally:
            os.kill(owner.pid, signal.SIGCONT)
        assert stuck.status_code == 504
        assert "The lab&#x27;s worker did not answer within" in stuck.text
        again = _act(session, server, "demo", "clock-resume")  # once it answers again, so does the lab
        assert again.status_code == 200, again.text
    finally:
        zk.close()
        assert server.stop() == 0, server.output()


def test_a_worker_without_zookeeper_or_redis_says_what_it_needs(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("LAB_ZOOKEEPER", "LAB_REDIS", "REDIS_URL")}
    done = subprocess.run(
        [sys.executable, "-m", "lab.worker", "--name", "1"],
        env={**env, "LAB_DATA_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "lab.settings"},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "A lab worker needs LAB_ZOOKEEPER and LAB_REDIS (make run WORKERS=N sets both)." in done.stdout


def test_a_lab_made_and_deleted_through_the_api_starts_on_a_worker_and_goes_with_its_data(
    tmp_path: Path, zookeeper: str, kazoo: KazooClient
) -> None:
    server = _serve(tmp_path, zookeeper, workers=2)
    zk = _ownership(server, zookeeper)
    try:
        token = server.manage("createtoken", "demo", "labs").strip().splitlines()[-1]
        headers = {"Authorization": f"Bearer {token}"}
        made = requests.post(server.url + "/api/labs", json={"name": "Second"}, headers=headers, timeout=60)
        assert made.status_code == 201, made.text
        assert made.json()["state"] in ("starting", "running")
        lease = zk.lease("second")
        assert lease is not None
        # The API's reads are commands too: the snapshot comes from the lab's worker, and where it listens.
        demo = requests.get(server.url + "/api/labs/demo", headers=headers, timeout=60)
        assert demo.status_code == 200, demo.text
        assert [b["id"] for b in demo.json()["snapshot"]["brokers"]] == [1, 2, 3]
        assert demo.json()["bootstrap_servers"].count("127.0.0.1:") == 3
        listed = requests.get(server.url + "/api/labs", headers=headers, timeout=30).json()
        assert {lab["slug"]: lab["state"] for lab in listed} == {"demo": "running", "second": "running"}
        assert lease.worker in ("1", "2")
        data_dir = tmp_path / "labs" / "second"
        assert wait_until(
            lambda: (data_dir / "meta.properties").exists() or any(data_dir.glob("*/meta.properties")), 60
        )

        gone = requests.delete(server.url + "/api/labs/second", headers=headers, timeout=90)
        assert gone.status_code == 204, gone.text
        assert zk.lease("second") is None
        assert "second" not in zk.placed()  # no worker takes it up again
        assert not data_dir.exists()
        chroot = f"/kafka-lab/{(tmp_path / 'instance-id').read_text().strip()}/second"
        assert kazoo.exists(chroot) is None
    finally:
        zk.close()
        assert server.stop() == 0, server.output()


def test_commands_go_on_after_the_managed_redis_is_killed_and_started_again(
    tmp_path: Path, zookeeper: str
) -> None:
    server = _serve(tmp_path, zookeeper, workers=1)
    try:
        session = _logged_in(server)
        assert _act(session, server, "demo", "clock-pause").status_code == 200
        found = re.search(r"Redis: redis://\S+ \(managed, pid (\d+)", server.output())
        assert found is not None, server.output()
        redis_pid = int(found.group(1))
        os.kill(redis_pid, signal.SIGKILL)
        assert wait_until(lambda: "Redis serves again" in server.output(), 30), server.output()
        # The first command after it: every process's old connections fail once, and are replaced.
        again = _act(session, server, "demo", "clock-resume")
        assert again.status_code == 200, again.text
        assert "Clock running at 1x." in again.text
    finally:
        assert server.stop() == 0, server.output()


def test_a_page_whose_web_process_died_stops_keeping_its_lab_awake(tmp_path: Path, zookeeper: str) -> None:
    # Renewals every 0.4 s against a 2 s renewal period: a page lapses after three missed (6 s), so a loaded
    # machine's slow answers (a status round trip can take seconds under load) do not look like a dead page.
    server = _serve(tmp_path, zookeeper, workers=1, LAB_PAGE_RENEW_S="2", LAB_SLEEP_AFTER_S="1")
    zk = _ownership(server, zookeeper)
    found = re.search(r"Redis: (redis://\S+) \(managed", server.output())
    assert found is not None
    # This test plays a web process: its page subscribes to the demo lab, renews, then stops (it "died").
    page = Courier(
        LabRedisChannelLayer(hosts=[{"address": found.group(1), "socket_timeout": 30}]), name="page"
    )
    frames: list[dict[str, Any]] = []

    async def got(message: dict[str, Any]) -> None:
        frames.append(message)

    page.serve(got)
    try:
        [owner] = zk.workers()
        watch = {"type": "lab.command", "op": "subscribe", "slug": "demo", "channel": page.channel}

        def status() -> dict[str, Any]:
            asked = {"type": "lab.command", "op": "status", "slug": "demo"}
            answer: dict[str, Any] = page.request(owner.channel, asked, 10).result(15)
            return answer

        page.send(owner.channel, watch).result(5)
        assert wait_until(lambda: any(f.get("type") == "lab.frame" for f in frames), 15)  # the full state
        # The full state comes at once, drawn from what the lab's frames drew: the lab may still be
        # starting (its page says so), and runs soon after.
        assert wait_until(lambda: status()["state"] == "running", 60)
        watched_until = time.monotonic() + 4
        while time.monotonic() < watched_until:  # renewed: the lab stays awake though its sleep is 1 s
            page.send(owner.channel, watch).result(5)
            assert not status()["asleep"]
            time.sleep(0.4)
        assert sum(f.get("type") == "lab.frame" and "lab-frame" in f.get("html", "") for f in frames) >= 1
        # No renewal any more: after three missed renewals the page no longer counts, and the lab sleeps.
        assert wait_until(lambda: status()["asleep"], 30)
    finally:
        page.close()
        zk.close()
        assert server.stop() == 0, server.output()


def test_without_zookeeper_the_labs_run_in_the_web_process_and_it_says_why(tmp_path: Path) -> None:
    server = LabServer(
        tmp_path, env={"PATH": str(tmp_path / "empty-bin")}, workers=2
    )  # no java: no ZooKeeper
    try:
        server.start(timeout_s=120)
        assert requests.get(server.url + "/accounts/login/", timeout=10).status_code == 200
    finally:
        assert server.stop() == 0, server.output()
    output = server.output()
    assert (
        "Workers: none, since lab workers need ZooKeeper (their labs' owners are recorded there)." in output
    )
    assert "Labs: demo (the demo lab is /labs/demo/)" in output  # run here, on the memory store
    assert not (tmp_path / "workers").exists()
    assert "Traceback" not in output


def test_an_exercise_started_with_workers_is_graded_on_the_labs_worker(
    tmp_path: Path, zookeeper: str
) -> None:
    server = _serve(tmp_path, zookeeper, workers=2)
    zk = _ownership(server, zookeeper)
    try:
        session = _logged_in(server)
        started = session.post(
            server.url + "/exercises/1-partitions-and-offsets/start/",
            data={"csrfmiddlewaretoken": session.cookies["csrftoken"]},
            timeout=60,
        )
        assert started.status_code == 200, started.text[:500]
        slug = started.url.rstrip("/").rsplit("/", 1)[-1]
        assert started.url == f"{server.url}/labs/{slug}/"
        lease = zk.lease(slug)
        assert lease is not None, "the exercise's lab runs on a worker"
        # The exercise's hook (its setup, its checks) lives with the lab on its worker (the web process runs
        # no lab): the snapshot it takes when the setup has played is saved by the worker.
        assert 'id="exercise-checks"' in session.get(f"{server.url}/labs/{slug}/", timeout=30).text
        assert wait_until(
            lambda: server.manage("shell", "-c", _EXERCISE_STARTED).strip().endswith("True"), 90
        )
    finally:
        zk.close()
        assert server.stop() == 0, server.output()
