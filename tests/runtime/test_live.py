"""A live lab: its driver thread runs commands, keeps the clock, and publishes coalesced frames."""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from channels.layers import InMemoryChannelLayer

from lab.engine.errors import (
    IllegalArgument,
    IllegalState,
    InvalidReplicationFactor,
    LeaderNotAvailable,
    TopicAlreadyExists,
    ZooKeeperNotAvailable,
)
from lab.runtime.broadcast import Broadcaster
from lab.runtime.live import MAX_FRAME_MS, QUIET_TICK_S, LiveLab
from lab.runtime.spec import ClientSpec, LabSpec, TopicSpec
from lab.visuals.frame import plog_key
from lab.zookeeper_server import ManagedZooKeeper
from tests.labhelpers import ALICE_WRITES_ORDERS
from tests.processes import wait_until
from tests.walltime import until_done
from tests.zkoutage import HeldRestart, KillableZooKeeper, kill

pytestmark = pytest.mark.long(55)

FAST = {"zookeeper.session.timeout.ms": "1500"}
# A quiet lab's driver ticks every QUIET_TICK_S (half a second); tests that count quiet ticks tick
# ten times as often, which is all they wait for (the ticks, not the pause between them, are checked).
QUIET_TICK_S_HERE = 0.05


class FakeWall:
    """A wall clock the test moves, so virtual time is exact."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def spec(tmp_path: Path, slug: str = "t", **kw: object) -> LabSpec:
    fields: dict[str, object] = {
        "slug": slug,
        "name": slug,
        "data_dir": str(tmp_path / slug),
        "chroot": f"/kafka-lab/tests/{slug}-{time.time_ns()}",
        "config": FAST,
        "topics": (TopicSpec(name="orders", partitions=3, replication_factor=3),),
    }
    fields.update(kw)
    return LabSpec(**fields)  # type: ignore[arg-type]


@pytest.fixture
def wall() -> FakeWall:
    return FakeWall()


@pytest.fixture
def lab(tmp_path: Path, wall: FakeWall) -> Iterator[LiveLab]:
    # Reading the tree takes a few of the lab's ms on the memory store: read it once, before the test.
    live = LiveLab(
        spec(tmp_path), zookeeper=None, wall=wall, tree_interval_s=3600, quiet_tick_s=QUIET_TICK_S_HERE
    ).start()
    live.ready.result(30)
    assert live.state == "running", live.error
    wall.now += 0.1
    live.wait_for_frame(lambda f: f.views["zookeeper"].count > 0)  # type: ignore[attr-defined]
    yield live
    live.stop()


def now_ms(lab: LiveLab) -> int:
    return int(lab.submit(lambda lab: lab.cluster.now_ms).result(10))


def ticks_later(lab: LiveLab, n: int = 3) -> None:
    start = lab.ticks
    assert wait_until(lambda: lab.ticks >= start + n, 10)


def test_commands_run_on_the_driver_thread_and_only_there(lab: LiveLab) -> None:
    where = lab.submit(lambda lab: threading.current_thread().name).result(10)
    assert where == "lab-t"
    with pytest.raises(IllegalState, match="only the lab's driver thread may touch its cluster"):
        lab.cluster  # noqa: B018


def test_a_kafka_error_comes_back_to_the_caller_and_changes_nothing(lab: LiveLab) -> None:
    with pytest.raises(IllegalState, match="broker 2 is running"):
        lab.act("restart", {"broker": "2"}).result(10)
    with pytest.raises(IllegalArgument, match="broker must be a whole number, not 'two'"):
        lab.act("kill", {"broker": "two"}).result(10)
    with pytest.raises(IllegalArgument, match="there is no control named 'explode'"):
        lab.act("explode", {}).result(10)
    states = lab.submit(lambda lab: [b["state"] for b in lab.cluster.snapshot()["brokers"]]).result(10)
    assert states == ["alive", "alive", "alive"]


def test_znode_timestamps_read_as_the_wall_clock(lab: LiveLab) -> None:
    # Virtual zero is the moment the lab started, so Kafka's epoch-millisecond stamps read as real dates.
    def stamps(live: LiveLab) -> list[int]:
        tree = {n["path"]: n["data"] for n in live.cluster.zookeeper_tree()}
        return [int(json.loads(tree[p])["timestamp"]) for p in ("/controller", "/brokers/ids/1")]

    for stamp in lab.submit(stamps).result(10):
        assert abs(stamp - time.time() * 1000) < 60_000


def test_virtual_time_follows_the_wall_at_the_clocks_rate(lab: LiveLab, wall: FakeWall) -> None:
    start = now_ms(lab)
    wall.now += 1.0
    ticks_later(lab)
    assert now_ms(lab) == start + 1000
    assert lab.act("clock-speed", {"rate": "2"}).result(10) == "Clock speed 2x."
    start = now_ms(lab)
    wall.now += 1.0
    ticks_later(lab)
    assert now_ms(lab) == start + 2000
    assert lab.spec.rate == 2.0
    with pytest.raises(IllegalArgument, match=r"the clock runs at 0\.1x to 10x, not 20x"):
        lab.act("clock-speed", {"rate": "20"}).result(10)


def test_pause_stops_virtual_time_and_step_moves_it(lab: LiveLab, wall: FakeWall) -> None:
    assert lab.act("clock-pause", {}).result(10) == "Clock paused."
    paused_at = now_ms(lab)
    wall.now += 5.0
    ticks_later(lab)
    assert now_ms(lab) == paused_at
    assert (
        lab.act("clock-step", {"ms": "100"}).result(10)
        == f"Stepped 100 ms: {paused_at} ms → {paused_at + 100} ms."
    )
    stepped = lab.act("clock-step", {"events": "1"}).result(10)
    assert stepped.startswith("Stepped 1 event(s):")
    with pytest.raises(IllegalState, match="the clock is already paused"):
        lab.act("clock-pause", {}).result(10)
    after_steps = now_ms(lab)
    assert lab.act("clock-resume", {}).result(10) == "Clock running at 1x."
    wall.now += 0.5
    ticks_later(lab)
    assert now_ms(lab) == after_steps + 500
    with pytest.raises(IllegalState, match="pause the clock first"):
        lab.act("clock-step", {"events": "1"}).result(10)


def test_work_a_listener_posts_runs_in_the_virtual_millisecond_it_arrives(lab: LiveLab) -> None:
    # A client's request lands at the engine's current time: it is answered at once, not after the
    # wall clock's next millisecond and the driver's next tick (up to 20 ms more for every request).
    # The wall stands still here, so virtual time cannot move on.
    ran = threading.Event()
    at: list[int] = []

    def arrive() -> None:
        cluster = lab.cluster
        cluster.scheduler.call_soon(lambda: (at.append(cluster.now_ms), ran.set()))

    before = now_ms(lab)
    lab.post(arrive)
    assert ran.wait(10), "the work due now never ran"
    assert at == [before]


def test_produce_answers_once_the_records_are_acknowledged(lab: LiveLab, wall: FakeWall) -> None:
    future = lab.act("produce", {"topic": "orders", "count": "5", "key": "k", "acks": "all"})
    while not future.done():  # acks=all needs engine time: let the wall move
        wall.now += 0.05
        ticks_later(lab, 1)
    text = future.result()
    assert text.startswith("5 of 5 record(s) acknowledged (acks=all): orders-")
    with pytest.raises(IllegalArgument, match="there is no topic 'nope'; create it first"):
        lab.act("produce", {"topic": "nope"}).result(10)
    with pytest.raises(IllegalArgument, match="count must be between 1 and 1000, not 5000"):
        lab.act("produce", {"topic": "orders", "count": "5000"}).result(10)


def test_a_frame_shows_a_change_and_only_changed_views_differ(lab: LiveLab, wall: FakeWall) -> None:
    first = lab.wait_for_frame(lambda f: plog_key("orders") in f.views)
    leader = first.views["cluster-map"].topics[0].partitions[0].leader  # type: ignore[attr-defined]
    lab.act("kill", {"broker": str(leader)}).result(10)
    killed = lab.wait_for_frame(
        lambda f: f.views["cluster-map"].brokers[leader - 1].state == "killed"  # type: ignore[attr-defined]
    )
    assert killed.seq > first.seq
    column = killed.views["cluster-map"].brokers[leader - 1]  # type: ignore[attr-defined]
    assert {a.name: a.enabled for a in column.actions if a.name in ("kill", "restart")} == {
        "kill": False,
        "restart": True,
    }


def test_frames_are_coalesced_and_unchanged_views_are_not_sent(tmp_path: Path) -> None:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    layer = InMemoryChannelLayer()
    broadcast = Broadcaster(layer=lambda: layer)
    broadcast.attach(loop)

    class Renderer:
        def fragment(self, key: str, views: object) -> str:
            return f"<{key}>"

    channel = asyncio.run_coroutine_threadsafe(layer.new_channel(), loop).result(5)
    live = LiveLab(
        spec(tmp_path, "coalesce"),
        zookeeper=None,
        renderer=Renderer(),
        broadcast=broadcast,
        quiet_tick_s=QUIET_TICK_S_HERE,
    )
    asyncio.run_coroutine_threadsafe(layer.group_add(live.group, channel), loop).result(5)
    live.start()
    try:
        live.ready.result(30)
        live.wait_for_frame(lambda f: f.views["status"].state == "running")  # type: ignore[attr-defined]
        live.subscribe()
        live.act("clock-speed", {"rate": "10"}).result(10)
        # A steady producer: something changes in every frame.
        load = ClientSpec(kind="producer", name="load", topics=("orders",), rate_per_s=50, acks="1")
        live.submit(lambda lab: lab.add_client(load)).result(10)
        frames: list[tuple[float, dict[str, object]]] = []
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and len(frames) < 12:
            message = asyncio.run_coroutine_threadsafe(layer.receive(channel), loop).result(5)
            frames.append((float(message["made_at"]), message))  # type: ignore[arg-type]
        gaps = [b[0] - a[0] for a, b in itertools.pairwise(frames)]
        assert len(frames) >= 5
        assert min(gaps) >= 0.1, gaps  # at most one frame every 100 ms
        for _, message in frames:
            assert message["type"] == "lab.frame"
            html = str(message["html"])
            assert html.endswith("<frame>")
            assert "<status>" not in html  # the lab kept running: its status view never changed
        assert [m["frame"] for _, m in frames] == sorted(m["frame"] for _, m in frames)

        # A paused clock with nothing happening sends nothing.
        live.submit(lambda lab: lab.client_op("load", "stop")).result(10)
        live.act("clock-pause", {}).result(10)
        seq = live.frame.seq
        ticks_later(live, 15)
        quiet_from = live.frame.seq
        ticks_later(live, 15)
        assert live.frame.seq == quiet_from
        assert quiet_from <= seq + 2
    finally:
        live.stop()
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


def test_reset_rebuilds_the_cluster_with_fresh_data_and_the_specs_topics(
    lab: LiveLab, wall: FakeWall
) -> None:
    lab.act("produce", {"topic": "orders", "count": "3", "key": "k", "acks": "1"})
    wall.now += 1.0
    ticks_later(lab)
    leo = lab.submit(
        lambda lab: max(
            p["logs"][str(p["leader"])]["log_end_offset"]
            for p in lab.cluster.snapshot()["topics"]["orders"]["partitions"]
        )
    ).result(10)
    assert leo == 3
    assert lab.act("clock-reset", {}).result(30) == "Lab reset: a fresh cluster with fresh data."
    snap = lab.submit(lambda lab: lab.cluster.snapshot()).result(10)
    assert [
        p["logs"][str(p["leader"])]["log_end_offset"] for p in snap["topics"]["orders"]["partitions"]
    ] == [0, 0, 0]
    assert lab.state == "running"


def test_a_topic_made_on_the_page_is_recorded_in_the_spec(lab: LiveLab, wall: FakeWall) -> None:
    asked = lab.act(
        "topic-create",
        {"name": "payments", "partitions": "2", "replication_factor": "2", "min_insync_replicas": "2"},
    )
    answer = until_done(lab, wall, asked)
    assert answer["message"] == (
        "Topic payments created: 2 partition(s), replication factor 2, min.insync.replicas=2."
    )
    assert [t.name for t in lab.spec.topics] == ["orders", "payments"]
    assert lab.spec.topics[1].config == {"min.insync.replicas": "2"}
    with pytest.raises(TopicAlreadyExists, match="Topic 'payments' already exists"):
        until_done(lab, wall, lab.act("topic-create", {"name": "payments"}))


def test_simulated_clients_are_added_stopped_and_recorded(lab: LiveLab, wall: FakeWall) -> None:
    name = lab.act("client-consumer", {"group": "billing", "topics": "orders", "name": "b1"}).result(10)
    assert name == "Simulated consumer b1 joins group billing on orders."
    assert [c.name for c in lab.spec.clients] == ["b1"]
    assert lab.act("client-crash", {"name": "b1"}).result(10) == "b1 crashed."
    assert lab.spec.clients == ()
    with pytest.raises(IllegalState, match="b1 is already crashed"):
        lab.act("client-stop", {"name": "b1"}).result(10)
    assert lab.act("client-remove", {"name": "b1"}).result(10) == "b1 removed."
    with pytest.raises(IllegalArgument, match="there is no topic 'ghost'"):
        lab.act("client-producer", {"topic": "ghost"}).result(10)


def test_a_consumer_added_on_the_page_has_the_labs_session_unless_given_one(lab: LiveLab) -> None:
    lab.act("client-consumer", {"group": "billing", "topics": "orders", "name": "b1"}).result(10)
    lab.act(
        "client-consumer",
        {"group": "billing", "topics": "orders", "name": "b2", "session_timeout_ms": "9000"},
    ).result(10)

    def sessions(lab: LiveLab) -> dict[str, tuple[int, int]]:
        return {
            name: (sim.consumer.session_timeout_ms, sim.consumer.heartbeat_interval_ms)
            for name, sim in lab.cluster.simulated.items()
        }

    # session.timeout.ms: lab 6000 (Kafka 45000), heartbeats at a third of the session.
    assert lab.submit(sessions).result(10) == {"b1": (6000, 2000), "b2": (9000, 3000)}
    assert [(c.name, c.session_timeout_ms) for c in lab.spec.clients] == [("b1", 0), ("b2", 9000)]


@pytest.mark.zookeeper
def test_on_zookeeper_a_restarted_lab_keeps_its_data_and_znodes(tmp_path: Path, zookeeper: str) -> None:
    lab_spec = spec(tmp_path, "restore")
    first = LiveLab(lab_spec, zookeeper=zookeeper).start()
    try:
        first.ready.result(60)
        assert first.state == "running", first.error
        assert first.store == "zookeeper"
        text = first.act("produce", {"topic": "orders", "count": "10", "acks": "all"}).result(30)
        assert text.startswith("10 of 10 record(s) acknowledged")
    finally:
        first.stop()

    def total(frame: object) -> int:
        log = frame.views.get(plog_key("orders"))  # type: ignore[attr-defined]
        if log is None:
            return -1
        return sum(max(r.log_end_offset for r in p.replicas) for p in log.partitions)

    again = LiveLab(lab_spec, zookeeper=zookeeper).start()
    try:
        again.ready.result(60)
        assert again.state == "running", again.error
        frame = again.wait_for_frame(lambda f: total(f) == 10 and f.views["zookeeper"].count > 0, 30)
        paths = {n.path for n in frame.views["zookeeper"].nodes}  # type: ignore[attr-defined]
        assert "/brokers/topics/orders" in paths
        assert "/controller" in paths
        assert frame.views["status"].store == "zookeeper"  # type: ignore[attr-defined]
    finally:
        again.stop()
        from lab.engine.metadata.zookeeper import ZooKeeperStore

        store = ZooKeeperStore(zookeeper, chroot=lab_spec.chroot)
        store.delete_chroot()
        store.close()


# -- ZooKeeper killed and back ---------------------------------------------------------------------


def _browse_all(lab: LiveLab, partition: int) -> list[str] | None:
    """Every value in orders-<partition>, or None while it has no leader."""
    try:
        records = lab.cluster.browse("orders", partition, limit=1000)
    except LeaderNotAvailable:
        return None
    return [r["value"] for r in records]


def test_zookeeper_killed_the_lab_answers_at_once_and_resumes_when_it_is_back(tmp_path: Path) -> None:
    held = HeldRestart()
    server = ManagedZooKeeper(tmp_path / "zookeeper", restart_backoff_s=(0.5, 2.0), report=held)
    server.start(timeout_s=60)
    live = LiveLab(spec(tmp_path, config={"zookeeper.session.timeout.ms": "6000"}), zookeeper=server.hosts)
    live.start()
    try:
        live.ready.result(60)
        assert live.state == "running", live.error
        produced = live.act("produce", {"topic": "orders", "count": "5", "key": "k", "acks": "all"}).result(
            30
        )
        assert produced.startswith("5 of 5 record(s) acknowledged (acks=all): orders-")
        partition = int(produced.split("orders-")[1].split(" ")[0])

        kill(server)  # its restart waits for held.release()
        frame = live.wait_for_frame(lambda f: bool(f.views["status"].zookeeper_outage), 10)  # type: ignore[attr-defined]
        outage = frame.views["status"].zookeeper_outage  # type: ignore[attr-defined]
        assert outage == f"ZooKeeper is not answering: the lab lost every connection to {server.hosts}"
        assert live.zookeeper_outage == outage
        # What needs ZooKeeper is refused at once, by name, and changes nothing; the driver is not held.
        for name, params in (
            ("topic-create", {"name": "later", "partitions": "1", "replication_factor": "3"}),
            ("clock-reset", {}),
        ):
            with pytest.raises(ZooKeeperNotAvailable, match="ZooKeeper is not answering"):
                live.act(name, params).result(5)
        assert live.state == "running"
        # The brokers keep serving: records are acknowledged during the outage, as in Kafka.
        during = live.act("produce", {"topic": "orders", "count": "3", "key": "k", "acks": "all"}).result(30)
        assert during.startswith(
            f"3 of 3 record(s) acknowledged (acks=all): orders-{partition} offsets 5 to 7"
        )

        held.release()
        live.wait_for_frame(lambda f: not f.views["status"].zookeeper_outage, 90)  # type: ignore[attr-defined]
        assert live.zookeeper_outage == ""
        kinds = live.submit(lambda lab: [e.kind for e in lab.cluster.events()]).result(10)
        assert kinds.index("zookeeper_unreachable") < kinds.index("zookeeper_reachable")
        created: list[str] = []

        def create() -> bool:
            try:
                created.append(
                    live.act("topic-create", {"name": "later", "replication_factor": "3"}).result(30)[
                        "message"
                    ]
                )
            except InvalidReplicationFactor:  # a broker whose session expired is registering again
                return False
            return True

        assert wait_until(create, 30)
        # Created; its leaders come as soon as the brokers that re-registered have them (on a loaded
        # machine that can take longer than the command waits, and the answer then says so).
        assert created[0].startswith("Topic later created: 3 partition(s), replication factor 3"), created
        # The snapshot is the controller's view, which takes the topic a moment after ZooKeeper has it.
        assert wait_until(
            lambda: all(
                p["leader"] is not None
                for p in live.act("snapshot", {})
                .result(10)["topics"]
                .get("later", {"partitions": [{"leader": None}]})["partitions"]
            ),
            30,
        )
        # Nothing acknowledged was lost (a broker whose session expired registers again meanwhile).
        expected = [f"record {i}" for i in range(1, 6)] + [f"record {i}" for i in range(1, 4)]
        assert wait_until(
            lambda: (
                [
                    v.split(" at ")[0]
                    for v in live.submit(lambda lab: _browse_all(lab, partition)).result(10) or []
                ]
                == expected
            ),
            30,
        )
    finally:
        live.stop()
        server.stop()


def test_a_lab_started_while_zookeeper_is_down_shows_starting_and_comes_up_when_it_is_back(
    tmp_path: Path,
) -> None:
    held = HeldRestart()
    server = ManagedZooKeeper(tmp_path / "zookeeper", restart_backoff_s=(0.5, 2.0), report=held)
    server.start(timeout_s=60)
    kill(server)  # its restart waits for held.release()
    live = LiveLab(spec(tmp_path, "later"), zookeeper=server.hosts).start()
    try:
        # The driver is not held: it publishes what the start waits for, and tries again.
        frame = live.wait_for_frame(lambda f: "tries again" in f.views["status"].note, 60)  # type: ignore[attr-defined]
        status = frame.views["status"]
        assert status.state == "starting"  # type: ignore[attr-defined]
        assert status.note.startswith(f"ZooKeeper at {server.hosts} does not answer")  # type: ignore[attr-defined]
        # A call made meanwhile waits for the brokers, and the lab says it is starting.
        early = live.submit(lambda lab: sorted(lab.cluster.topics()))
        assert live.state == "starting"
        assert not live.ready.done()
        assert not early.done()
        KillableZooKeeper(server, held).back()
        live.ready.result(90)
        assert live.state == "running", live.error
        assert early.result(30) == ["orders"]
        assert live.wait_for_frame(lambda f: f.views["status"].state == "running", 10)  # type: ignore[attr-defined]
    finally:
        live.stop()
        server.stop()


def _paths(frame: object) -> set[str]:
    return {z.path for z in frame.views["zookeeper"].nodes if not z.gone}  # type: ignore[attr-defined]


def test_a_tree_read_zookeeper_is_slow_to_answer_holds_up_no_one_else(tmp_path: Path, wall: FakeWall) -> None:
    from lab.engine.metadata.store import LinkState

    live = LiveLab(
        spec(tmp_path, "slow-tree"),
        zookeeper=None,
        wall=wall,
        tree_interval_s=0.01,
        quiet_tick_s=QUIET_TICK_S_HERE,
    ).start()
    try:
        live.ready.result(30)
        wall.now += 0.1  # reading the tree takes a few of the lab's milliseconds on the memory store
        live.wait_for_frame(lambda f: "/brokers/ids/1" in _paths(f))
        # The lab's admin client reaches ZooKeeper, but its answers are held: a slow, connected server.
        live.submit(lambda lab: lab.cluster._admin.set_link(LinkState.HELD)).result(10)
        before = now_ms(live)
        ticks_later(live, 10)  # many a tree read was due meanwhile
        assert now_ms(live) - before < 1000  # calls are answered, and the clock did not leap
        live.submit(lambda lab: lab.cluster.kill_broker(1)).result(10)
        for _ in range(8):  # its session expires: its registration goes from ZooKeeper
            wall.now += 0.5
            ticks_later(live)
        assert 4000 <= now_ms(live) - before < 6000
        assert "/brokers/ids/1" in _paths(live.frame)  # the page shows the tree it last read
        live.submit(lambda lab: lab.cluster._admin.set_link(LinkState.OPEN)).result(10)
        wall.now += 0.1
        live.wait_for_frame(lambda f: "/brokers/ids/1" not in _paths(f) and "/brokers/ids/2" in _paths(f))
    finally:
        live.stop()


def test_a_watched_lab_with_nothing_happening_sends_no_frame_until_something_changes(
    tmp_path: Path, wall: FakeWall
) -> None:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    layer = InMemoryChannelLayer()
    broadcast = Broadcaster(layer=lambda: layer)
    broadcast.attach(loop)

    class Renderer:
        def fragment(self, key: str, views: object) -> str:
            return f"<{key}>"

    def received() -> list[str]:
        async def drain() -> list[str]:
            out = []
            queue = layer.channels.get(channel)
            while queue is not None and not queue.empty():  # what is queued now, without waiting
                out.append(str((await layer.receive(channel))["html"]))
                queue = layer.channels.get(channel)
            return out

        return asyncio.run_coroutine_threadsafe(drain(), loop).result(5)

    channel = asyncio.run_coroutine_threadsafe(layer.new_channel(), loop).result(5)
    live = LiveLab(
        spec(tmp_path, "quiet"),
        zookeeper=None,
        renderer=Renderer(),
        broadcast=broadcast,
        wall=wall,
        quiet_tick_s=QUIET_TICK_S_HERE,
    )
    asyncio.run_coroutine_threadsafe(layer.group_add(live.group, channel), loop).result(5)
    live.start()
    try:
        live.ready.result(30)
        live.wait_for_frame(lambda f: plog_key("orders") in f.views)
        wall.now += 0.1  # the clock moves (the tree is read in flight, so nothing else moves it)
        live.subscribe()  # a page watches: it gets a fresh frame (its clock) once
        assert wait_until(lambda: "<clock-time>" in "".join(received()), 10)
        # Let the lab settle: the ZooKeeper tree is read in flight, and a changed tree once more.
        for _ in range(50):
            wall.now += 0.1
            ticks_later(live, 1)
        received()
        # The clock runs (the wall moves a frame's worth each time), nothing else happens.
        sent = broadcast.sent
        start = live.frame.seq
        for _ in range(30):
            wall.now += 0.1
            ticks_later(live, 1)
        assert now_ms(live) >= 3000
        assert broadcast.sent == sent
        assert received() == []
        assert live.frame.seq == start  # no frame was even built
        # Something changes: the next frame slot sends it, with the clock's time.
        live.act("kill", {"broker": "2"}).result(10)
        wall.now += 0.1
        got: list[str] = []
        assert wait_until(lambda: bool(got.extend(received()) or got), 10)
        assert "<cluster-map>" in got[0]
        assert "<clock-time>" in got[0]
    finally:
        live.stop()
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


def test_a_memory_store_lab_starts_again_in_the_same_process_and_leaves_zookeeper_runs_logs_alone(
    tmp_path: Path,
) -> None:
    """The memory store's metadata ends with the run, so the logs of that run are orphans (their topic ids
    are gone): the next run must not trip over them (INCONSISTENT_TOPIC_ID, no leader), and logs a
    ZooKeeper run left in the lab's directory must stay, for when ZooKeeper answers again."""
    the_spec = spec(tmp_path)
    zookeeper_run = Path(the_spec.data_dir) / "broker-1" / "orders-0"
    zookeeper_run.mkdir(parents=True)
    (zookeeper_run / "00000000000000000000.log").write_bytes(b"kept")
    for run in range(2):
        live = LiveLab(the_spec, zookeeper=None).start()
        try:
            live.ready.result(30)
            assert live.state == "running", (run, live.error)
            said = live.act("produce", {"topic": "orders", "count": "2"}).result(30)
            assert said.startswith("2 of 2 record(s) acknowledged"), (run, said)
        finally:
            live.stop()
    assert (zookeeper_run / "00000000000000000000.log").read_bytes() == b"kept"


