"""The client side of ``lab.bench wire``, run in a child process as an application would be.

    python -m lab.bench._wire_clients NAME JSON_KWARGS

prints ``NAME(**kwargs)``'s answer as one JSON line. Only the standard library and the clients
are imported here, so the child starts in a second, not in the lab's import time.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

TOPIC = "bench"
WARMUP_TOPIC = "warmup"  # metadata and connections first, so the bench topic holds only the run
RECORD_BYTES = 100
VALUE = bytes(range(RECORD_BYTES))


def _producer(bootstrap: str, config: dict[str, Any] | None = None) -> Any:
    from confluent_kafka import Producer

    return Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "log_level": 3, **(config or {})}
    )


def produce_confluent(bootstrap: str, records: int, config: dict[str, Any] | None = None) -> dict[str, Any]:
    """Send ``records`` and wait for every acknowledgement. No callback per record: a Python call
    per delivery report would make the client, not the lab, what is measured; the lab checks
    afterwards that every record is in its logs. ``config``: more of the producer's settings (a
    secured listener's security.protocol, SASL and TLS settings)."""
    producer = _producer(bootstrap, config)
    for i in range(99):  # a connection to each partition's leader
        producer.produce(WARMUP_TOPIC, VALUE, partition=i % 3)
    if producer.flush(30):
        raise RuntimeError("the warm-up records were not acknowledged within 30 s")
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(records):
        while True:
            try:
                producer.produce(TOPIC, VALUE)
                break
            except BufferError:  # librdkafka's queue is full: let it drain a little
                producer.poll(0.001)
    left = producer.flush(120)
    elapsed = time.perf_counter() - start
    return {"elapsed_s": elapsed, "cpu_s": time.process_time() - cpu, "undelivered": left}


def round_trips_confluent(bootstrap: str, samples: int) -> dict[str, Any]:
    producer = _producer(bootstrap)
    latencies = []
    for i in range(samples + 20):
        start = time.perf_counter()
        producer.produce(TOPIC, VALUE)
        if producer.flush(10) != 0:
            raise RuntimeError("a record was not acknowledged within 10 s")
        if i >= 20:  # warm-up first
            latencies.append((time.perf_counter() - start) * 1000)
    return {"latencies_ms": latencies}


def group_kafka_python(
    bootstrap: str, ends: dict[str, int], members: int, timeout_s: float
) -> dict[str, Any]:
    from kafka import KafkaConsumer

    ends_of = {int(p): end for p, end in ends.items()}  # JSON keys are strings
    lock = threading.Lock()
    positions = dict.fromkeys(ends_of, 0)
    done = threading.Event()
    read = [0]
    first: list[float] = []

    threads: list[threading.Thread] = []

    def run_member() -> None:
        consumer = KafkaConsumer(
            TOPIC,
            bootstrap_servers=bootstrap,
            group_id="bench",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        try:
            while not done.is_set():
                for tp, records in consumer.poll(timeout_ms=100).items():
                    for record in records:
                        _ = record.value
                    with lock:
                        if not first:
                            first.append(time.perf_counter())
                        read[0] += len(records)
                        positions[tp.partition] = max(positions[tp.partition], records[-1].offset + 1)
                        if all(positions[p] >= end for p, end in ends_of.items()):
                            done.set()
        finally:
            consumer.close()

    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(members):
        thread = threading.Thread(target=run_member, daemon=True)
        thread.start()
        threads.append(thread)
    finished = done.wait(timeout_s)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    done.set()
    for thread in threads:
        thread.join(30)
    if not finished:
        raise RuntimeError(f"the group read {positions} of {ends_of} in {timeout_s} s")
    return {"elapsed_s": elapsed, "cpu_s": cpu, "read": read[0], "first_record_s": first[0] - start}


def round_trips_echo(port: int, samples: int) -> dict[str, Any]:
    latencies = []
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(samples + 20):
            start = time.perf_counter()
            sock.sendall(VALUE)
            got = 0
            while got < len(VALUE):
                chunk = sock.recv(len(VALUE) - got)
                if not chunk:
                    raise RuntimeError("the echo server closed the connection")
                got += len(chunk)
            if i >= 20:
                latencies.append((time.perf_counter() - start) * 1000)
    return {"latencies_ms": latencies}


CLIENTS: dict[str, Callable[..., dict[str, Any]]] = {
    "produce_confluent": produce_confluent,
    "round_trips_confluent": round_trips_confluent,
    "group_kafka_python": group_kafka_python,
    "round_trips_echo": round_trips_echo,
}

if __name__ == "__main__":
    print(json.dumps(CLIENTS[sys.argv[1]](**json.loads(sys.argv[2]))), flush=True)
