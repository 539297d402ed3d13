"""A lab's Kafka listeners on its page (lab/listening.py, lab/templatetags/listeners.py): the
``bootstrap.servers`` a person copies, each broker's listener as it is, what the clock means for
real clients; the same ports after the server restarts. Real listeners, real sockets, kafka-python."""

from __future__ import annotations

import html
import re
import socket
import subprocess
import sys
import threading
from typing import Any

import pytest
from django.test import Client
from kafka import KafkaConsumer
from pytest_django.fixtures import Settings

from lab.accounts.models import Role, set_role
from lab.classroom.models import Demo, DemoViewer
from lab.labs import live_of, spec_of
from lab.listening import LISTENERS_VIEW, view_of
from lab.models import Lab, LabPort
from lab.ports import ports_of
from lab.runtime.live import Listen, LiveLab
from lab.runtime.manager import runtime
from lab.visuals.clock import speed_label
from lab.visuals.listeners import ListenersView
from tests.labhelpers import make_lab, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("stop_labs")]


@pytest.fixture(autouse=True)
def memory(settings: Settings) -> None:
    settings.LAB_ZOOKEEPER = ""


def _listeners(live: LiveLab, ready: Any = None, timeout_s: float = 20.0) -> ListenersView:
    """The listeners' view of the first frame in which ``ready(view)`` holds (default: every one open)."""
    ready = ready or (lambda v: v.brokers and all(b.open for b in v.brokers))

    def holds(frame: Any) -> bool:
        view = frame.views.get(LISTENERS_VIEW)
        return isinstance(view, ListenersView) and bool(ready(view))

    view = live.wait_for_frame(holds, timeout_s).views[LISTENERS_VIEW]
    assert isinstance(view, ListenersView)
    return view


def _started(lab: Lab) -> LiveLab:
    live = live_of(lab)
    live.ready.result(30)
    return live


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def _topics(bootstrap: str) -> set[str]:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, request_timeout_ms=10_000, api_version_auto_timeout_ms=10_000
    )
    try:
        return set(consumer.topics())
    finally:
        consumer.close()


def _page(client: Client, lab: Lab) -> str:
    response = client.get(f"/labs/{lab.slug}/")
    assert response.status_code == 200
    return response.content.decode()


def test_the_page_shows_bootstrap_servers_and_snippets_that_reach_the_lab(client: Client) -> None:
    ada = make_user()
    client.force_login(ada)  # type: ignore[arg-type]
    lab = make_lab(ada)
    live = _started(lab)
    ports = ports_of(lab)
    bootstrap = ",".join(f"127.0.0.1:{ports[b]}" for b in (1, 2, 3))
    assert _listeners(live).bootstrap_servers == bootstrap
    page = _page(client, lab)
    panel = page[page.index('id="view-connect"') :]
    assert f'id="bootstrap-servers" class="bootstrap-value" readonly value="{bootstrap}"' in panel
    assert 'data-copy="#bootstrap-servers"' in panel
    for b in (1, 2, 3):
        assert re.search(
            rf'data-broker="{b}" data-state="open".*?127\.0\.0\.1:{ports[b]}.*?● open', panel, re.S
        )
    snippets = {
        name: html.unescape(text)
        for name, text in re.findall(
            r'<pre class="snippet-code" id="snippet-([\w-]+)"[^>]*>(.*?)</pre>', panel, re.S
        )
    }
    assert set(snippets) == {"kcat", "kafka-python", "confluent-kafka"}
    assert f"kcat -b {bootstrap} -L" in snippets["kcat"]
    assert f'KafkaProducer(bootstrap_servers="{bootstrap}", acks="all")' in snippets["kafka-python"]
    assert f'"bootstrap.servers": "{bootstrap}"' in snippets["confluent-kafka"]
    assert '"orders"' in snippets["kafka-python"]  # the lab's own topic
    # What the page says is where the lab is: a real client finds its topic there.
    assert "orders" in _topics(bootstrap)


def test_a_killed_broker_s_listener_is_closed_and_its_restart_opens_it(client: Client) -> None:
    ada = make_user()
    client.force_login(ada)  # type: ignore[arg-type]
    lab = make_lab(ada)
    live = _started(lab)
    _listeners(live)
    port = ports_of(lab)[2]
    live.act("kill", {"broker": "2"}).result(30)
    view = _listeners(live, lambda v: [b.state for b in v.brokers] == ["open", "closed", "open"])
    assert "connections are refused" in view.brokers[1].why
    assert _refused(port)
    assert re.search(r'data-broker="2" data-state="closed".*?○ closed', _page(client, lab), re.S)
    live.act("restart", {"broker": "2"}).result(30)
    _listeners(live)
    socket.create_connection(("127.0.0.1", port), timeout=5).close()


