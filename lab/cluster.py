"""A Kafka-compatible cluster of the lab's brokers, served on consecutive ports, without Django.

    python -m lab.cluster --brokers 3 --port 9092 [--zookeeper HOSTS] [--data-dir DIR]

prints ``bootstrap.servers=127.0.0.1:9092,...`` once every broker accepts connections, and
stops cleanly on Ctrl-C or SIGTERM. Without ``--zookeeper`` the metadata lives in memory (the
engine's own ZooKeeper model, in virtual time following the wall clock).
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.engine.endpoints import format_address
from lab.engine.errors import KafkaError
from lab.runtime.commands.users import credentials, upsert_args
from lab.runtime.live import Listen, LiveLab
from lab.runtime.spec import SECURED, LabSpec, TopicSpec


class ClusterHandle:
    """The engine's ``Cluster`` API from any thread: each call runs on the lab's driver thread
    (the engine is not thread-safe) and returns its result, or raises its Kafka error.

        served.cluster.kill_broker(1)
        served.cluster.partition_state("orders", 0)
    """

    def __init__(self, lab: LiveLab, timeout_s: float = 60.0) -> None:
        self._lab = lab
        self._timeout_s = timeout_s

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._lab.submit(lambda lab: getattr(lab.cluster, name)(*args, **kwargs)).result(
                self._timeout_s
            )

        call.__name__ = name
        return call


@dataclass(frozen=True, slots=True)
class ServedCluster:
    """A running cluster: where clients connect, and a handle on the engine for faults."""

    bootstrap_servers: str
    lab: LiveLab

    def bootstrap(self, protocol: str = "PLAINTEXT") -> str:
        """``bootstrap.servers`` of the listener with Kafka's security protocol ``protocol``."""
        assert self.lab.listeners is not None
        return self.lab.listeners.bootstrap_for(protocol)

    @property
    def ca_file(self) -> str:
        """The lab's CA certificate (PEM), which clients of the SSL listeners verify the brokers with."""
        self.lab.lab_tls.ca_pem()
        return str(self.lab.lab_tls.ca_file)

    @property
    def cluster(self) -> ClusterHandle:
        return ClusterHandle(self.lab)

    @property
    def brokers(self) -> dict[int, str]:
        """Each broker's ``host:port``."""
        assert self.lab.listeners is not None
        return {
            s.broker_id: format_address(s.host, s.port)
            for s in self.lab.listeners.states()
            if s.protocol == "PLAINTEXT"
        }


def free_ports(count: int, host: str = "127.0.0.1", *, start: int = 20_000, stop: int = 60_000) -> int:
    """The first of ``count`` consecutive ports that nobody listens on now."""
    import random
    import socket

    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(start, stop - count)
        sockets = []
        try:
            for port in range(base, base + count):
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sockets.append(sock)
                sock.bind((host, port))
            return base
        except OSError:
            continue
        finally:
            for sock in sockets:
                sock.close()
    raise OSError(f"no {count} consecutive free ports on {host}")


def parse_topic(text: str) -> TopicSpec:
    """``name[:partitions[:replication_factor]]``."""
    name, *rest = text.split(":")
    try:
        numbers = [int(x) for x in rest]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--topic {text!r}: use name[:partitions[:replication_factor]]"
        ) from None
    if not name or len(numbers) > 2:
        raise argparse.ArgumentTypeError(f"--topic {text!r}: use name[:partitions[:replication_factor]]")
    partitions = numbers[0] if numbers else 1
    rf = numbers[1] if len(numbers) > 1 else 1
    return TopicSpec(name=name, partitions=partitions, replication_factor=rf)


def parse_user(text: str) -> tuple[str, str]:
    """``name:password``."""
    name, sep, password = text.partition(":")
    if not name or not sep or not password:
        raise argparse.ArgumentTypeError(f"--user {text!r}: use name:password")
    return name, password


