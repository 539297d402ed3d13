"""Engine-shaped snapshots for view-model tests: small, explicit, and in the engine's own keys."""

from __future__ import annotations

from typing import Any


def log(
    lso: int, hw: int, leo: int, *, epoch: int = 0, online: bool = True, role: str = "follower"
) -> dict[str, Any]:
    return {
        "log_start_offset": lso,
        "high_watermark": hw,
        "log_end_offset": leo,
        "leader_epoch": epoch,
        "online": online,
        "role": role,
    }


def partition(
    p: int,
    replicas: list[int],
    *,
    leader: int,
    isr: list[int],
    logs: dict[int, dict[str, Any]],
    epoch: int = 0,
) -> dict[str, Any]:
    live_leader = leader >= 0 and logs.get(leader, {}).get("online", True)
    return {
        "partition": p,
        "replicas": replicas,
        "leader": leader,
        "leader_epoch": epoch,
        "isr": isr,
        "offline": not live_leader,
        "under_replicated": len(isr) < len(replicas),
        "logs": {str(b): v for b, v in logs.items()},
    }


def broker(bid: int, state: str = "alive", *, controller: bool = False, **kw: Any) -> dict[str, Any]:
    return {
        "id": bid,
        "state": state,
        "controller": controller,
        "isolated_from": kw.get("isolated_from", []),
        "slow_ms": kw.get("slow_ms", 0),
        "session": kw.get("session", "connected" if state not in ("killed", "stopped") else "closed"),
        "broker_epoch": kw.get("broker_epoch", 100 + bid),
        "backlog": 0,
    }


def three_brokers(**overrides: Any) -> dict[str, Any]:
    """Three brokers, topic orders with 3 partitions placed by (i + j) % 3, all in sync at offset 5."""
    parts = []
    for i in range(3):
        replicas = [(i + j) % 3 + 1 for j in range(3)]
        leader = replicas[0]
        parts.append(
            partition(
                i,
                replicas,
                leader=leader,
                isr=replicas,
                logs={b: log(0, 5, 5, role="leader" if b == leader else "follower") for b in replicas},
            )
        )
    snap: dict[str, Any] = {
        "name": "lab",
        "time_ms": 1200,
        "store": "memory",
        "controller": 1,
        "controller_epoch": 1,
        "brokers": [broker(1, controller=True), broker(2), broker(3)],
        "topics": {"orders": {"config": {}, "partitions": parts}},
        "groups": {},
        "clients": [],
        "in_flight": [],
        "journal_seq": 10,
    }
    snap.update(overrides)
    return snap