def test_a_lab_that_failed_to_start_is_reset_by_its_command(lab: LiveLab) -> None:
    def fail(live: LiveLab) -> None:  # what a start that failed leaves: no cluster, and why
        live._close_cluster(delete=False)
        live._failed(RuntimeError("the brokers did not register"))

    lab.submit(fail).result(10)
    assert (lab.state, lab.error) == ("failed", "the brokers did not register")
    said = lab.act("clock-reset", {}, by="ada").result(30)
    assert said == "Lab reset: a fresh cluster with fresh data."
    assert lab.state == "running"
    assert lab.act("snapshot", {}).result(10)["topics"]["orders"]


def _driver_wait(live: LiveLab) -> float | None:
    """The timeout of the wait the driver is in between ticks (None while it is not waiting there)."""
    thread = live._thread
    assert thread is not None
    assert thread.ident is not None
    frame = sys._current_frames().get(thread.ident)
    while frame is not None:
        caller = frame.f_back
        if frame.f_code.co_name == "wait" and caller is not None and caller.f_code.co_name == "_run":
            timeout = frame.f_locals.get("timeout")
            return float(timeout) if timeout is not None else None
        frame = caller
    return None


def test_a_watched_lab_where_nothing_happens_ticks_at_most_twice_a_second(
    tmp_path: Path, wall: FakeWall
) -> None:
    live = LiveLab(spec(tmp_path, "calm"), zookeeper=None, wall=wall, tree_interval_s=3600).start()
    try:
        live.ready.result(30)
        live.subscribe()
        # The wall stands still: nothing comes due in the engine, the key stops moving, and the driver
        # waits half a second between ticks instead of a frame slot (what arrives wakes it sooner).
        assert wait_until(lambda: _driver_wait(live) == QUIET_TICK_S, 10), _driver_wait(live)
        # At 10x half a second is 5 s of Kafka's time, more than one tick may run (MAX_FRAME_MS):
        # a quiet fast clock ticks as often as it takes to keep up.
        live.act("clock-speed", {"rate": "10"}).result(10)
        fast = MAX_FRAME_MS / 2 / 1000 / 10
        assert wait_until(lambda: _driver_wait(live) == pytest.approx(fast), 10), _driver_wait(live)
        # Paused, the clock does not move at all.
        live.act("clock-pause", {}).result(10)
        assert wait_until(lambda: _driver_wait(live) == QUIET_TICK_S, 10), _driver_wait(live)
        # Something happening is not quiet: the next ticks come every tick_s until it settles.
        live.act("clock-resume", {}).result(10)
        live.act("clock-speed", {"rate": "1"}).result(10)
        future = live.act("produce", {"topic": "orders", "count": "3", "key": "k", "acks": "all"})
        assert wait_until(lambda: _driver_wait(live) == pytest.approx(live.tick_s, abs=live.tick_s), 10)
        while not future.done():
            wall.now += 0.05
            ticks_later(live, 1)
        assert future.result(10)
    finally:
        live.stop()