@contextlib.contextmanager
def serve(
    *,
    brokers: int = 3,
    port: int,
    zookeeper: str | None = None,
    data_dir: Path | None = None,
    host: str = "127.0.0.1",
    advertised_host: str | None = None,
    topics: Sequence[TopicSpec] = (),
    config: dict[str, str] | None = None,
    listeners: Sequence[str] = (),
    users: Mapping[str, str] | None = None,
    timeout_s: float = 30.0,
) -> Iterator[ServedCluster]:
    """Serve a cluster until the block ends. ``listeners``: security protocols beside PLAINTEXT
    (SASL_PLAINTEXT, SSL, SASL_SSL), each on the ports after the last one's; ``users``: name to
    password, given SCRAM-SHA-256 and SCRAM-SHA-512 credentials (what SASL checks)."""
    with contextlib.ExitStack() as stack:
        if data_dir is None:
            data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kafka-lab-")))
        data_dir.mkdir(parents=True, exist_ok=True)
        spec = LabSpec(
            slug="cluster",
            name="cluster",
            data_dir=str(data_dir),
            chroot=f"/kafka-lab/standalone/{uuid.uuid4().hex[:12]}",
            brokers=brokers,
            config=dict(config or {}),
            topics=tuple(topics),
            ports={b: port + b - 1 for b in range(1, brokers + 1)},
            listeners={
                protocol: {b: port + n * brokers + b - 1 for b in range(1, brokers + 1)}
                for n, protocol in enumerate(listeners, start=1)
            },
        )
        listen = Listen(bind_host=host, advertised_host=advertised_host or host)
        # A standalone cluster keeps Kafka's time whether or not a client is connected: it never sleeps.
        lab = LiveLab(spec, zookeeper=zookeeper, listen=listen, publish_interval_s=1.0, sleep_after_s=None)
        lab.start()
        stack.callback(lab.stop)
        lab.ready.result(timeout_s)
        if lab.state != "running":
            raise KafkaError(f"the cluster did not start: {lab.error}")
        for user, password in (users or {}).items():
            for credential in credentials(password):
                lab.act("user-upsert", upsert_args(user, credential)).result(timeout_s)
        deadline = time.monotonic() + timeout_s
        while True:
            states = lab.listeners.states() if lab.listeners is not None else []
            failed = [s.error for s in states if s.error]
            if failed:
                raise OSError("; ".join(failed))
            if states and all(s.open for s in states):
                break
            if time.monotonic() > deadline:
                raise TimeoutError("the brokers' listeners did not open in time")
            time.sleep(0.01)
        assert lab.listeners is not None
        yield ServedCluster(bootstrap_servers=lab.listeners.bootstrap_servers, lab=lab)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.cluster", description=__doc__.split("\n\n")[0])
    parser.add_argument("--brokers", type=int, default=3, help="how many brokers (default 3)")
    parser.add_argument("--port", type=int, default=9092, help="the first broker's port; the others follow")
    parser.add_argument("--zookeeper", help="host:port,... of a ZooKeeper (default: metadata in memory)")
    parser.add_argument(
        "--data-dir", type=Path, help="where the brokers' logs go (default: a temporary directory)"
    )
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    parser.add_argument("--advertised-host", help="the host clients are told to connect to (default: --host)")
    parser.add_argument(
        "--topic",
        action="append",
        type=parse_topic,
        default=[],
        metavar="NAME[:PARTITIONS[:RF]]",
        help="a topic to create at start (repeatable)",
    )
    parser.add_argument(
        "--listener",
        action="append",
        choices=SECURED,
        default=[],
        help="a listener beside PLAINTEXT, on the ports after the last one's (repeatable)",
    )
    parser.add_argument(
        "--user",
        action="append",
        type=parse_user,
        default=[],
        metavar="NAME:PASSWORD",
        help="a user with SCRAM-SHA-256/512 credentials, for the SASL listeners (repeatable)",
    )
    args = parser.parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        with serve(
            brokers=args.brokers,
            port=args.port,
            zookeeper=args.zookeeper,
            data_dir=args.data_dir,
            host=args.host,
            advertised_host=args.advertised_host,
            topics=args.topic,
            listeners=args.listener,
            users=dict(args.user),
        ) as served:
            print(f"bootstrap.servers={served.bootstrap_servers}", flush=True)
            for protocol in args.listener:
                print(f"{protocol}: bootstrap.servers={served.bootstrap(protocol)}", flush=True)
            if any(p.endswith("SSL") for p in args.listener):
                print(f"ssl.ca.location={served.ca_file}", flush=True)
            stop.wait()
    except (KafkaError, OSError, TimeoutError) as error:
        print(f"python -m lab.cluster: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