def test_a_busy_port_leaves_the_lab_running_and_the_page_says_why(client: Client) -> None:
    ada = make_user()
    client.force_login(ada)  # type: ignore[arg-type]
    lab = make_lab(ada)
    port = ports_of(lab)[2]
    with socket.socket() as squatter:  # another program took broker 2's port since the lab was made
        # As servers do: a connection an earlier test closed on this port may linger in TIME_WAIT.
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        live = _started(lab)
        view = _listeners(live, lambda v: len(v.brokers) == 3 and v.brokers[1].error and v.brokers[0].open)
        assert live.state == "running"
        assert f"port {port} could not be opened" in view.brokers[1].error
        page = _page(client, lab)
        assert re.search(
            rf'data-broker="2" data-state="failed".*?✕ failed.*?port {port} could not be opened: [^<]*in use',
            page,
            re.S,
        )
        # The other brokers serve: a client reaches the cluster through them.
        assert "orders" in _topics(f"127.0.0.1:{ports_of(lab)[1]}")


@pytest.mark.zookeeper
def test_the_same_ports_serve_the_lab_after_the_server_restarts(settings: Settings, zookeeper: str) -> None:
    settings.LAB_ZOOKEEPER = zookeeper  # as make run has it: the lab's metadata outlives the server
    lab = make_lab(make_user(), "Restart me")
    try:
        live = _started(lab)
        before = _listeners(live).bootstrap_servers
        assert "orders" in _topics(before)
        runtime.stop_all()  # the server stops: its listeners close
        assert all(_refused(p) for p in ports_of(lab).values())
        again = _started(Lab.objects.get(pk=lab.pk))  # ...and starts
        assert again is not live
        assert again.state == "running", again.error
        assert _listeners(again).bootstrap_servers == before
        assert "orders" in _topics(before)
    finally:
        runtime.stop_all()
        from lab.engine.metadata.zookeeper import ZooKeeperStore

        store = ZooKeeperStore(zookeeper, chroot=lab.zookeeper_chroot)
        store.delete_chroot()
        store.close()


def test_paused_or_slowed_the_page_says_clients_keep_wall_time(client: Client) -> None:
    ada = make_user()
    client.force_login(ada)  # type: ignore[arg-type]
    lab = make_lab(ada)
    live = _started(lab)
    assert _listeners(live).clock_note == ""
    assert "data-clock-note" not in _page(client, lab)
    live.act("clock-speed", {"rate": "0.1"}).result(10)
    note = _listeners(live, lambda v: v.clock_note).clock_note
    assert speed_label(0.1) in note
    assert "wall time" in note
    assert "request.timeout.ms" in note
    assert "data-clock-note" in _page(client, lab)
    live.act("clock-pause", {}).result(10)
    note = _listeners(live, lambda v: "paused" in v.clock_note).clock_note
    assert "answer nothing until it runs again" in note
    assert "session.timeout.ms" in note
    page = _page(client, lab)
    assert "The clock is paused" in page
    assert "still run in wall time" in page


def test_only_people_who_may_see_the_lab_see_its_listeners_and_a_demo_s_viewers_do(client: Client) -> None:
    teacher = make_user("teacher")
    set_role(teacher, Role.INSTRUCTOR)
    lab = make_lab(teacher, "Class demo")
    _listeners(_started(lab))
    bootstrap = f"127.0.0.1:{ports_of(lab)[1]}"
    grace = make_user("grace")
    client.force_login(grace)  # type: ignore[arg-type]
    response = client.get(f"/labs/{lab.slug}/")
    assert response.status_code == 404
    assert bootstrap not in response.content.decode()
    demo = Demo.objects.create(lab=lab)
    DemoViewer.objects.create(demo=demo, user=grace)
    page = _page(client, lab)  # read-only, and the address is there to point a client at
    assert 'data-readonly="true"' in page
    assert bootstrap in page
    assert 'id="view-connect"' in page


def test_a_lab_made_before_labs_had_listeners_gets_ports_when_it_starts_and_keeps_them() -> None:
    lab = make_lab(make_user(), "Old lab")
    LabPort.objects.filter(lab=lab).delete()
    lab.settings = {k: v for k, v in lab.settings.items() if k != "ports"}
    lab.save(update_fields=["settings"])
    live = _started(Lab.objects.get(pk=lab.pk))
    given = ports_of(lab)
    assert sorted(given) == [1, 2, 3]
    assert Lab.objects.get(pk=lab.pk).settings["ports"] == {str(b): p for b, p in given.items()}
    assert _listeners(live).bootstrap_servers == ",".join(f"127.0.0.1:{given[b]}" for b in (1, 2, 3))


def test_while_the_lab_starts_its_addresses_are_known_and_its_listeners_opening() -> None:
    lab = make_lab(make_user(), "Starting")
    starting = LiveLab(spec_of(lab), zookeeper=None, listen=Listen(advertised_host="10.0.0.5"))  # not started
    view = view_of(starting)
    ports = ports_of(lab)
    assert view.bootstrap_servers == ",".join(f"10.0.0.5:{ports[b]}" for b in (1, 2, 3))
    assert [b.state for b in view.brokers] == ["opening"] * 3
    assert "starting" in view.brokers[0].why