def test_a_snapshot_read_is_the_last_frames_and_never_older_than_an_answer(tmp_path: Path) -> None:
    live = LiveLab(spec(tmp_path, slug="reads"), zookeeper=None, publish_interval_s=1.0).start()
    try:
        live.ready.result(30)
        seq = live.frame.seq
        live.wake("a test")  # a frame now, with the lab as it stands
        live.wait_for_frame(lambda f: f.seq > seq)
        # The driver is busy with something long: a read does not wait behind it.
        running, release = threading.Event(), threading.Event()

        def hold(lab: LiveLab) -> str:
            running.set()
            release.wait(10)
            return "held"

        held = live.submit(hold)
        assert running.wait(10)
        read = live.act("snapshot", {})
        assert read.done()
        assert [b["state"] for b in read.result()["brokers"]] == ["alive", "alive", "alive"]
        release.set()
        assert held.result(10) == "held"
        # A read after an answer has what the answer said, never the lab from before it.
        live.act("kill", {"broker": "2"}).result(10)
        states = [b["state"] for b in live.act("snapshot", {}).result(10)["brokers"]]
        assert states[1] != "alive"
        assert states[0] == "alive"
    finally:
        live.stop()


def test_acls_and_users_a_kafka_client_made_are_kept_as_the_pages_are(tmp_path: Path) -> None:
    """CreateAcls, DeleteAcls and AlterUserScramCredentials over the wire go into the lab's spec (and its
    saver hears of it), so a reset, a memory-store restart or another worker brings them back."""
    from tests.walltime import advance, still_lab
    from tests.wire.harness import WireClient
    from tests.wire.test_acls import ALLOW, LITERAL, TOPIC, WRITE, creation, everything
    from tests.wire.test_users import SHA256, upsertion

    saved: list[int] = []
    live, wall = still_lab(
        tmp_path,
        "wire-kept",
        config={
            **FAST,
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": "User:admin;User:broker;User:ANONYMOUS",
        },
    )
    live.on_spec_change = lambda lab: saved.append(len(lab.spec.acls) + len(lab.spec.users))

    def ask(api_key: int, body: dict, *, controller: bool = False) -> object:
        def send(lab: LiveLab) -> WireClient:
            broker = lab.cluster.controller_id() if controller else 1
            client = WireClient(lab.cluster, broker, server=lab.wire)
            client.send(api_key, {30: 3, 31: 3, 51: 0}[api_key], body)
            return client

        client = live.submit(send).result(10)
        while not client.sent:
            advance(live, wall, 0.5)
        return live.submit(lambda _: client.answer(api_key, {30: 3, 31: 3, 51: 0}[api_key])).result(10)

    try:
        alice = dict(ALICE_WRITES_ORDERS)
        made = ask(
            30,
            {
                "creations": [
                    creation(TOPIC, "orders", "User:alice", WRITE, pattern=LITERAL, permission=ALLOW)
                ]
            },
        )
        assert made.results[0].error_code == 0  # type: ignore[attr-defined]
        upserted = ask(51, {"deletions": [], "upsertions": [upsertion("alice", "s3cret")]}, controller=True)
        assert upserted.results[0].error_code == 0  # type: ignore[attr-defined]
        assert live.spec.acls == (alice,)
        assert set(live.spec.users) == {"alice"}
        assert set(live.spec.users["alice"]) == {"SCRAM-SHA-256"}
        assert saved == [1, 2]

        until_done(live, wall, live.act("clock-reset", {}))
        advance(live, wall, 1.0)  # the spec's ACLs are written as the lab starts
        listed = until_done(live, wall, live.act("acls", {}))
        assert [a["text"] for a in listed["acls"]] == ["ALLOW User:alice Write from * on Topic:orders"]
        users = until_done(live, wall, live.act("users", {}))
        assert [u["user"] for u in users["users"]] == ["alice"]

        gone = ask(31, {"filters": [everything(principal_filter="User:alice")]})
        assert len(gone.filter_results[0].matching_acls) == 1  # type: ignore[attr-defined]
        ask(51, {"deletions": [{"name": "alice", "mechanism": SHA256}], "upsertions": []}, controller=True)
        assert live.spec.acls == ()
        assert live.spec.users == {}
    finally:
        live.stop()


def test_a_lab_whose_records_flow_reads_the_zookeeper_tree_again_only_when_zookeeper_changed(
    tmp_path: Path, wall: FakeWall
) -> None:
    """Reading the tree reads every znode: a class of busy labs did it every second each, for records,
    which ZooKeeper never holds. The page's tree still follows a broker that goes."""
    producer = ClientSpec(kind="producer", name="orders-app", topics=("orders",), rate_per_s=20)
    live = LiveLab(
        spec(tmp_path, "busy-tree", clients=(producer,)), zookeeper=None, wall=wall, tree_interval_s=0.01
    ).start()
    reads: list[int] = []

    def count_reads(lab: LiveLab) -> None:
        cluster = lab.cluster
        read = cluster.begin_zookeeper_tree
        cluster.begin_zookeeper_tree = lambda root="/": reads.append(1) or read(root)  # type: ignore[method-assign]

    try:
        live.ready.result(30)
        live.subscribe()
        for _ in range(30):  # the lab settles: the tree read, and once more after it changed
            wall.now += 0.1
            ticks_later(live, 1)
        live.submit(count_reads).result(10)
        offsets = live.act("snapshot", {}).result(10)["topics"]["orders"]
        for _ in range(40):  # 4 s of records, a tree read due at every tick
            wall.now += 0.1
            ticks_later(live, 1)
        moved = live.act("snapshot", {}).result(10)["topics"]["orders"]
        assert moved != offsets  # records were written meanwhile
        assert reads == []
        live.act("kill", {"broker": "1"}).result(10)
        for _ in range(8):  # its session expires: its registration goes from ZooKeeper
            wall.now += 0.5
            ticks_later(live, 1)
        live.wait_for_frame(lambda f: "/brokers/ids/1" not in _paths(f) and "/brokers/ids/2" in _paths(f))
        assert reads
    finally:
        live.stop()