def _first_line_with(command: list[str], wanted: str, timeout_s: float = 30.0) -> str:
    """Run a program that never ends by itself (a consumer) until it prints ``wanted``; that line."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    timer = threading.Timer(timeout_s, process.kill)
    timer.start()
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if wanted in line:
                return line.strip()
        raise AssertionError(f"{command[:2]} ended without printing {wanted!r}")
    finally:
        timer.cancel()
        process.kill()
        process.wait()


def test_the_snippets_run_as_copied_from_the_page(client: Client) -> None:
    ada = make_user()
    client.force_login(ada)  # type: ignore[arg-type]
    lab = make_lab(ada)
    _listeners(_started(lab))
    page = _page(client, lab)
    snippets = {
        name: html.unescape(text)
        for name, text in re.findall(
            r'<pre class="snippet-code" id="snippet-([\w-]+)"[^>]*>(.*?)</pre>', page, re.S
        )
    }
    listing, produce, consume = snippets["kcat"].splitlines()
    brokers = subprocess.run(["bash", "-c", listing], capture_output=True, text=True, timeout=30, check=True)
    assert " 3 brokers:" in brokers.stdout
    subprocess.run(["bash", "-c", produce], timeout=30, check=True)
    # As in a terminal, where kcat writes each record's line at once (into a pipe it would buffer them).
    line = _first_line_with(["bash", "-c", f"exec stdbuf -oL {consume}"], "key1 hello")
    assert line.endswith("key1 hello")
    # The Python ones produce a record too, and their consumers read from the earliest.
    # Each in a group of its own: the one before was killed without leaving my-app, whose coordinator
    # would hold a rebalance until that member's session expired.
    for name in ("kafka-python", "confluent-kafka"):
        program = snippets[name].replace('"my-app"', f'"my-app-{name}"')
        line = _first_line_with([sys.executable, "-u", "-c", program], "hello", timeout_s=60)
        assert "key1" in line, name


def test_a_lab_with_secured_listeners_shows_each_with_its_ca_and_snippets_that_work(
    client: Client, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lab.runtime.commands.users import credentials, upsert_args

    ada = make_user()
    client.force_login(ada)  # type: ignore[arg-type]
    lab = make_lab(ada, listeners=["SASL_SSL"])
    live = _started(lab)
    secured = ports_of(lab, "SASL_SSL")
    bootstrap = ",".join(f"127.0.0.1:{secured[b]}" for b in (1, 2, 3))
    view = _listeners(live, lambda v: v.secured and all(b.open for b in v.secured[0].brokers))
    assert view.secured[0].bootstrap_servers == bootstrap
    page = _page(client, lab)
    panel = page[page.index('id="view-connect"') :]
    assert f'id="bootstrap-sasl_ssl" class="bootstrap-value" readonly value="{bootstrap}"' in panel
    assert "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL" in html.unescape(panel)
    ca_url = f"/labs/{lab.slug}/ca.pem"
    assert f'href="{ca_url}"' in panel
    ca = client.get(ca_url)
    assert ca.status_code == 200
    assert ca["Content-Disposition"] == f'attachment; filename="{lab.slug}-ca.pem"'
    assert ca.content.startswith(b"-----BEGIN CERTIFICATE-----")
    # The snippet, as a person copies it, with the CA saved where it says and the user made.
    for credential in credentials("alice-secret"):
        live.act("user-upsert", upsert_args("alice", credential)).result(30)
    (tmp_path / f"{lab.slug}-ca.pem").write_bytes(ca.content)
    monkeypatch.chdir(tmp_path)
    snippets = {
        name: html.unescape(text)
        for name, text in re.findall(
            r'<pre class="snippet-code" id="snippet-([\w-]+)"[^>]*>(.*?)</pre>', panel, re.S
        )
    }
    producing = snippets["kafka-python-sasl_ssl"].split("consumer =")[0]
    exec(compile(producing, "snippet", "exec"), {})
    assert any(
        e.kind == "client_authenticated" and "User:alice" in e.text
        for e in live.submit(lambda lab: lab.cluster.events()).result(10)
    )


def test_a_lab_without_tls_has_no_ca_to_download(client: Client) -> None:
    ada = make_user()
    client.force_login(ada)  # type: ignore[arg-type]
    lab = make_lab(ada, listeners=["SASL_PLAINTEXT"])
    assert client.get(f"/labs/{lab.slug}/ca.pem").status_code == 404
    other = make_user("bob")
    client.force_login(other)  # type: ignore[arg-type]
    secured = make_lab(ada, "Secured", listeners=["SSL"])
    assert client.get(f"/labs/{secured.slug}/ca.pem").status_code == 404  # not bob's to see