def test_topics_a_kafka_client_made_or_changed_are_kept_as_the_pages_are(tmp_path: Path) -> None:
    """CreateTopics, a Metadata request's auto-creation, CreatePartitions, IncrementalAlterConfigs and
    DeleteTopics over the wire go into the lab's spec (and its saver hears of it): a reset, a memory-store
    restart or another worker brings the topics back as the client left them."""
    from tests.walltime import advance, still_lab
    from tests.wire.harness import WireClient
    from tests.wire.test_admin import (
        CREATE_PARTITIONS,
        CREATE_TOPICS,
        DELETE_TOPICS,
        INCREMENTAL_ALTER,
        new_topic,
    )
    from tests.wire.test_admin import TOPIC as TOPIC_RESOURCE

    saved: list[tuple[str, ...]] = []
    live, wall = still_lab(tmp_path, "wire-topics", topics=())
    live.on_spec_change = lambda lab: saved.append(tuple(t.name for t in lab.spec.topics))
    versions = {3: 9, CREATE_TOPICS: 7, DELETE_TOPICS: 5, CREATE_PARTITIONS: 3, INCREMENTAL_ALTER: 1}

    def ask(api_key: int, body: dict) -> Any:
        def send(lab: LiveLab) -> WireClient:
            client = WireClient(lab.cluster, lab.cluster.controller_id(), server=lab.wire)
            client.send(api_key, versions[api_key], body)
            return client

        client = live.submit(send).result(10)
        while not client.sent:
            advance(live, wall, 0.5)
        return live.submit(lambda _: client.answer(api_key, versions[api_key])).result(10)

    def kept() -> dict[str, tuple[int, int, dict[str, str]]]:
        return {t.name: (t.partitions, t.replication_factor, dict(t.config)) for t in live.spec.topics}

    try:
        made = ask(
            CREATE_TOPICS, {"topics": [new_topic("orders", 2, 2, retention_ms="60000")], "timeout": 10_000}
        )
        assert made.topics[0].error_code == 0
        auto = ask(
            3,
            {
                "topics": [{"name": "clicks"}],
                "allow_auto_topic_creation": True,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False,
            },
        )
        assert auto.topics[0].error_code == 5  # LEADER_NOT_AVAILABLE: being made, as Kafka answers
        grown = ask(
            CREATE_PARTITIONS,
            {
                "topics": [{"name": "orders", "count": 4, "assignments": None}],
                "timeout": 10_000,
                "validate_only": False,
            },
        )
        assert grown.results[0].error_code == 0
        altered = ask(
            INCREMENTAL_ALTER,
            {
                "resources": [
                    {
                        "resource_type": TOPIC_RESOURCE,
                        "resource_name": "orders",
                        "configs": [
                            {"name": "min.insync.replicas", "config_operation": 0, "value": "2"},
                            {"name": "retention.ms", "config_operation": 1, "value": None},
                        ],
                    }
                ],
                "validate_only": False,
            },
        )
        assert altered.responses[0].error_code == 0
        assert kept() == {"orders": (4, 2, {"min.insync.replicas": "2"}), "clicks": (1, 1, {})}
        assert saved[-1] == ("orders", "clicks")

        until_done(live, wall, live.act("clock-reset", {}))
        shapes = live.submit(
            lambda lab: {
                name: (lab.cluster.partition_count(name), lab.cluster.topic_config(name))
                for name in lab.cluster.topics()
                if not name.startswith("__")
            }
        ).result(10)
        assert shapes == {"orders": (4, {"min.insync.replicas": "2"}), "clicks": (1, {})}

        gone = ask(DELETE_TOPICS, {"topic_names": ["clicks"], "timeout": 30_000})
        assert gone.responses[0].error_code == 0
        assert kept() == {"orders": (4, 2, {"min.insync.replicas": "2"})}
        assert saved[-1] == ("orders",)
    finally:
        live.stop()
